package devstack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	smtypes "github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"

	"genjobs/internal/awsclient"
	"genjobs/internal/checkout/stripedouble"
	"genjobs/internal/clock"
	"genjobs/internal/cognito"
	"genjobs/internal/emulator"
	"genjobs/internal/member"
	"genjobs/internal/store"
	"genjobs/internal/store/membersdb"
)

// The local stack's Stripe keys: the test double accepts and signs with
// these, and they sit in moto's Secrets Manager where the template's
// console reads its own ({stack name}/stripe).
const (
	StripeSecretKey     = "sk_test_local_double"
	StripeWebhookSecret = "whsec_local_double"
)

// The demo owner of the demo workspace (docs/local-stack.md): the same on
// every run, so that a newcomer signs in with what make run prints.
const (
	DemoOwnerEmail    = "owner@demo.example"
	DemoOwnerPassword = "Demo-Owner-Pass-1!"
)

// StripeSecretID is where the console reads its Stripe keys: the
// template's "${AWS::StackName}/stripe", the table's name standing for
// the stack's.
func (s *Stack) StripeSecretID() string { return s.Table + "/stripe" }

// ProvisionConsole makes, in moto, the console's user pool and app client
// (as template.yaml's ConsoleUserPool and ConsoleUserPoolClient: moto's
// CloudFormation does not model them) unless the stack has them, and the
// Stripe keys' secret.
func (s *Stack) ProvisionConsole(ctx context.Context) error {
	if s.MotoEndpoint == "" {
		return errors.New("devstack: the console needs moto (UseMoto)")
	}
	if s.Pool.PoolID == "" {
		pool, err := cognito.CreatePool(ctx, emulator.MotoConfig(s.MotoEndpoint), s.Table)
		if err != nil {
			return err
		}
		s.Pool = pool
	}
	value, _ := json.Marshal(map[string]string{"secret_key": StripeSecretKey, "webhook_secret": StripeWebhookSecret})
	id := aws.String(s.StripeSecretID())
	_, err := s.SecretsManager.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: id, SecretString: aws.String(string(value))})
	var exists *smtypes.ResourceExistsException
	if errors.As(err, &exists) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("load the Stripe keys into Secrets Manager: %w", err)
	}
	return nil
}

// Cognito is a client of the stack's user pool, as the operator CLI and
// the seed use it.
func (s *Stack) Cognito() (*cognito.Client, error) {
	return cognito.New(emulator.MotoConfig(s.MotoEndpoint), awsclient.Requests.Cognito,
		cognito.Config{PoolID: s.Pool.PoolID, ClientID: s.Pool.ClientID, JWKSURL: s.JWKSURL()}, cognito.VerifierOptions{Clock: clock.System{}})
}

// JWKSURL is where moto serves the pool's keys; its tokens keep AWS's
// issuer, which the console derives from the region and pool as in AWS.
func (s *Stack) JWKSURL() string {
	return s.MotoEndpoint + "/" + s.Pool.PoolID + "/.well-known/jwks.json"
}

// localEnv is what AWS would give the functions on its own and the local
// stack must name: where moto serves the pool's keys, and where Stripe is.
func (s *Stack) localEnv() map[string]string {
	env := map[string]string{}
	if s.Pool.PoolID != "" {
		env["COGNITO_JWKS_URL"] = s.JWKSURL()
	}
	if s.StripeAPIBase != "" {
		env["STRIPE_API_BASE"] = s.StripeAPIBase
	}
	return env
}

// SeedDemoOwner makes sure the demo owner exists in the pool with its fixed
// password and is an owner of the demo workspace, and writes its email and
// password to file ({"email", "password"}).
func (s *Stack) SeedDemoOwner(ctx context.Context, st *store.Store, file string) error {
	c, err := s.Cognito()
	if err != nil {
		return err
	}
	u, _, err := c.EnsureUser(ctx, DemoOwnerEmail)
	if err != nil {
		return err
	}
	if err := c.SetPassword(ctx, DemoOwnerEmail, DemoOwnerPassword); err != nil {
		return err
	}
	db := membersdb.New(st)
	err = db.AddMember(ctx, member.Membership{WorkspaceID: DemoWorkspace, UserID: u.UserID, Email: DemoOwnerEmail,
		Role: member.Owner, AddedAt: time.Now()})
	if err != nil && !errors.Is(err, store.ErrExists) {
		return fmt.Errorf("make the demo owner an owner of %s: %w", DemoWorkspace, err)
	}
	// The pool is new on every run (moto keeps it in memory), and so is the
	// demo owner's user id: the memberships of earlier runs' ids go.
	ms, err := db.Members(ctx, DemoWorkspace)
	if err != nil {
		return err
	}
	for _, m := range ms {
		if m.Email == DemoOwnerEmail && m.UserID != u.UserID {
			if err := db.RemoveMember(ctx, DemoWorkspace, m.UserID); err != nil {
				return fmt.Errorf("remove an earlier run's demo owner: %w", err)
			}
		}
	}
	b, _ := json.MarshalIndent(map[string]string{"email": DemoOwnerEmail, "password": DemoOwnerPassword}, "", "  ")
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return err
	}
	return os.WriteFile(file, append(b, '\n'), 0o600)
}

// ServeStripe serves the Stripe test double on ln, sending its events to
// the API's POST /webhooks/stripe at apiURL, and points the console at it.
// The server stops with ctx.
func (s *Stack) ServeStripe(ctx context.Context, ln net.Listener, apiURL string) *stripedouble.Double {
	base := "http://" + ln.Addr().String()
	d := stripedouble.New(stripedouble.Options{SecretKey: StripeSecretKey, WebhookSecret: StripeWebhookSecret,
		WebhookURL: apiURL + "/webhooks/stripe"}, base)
	srv := &http.Server{Handler: d.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	go func() { <-ctx.Done(); _ = srv.Close() }()
	s.StripeAPIBase = base
	return d
}
