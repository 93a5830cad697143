package providerwire

import (
	"context"

	"genjobs/internal/app"
	"genjobs/internal/provider"
	"genjobs/internal/secrets"
)

// Secrets builds the store of the providers' secrets
// (PROVIDER_SECRETS_PREFIX in Secrets Manager). It does no I/O: a secret is
// read when a route first needs it.
func Secrets(d app.Deps) (provider.Secrets, error) {
	if err := app.Require(map[string]string{
		"PROVIDER_SECRETS_PREFIX": d.Providers.SecretsPrefix,
	}); err != nil {
		return nil, err
	}
	return SecretStore{secrets.New(secrets.NewClient(d.AWS, d.Retries.SecretsManager), d.Providers.SecretsPrefix)}, nil
}

// SecretStore adapts internal/secrets to the provider package's Secrets.
type SecretStore struct{ S *secrets.Store }

// Get reads the secret called name.
func (s SecretStore) Get(ctx context.Context, name string) (provider.Secret, error) {
	v, err := s.S.Get(ctx, name)
	if err != nil {
		return provider.Secret{}, err
	}
	return provider.Secret{Token: v.Token, WebhookSecret: v.WebhookSecret, WebhookToken: v.WebhookToken}, nil
}
