package providerfn

import (
	"context"
	"errors"

	"genjobs/internal/app"
	"genjobs/internal/provider"
	"genjobs/internal/secrets"
)

// Secrets builds the store of the providers' secrets
// (PROVIDER_SECRETS_PREFIX in Secrets Manager). It does no I/O: a secret is
// read when a route first needs it.
func Secrets(d app.Deps) (provider.Secrets, error) {
	if err := app.Require(map[string]string{"PROVIDER_SECRETS_PREFIX": d.ProviderSecretsPrefix}); err != nil {
		return nil, err
	}
	if d.AWS == nil {
		// A local stack without Secrets Manager: routes that name a secret
		// fail their jobs' steps, the functions still start.
		return unavailable{}, nil
	}
	return SecretStore{secrets.New(secrets.NewClient(*d.AWS, d.Retries.SecretsManager), d.ProviderSecretsPrefix)}, nil
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

// unavailable is the secrets store of a stack that has none.
type unavailable struct{}

func (unavailable) Get(context.Context, string) (provider.Secret, error) {
	return provider.Secret{}, errors.New("no Secrets Manager is configured")
}
