package providerfn

import (
	"context"
	"errors"

	"genjobs/internal/app"
	"genjobs/internal/provider"
)

// Secrets is where the providers' secrets are read.
func Secrets(d app.Deps) (provider.Secrets, error) {
	return noSecrets{}, nil
}

type noSecrets struct{}

func (noSecrets) Get(context.Context, string) (provider.Secret, error) {
	return provider.Secret{}, errors.New("no secrets store is configured")
}
