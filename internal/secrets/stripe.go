package secrets

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"genjobs/internal/awsclient"
)

// StripeKeys are the console's Stripe credentials: the secret `{stack
// name}/stripe` = {"secret_key", "webhook_secret"}.
type StripeKeys struct {
	SecretKey     string `json:"secret_key"`     // sk_live_... / sk_test_...: creates Checkout Sessions
	WebhookSecret string `json:"webhook_secret"` // whsec_...: verifies POST /webhooks/stripe
}

const redactedStripe = "secrets.StripeKeys{REDACTED}"

func (StripeKeys) String() string       { return redactedStripe }
func (StripeKeys) GoString() string     { return redactedStripe }
func (StripeKeys) LogValue() slog.Value { return slog.StringValue(redactedStripe) }

// Stripe reads the Stripe keys at first use and keeps them for the life of
// the process; a failed read is tried again at the next use.
type Stripe struct {
	client func() *secretsmanager.Client
	id     string
	keys   cached[StripeKeys]
}

// NewStripe reads the secret named id through the client client returns
// (called at each read: StripeFrom's builds it once). It does no I/O.
func NewStripe(client func() *secretsmanager.Client, id string) *Stripe {
	return &Stripe{client: client, id: id}
}

// StripeFrom is NewStripe on a client of cfg that follows p, built by the
// first read: a start that serves no checkout (the console's) or no signed
// webhook does not build it. It does no I/O.
func StripeFrom(cfg aws.Config, p awsclient.Policy, id string) *Stripe {
	return NewStripe(sync.OnceValue(func() *secretsmanager.Client { return NewClient(cfg, p) }), id)
}

// Keys returns the keys. Errors name the secret, never a value.
func (s *Stripe) Keys(ctx context.Context) (StripeKeys, error) {
	return s.keys.get(func() (StripeKeys, error) {
		value, err := readString(ctx, s.client(), s.id)
		if err != nil {
			return StripeKeys{}, err
		}
		return ParseStripe(s.id, []byte(aws.ToString(value)))
	})
}

// ParseStripe reads the secret's JSON value; both members are required.
func ParseStripe(id string, value []byte) (StripeKeys, error) {
	var k StripeKeys
	dec := json.NewDecoder(bytes.NewReader(value))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&k); err != nil {
		return StripeKeys{}, fmt.Errorf(`secrets: %s must be a JSON object {"secret_key", "webhook_secret"} of strings`, id)
	}
	if k.SecretKey == "" || k.WebhookSecret == "" {
		return StripeKeys{}, fmt.Errorf("secrets: %s needs both secret_key and webhook_secret", id)
	}
	return k, nil
}
