// Package secrets reads the credentials of model providers from AWS Secrets
// Manager: the only code that speaks to it. A secret named NAME lives at
// {prefix}NAME, the prefix being "{stack name}/providers/", the only secrets
// the functions may read (template.yaml's ProviderSecretsRead policy). Its
// value is a JSON object {"token", "webhook_secret", "webhook_token"}, each
// member optional.
//
// A value is read at first use and kept for the life of the process (one
// Lambda execution environment): a rotated secret reaches a function when
// its environment is replaced. Values never appear in errors or logs:
// [Secret] prints itself redacted.
package secrets

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"

	"genjobs/internal/awsclient"
)

// PrefixEnv names the environment variable holding the prefix:
// template.yaml sets it to "${AWS::StackName}/providers/".
const PrefixEnv = "PROVIDER_SECRETS_PREFIX"

// ErrNotFound is returned when there is no secret by that name.
var ErrNotFound = errors.New("secrets: no such secret")

// Secret is a provider's credentials.
type Secret struct {
	// Token authenticates our calls to the provider (Replicate's API token).
	Token string `json:"token"`
	// WebhookSecret verifies the provider's signed callbacks (Standard
	// Webhooks' "whsec_..." key).
	WebhookSecret string `json:"webhook_secret"`
	// WebhookToken is the bearer token a Cog server's callbacks carry.
	WebhookToken string `json:"webhook_token"`
}

const redacted = "secrets.Secret{REDACTED}"

// String keeps a Secret printed by mistake (%v, %+v) from showing its values.
func (Secret) String() string { return redacted }

// GoString does the same for %#v.
func (Secret) GoString() string { return redacted }

// LogValue does the same for log/slog.
func (Secret) LogValue() slog.Value { return slog.StringValue(redacted) }

// Store reads and caches the secrets under one prefix.
type Store struct {
	client *secretsmanager.Client
	prefix string

	mu    sync.Mutex
	cache map[string]*cached[Secret]
}

// cached is one secret's value, read at first use and kept; a failed read
// is tried again at the next use. Its mutex makes concurrent first readers
// share one request.
type cached[T any] struct {
	mu     sync.Mutex
	loaded bool
	value  T
}

func (c *cached[T]) get(read func() (T, error)) (T, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.loaded {
		return c.value, nil
	}
	v, err := read()
	if err != nil {
		var zero T
		return zero, err
	}
	c.value, c.loaded = v, true
	return v, nil
}

// New returns the store of the secrets named prefix+name. It does no I/O.
func New(client *secretsmanager.Client, prefix string) *Store {
	return &Store{client: client, prefix: prefix, cache: map[string]*cached[Secret]{}}
}

// NewClient builds a Secrets Manager client from cfg that retries, times out
// and marks outages as policy p says (awsclient), like the service's other
// clients, at the endpoint cfg names for it (awsclient.Policy.Config). It does
// no I/O.
func NewClient(cfg aws.Config, p awsclient.Policy, optFns ...func(*secretsmanager.Options)) *secretsmanager.Client {
	return secretsmanager.NewFromConfig(p.Config(cfg, secretsmanager.ServiceID), optFns...)
}

// Client derives from c (a local runner's client) a client that follows p.
func Client(c *secretsmanager.Client, p awsclient.Policy) *secretsmanager.Client {
	return secretsmanager.New(c.Options(), Options(p))
}

// Options makes a Secrets Manager client follow p.
func Options(p awsclient.Policy) func(*secretsmanager.Options) {
	return func(o *secretsmanager.Options) {
		o.Retryer, o.RetryMaxAttempts = p.Retryer(), 0
		o.HTTPClient = p.HTTPClient(o.HTTPClient)
		o.APIOptions = p.APIOptions(o.APIOptions)
	}
}

// Get returns the secret called name, reading it on first use. A secret
// that does not exist is ErrNotFound, and is looked for again on the next
// call (it may be created meanwhile); so is any failed read. An outage is
// marked as awsclient marks it (fault.Unavailable).
func (s *Store) Get(ctx context.Context, name string) (Secret, error) {
	if err := ValidName(name); err != nil {
		return Secret{}, err
	}
	s.mu.Lock()
	e := s.cache[name]
	if e == nil {
		e = &cached[Secret]{}
		s.cache[name] = e
	}
	s.mu.Unlock()
	return e.get(func() (Secret, error) {
		id := s.prefix + name
		value, err := readString(ctx, s.client, id)
		if err != nil {
			return Secret{}, err
		}
		if value == nil {
			return Secret{}, fmt.Errorf("secrets: %s holds binary data, not a JSON object of strings", id)
		}
		return Parse(id, []byte(*value))
	})
}

// readString reads the secret id's string value: nil when it holds binary
// data. Errors name the secret, never a value.
func readString(ctx context.Context, client *secretsmanager.Client, id string) (*string, error) {
	out, err := client.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(id)})
	var nf *types.ResourceNotFoundException
	if errors.As(err, &nf) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err != nil {
		return nil, fmt.Errorf("secrets: read %s: %w", id, err)
	}
	return out.SecretString, nil
}

// Parse reads a secret's JSON value. Errors name the secret and the member
// at fault, never a value: json's own messages can quote the input.
func Parse(id string, value []byte) (Secret, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(value, &raw); err != nil || raw == nil {
		return Secret{}, fmt.Errorf("secrets: %s is not a JSON object", id)
	}
	var sec Secret
	fields := map[string]*string{"token": &sec.Token, "webhook_secret": &sec.WebhookSecret, "webhook_token": &sec.WebhookToken}
	for k, v := range raw {
		to, ok := fields[k]
		if !ok {
			return Secret{}, fmt.Errorf("secrets: %s has the unknown member %q (token, webhook_secret and webhook_token are known)", id, k)
		}
		if err := json.Unmarshal(v, to); err != nil {
			return Secret{}, fmt.Errorf("secrets: %s: %q must be a string", id, k)
		}
	}
	return sec, nil
}

// ValidName reports whether name can be the last part of a secret's name:
// 1 to 256 of the characters Secrets Manager allows in names
// (letters, digits and /_+=.@-), not starting with '/'.
func ValidName(name string) error {
	if name == "" || len(name) > 256 {
		return fmt.Errorf("secrets: a secret's name must have 1 to 256 characters, not %d", len(name))
	}
	if name[0] == '/' {
		return fmt.Errorf("secrets: the secret name %q must not start with '/'", name)
	}
	for _, c := range []byte(name) {
		ok := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
		switch c {
		case '/', '_', '+', '=', '.', '@', '-':
			ok = true
		}
		if !ok {
			return fmt.Errorf("secrets: the secret name %q may hold only letters, digits and /_+=.@-", name)
		}
	}
	return nil
}
