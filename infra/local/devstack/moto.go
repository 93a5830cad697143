package devstack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	kmstypes "github.com/aws/aws-sdk-go-v2/service/kms/types"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	smtypes "github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"

	"genjobs/internal/emulator"
	"genjobs/internal/secrets"
)

// ProviderSecretsFileEnv names the file of provider secrets `make run`
// loads into moto's Secrets Manager.
const ProviderSecretsFileEnv = "PROVIDER_SECRETS_FILE"

// ProviderSecrets are the secrets of a PROVIDER_SECRETS_FILE by name, each
// value the JSON object as the file gives it.
type ProviderSecrets map[string]json.RawMessage

// ReadProviderSecrets reads and checks a secrets file:
//
//	{"<name>": {"token": "...", "webhook_secret": "...", "webhook_token": "..."}, ...}
//
// Errors name the file, the entry and the problem, never a value.
func ReadProviderSecrets(path string) (ProviderSecrets, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ProviderSecretsFileEnv, err)
	}
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%s %s: %s", ProviderSecretsFileEnv, path, fmt.Sprintf(format, a...))
	}
	var all ProviderSecrets
	if err := json.Unmarshal(data, &all); err != nil {
		// json's messages can quote the input: give the place only.
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) {
			line := 1 + bytes.Count(data[:min(int(syntax.Offset), len(data))], []byte("\n"))
			return nil, bad("not valid JSON (line %d, byte %d)", line, syntax.Offset)
		}
		return nil, bad(`must be a JSON object of secrets by name: {"<name>": {"token": ...}}`)
	}
	if all == nil {
		return nil, bad(`must be a JSON object of secrets by name: {"<name>": {"token": ...}}`)
	}
	for _, name := range all.Names() {
		if err := secrets.ValidName(name); err != nil {
			return nil, bad("%v", err)
		}
		if _, err := secrets.Parse(fmt.Sprintf("entry %q", name), all[name]); err != nil {
			return nil, bad("%v", err)
		}
	}
	return all, nil
}

// Names are the secrets' names, sorted.
func (p ProviderSecrets) Names() []string {
	names := make([]string, 0, len(p))
	for name := range p {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// SecretsPrefix is where the functions look for provider secrets: the
// template's "${AWS::StackName}/providers/", the table's name standing for
// the stack's locally.
func (s *Stack) SecretsPrefix() string { return s.Table + "/providers/" }

// LoadSecrets writes s.Secrets into Secrets Manager under SecretsPrefix,
// creating each secret or giving it the file's value. It runs at start and
// after moto restarts (its state is in memory only).
func (s *Stack) LoadSecrets(ctx context.Context) error {
	if len(s.Secrets) == 0 {
		return nil
	}
	if s.SecretsManager == nil {
		return errors.New("devstack: provider secrets to load but no Secrets Manager client")
	}
	for _, name := range s.Secrets.Names() {
		id := aws.String(s.SecretsPrefix() + name)
		value := aws.String(string(s.Secrets[name]))
		_, err := s.SecretsManager.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: id, SecretString: value})
		var exists *smtypes.ResourceExistsException
		if errors.As(err, &exists) {
			_, err = s.SecretsManager.PutSecretValue(ctx, &secretsmanager.PutSecretValueInput{SecretId: id, SecretString: value})
		}
		if err != nil {
			return fmt.Errorf("load provider secret %s into Secrets Manager: %w", *id, err)
		}
	}
	return nil
}

// UseMoto points the stack's KMS and Secrets Manager, and the functions'
// own AWS clients, at moto's server at endpoint.
func (s *Stack) UseMoto(endpoint string) {
	s.MotoEndpoint = endpoint
	s.KMS = emulator.KMSClient(endpoint)
	s.SecretsManager = emulator.SecretsManagerClient(endpoint)
}

// SigningKeyAlias names the webhook signing key in KMS: what the functions
// get as SIGNING_KEY_ID where the template gives WebhookSigningKey.Arn.
func (s *Stack) SigningKeyAlias() string { return "alias/" + s.Table + "-webhook-signing" }

// OAuthKeyAlias names the access-token key of MCP connections in KMS: what
// the oauth function gets as OAUTH_SIGNING_KEY_ID where the template gives
// OAuthSigningKey.Arn.
func (s *Stack) OAuthKeyAlias() string { return "alias/" + s.Table + "-oauth-signing" }

// ProvisionSigningKey makes the webhook signing key and the access-token
// key, ECC_NIST_P256 keys for SIGN_VERIFY as template.yaml's, under
// SigningKeyAlias and OAuthKeyAlias unless the alias exists. moto keeps keys
// in memory only: after it restarts, this makes new keys under the same
// aliases, which the signers take when KMS tells them their key is gone,
// and the JWKS within its key's MaxAge. Signatures made with the old keys
// can no longer be verified.
func (s *Stack) ProvisionSigningKey(ctx context.Context) error {
	if s.KMS == nil {
		return errors.New("devstack: no KMS client (UseMoto)")
	}
	for alias, what := range map[string]string{
		s.SigningKeyAlias(): "Signs webhook deliveries (ES256)",
		s.OAuthKeyAlias():   "Signs the access tokens of MCP connections (ES256)",
	} {
		if err := s.provisionKey(ctx, alias, what); err != nil {
			return err
		}
	}
	return nil
}

func (s *Stack) provisionKey(ctx context.Context, alias, what string) error {
	_, err := s.KMS.DescribeKey(ctx, &kms.DescribeKeyInput{KeyId: aws.String(alias)})
	var nf *kmstypes.NotFoundException
	if err == nil || !errors.As(err, &nf) {
		return err
	}
	key, err := s.KMS.CreateKey(ctx, &kms.CreateKeyInput{
		Description: aws.String(what + ", local stack " + s.Table),
		KeySpec:     kmstypes.KeySpecEccNistP256,
		KeyUsage:    kmstypes.KeyUsageTypeSignVerify,
	})
	if err != nil {
		return fmt.Errorf("create the key %s: %w", alias, err)
	}
	_, err = s.KMS.CreateAlias(ctx, &kms.CreateAliasInput{AliasName: aws.String(alias), TargetKeyId: key.KeyMetadata.KeyId})
	var exists *kmstypes.AlreadyExistsException
	if errors.As(err, &exists) {
		// Another process made it first: its key serves, this one is unused.
		_, _ = s.KMS.ScheduleKeyDeletion(ctx, &kms.ScheduleKeyDeletionInput{KeyId: key.KeyMetadata.KeyId, PendingWindowInDays: aws.Int32(7)})
		return nil
	}
	if err != nil {
		return fmt.Errorf("name the key %s: %w", alias, err)
	}
	return nil
}
