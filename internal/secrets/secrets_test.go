package secrets_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"genjobs/internal/awsclient"
	"genjobs/internal/emulator"
	"genjobs/internal/fault"
	"genjobs/internal/secrets"
	"genjobs/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// countingClient counts the requests a Secrets Manager client sends.
type countingClient struct {
	n    atomic.Int64
	next *http.Client
}

func (c *countingClient) Do(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.Do(r)
}

// newStore returns a store under a prefix of this test's own on moto, with
// the raw client to put secrets there and the count of the store's requests.
func newStore(t *testing.T) (*secrets.Store, *secretsmanager.Client, string, *countingClient) {
	t.Helper()
	prefix := testenv.UniqueName(t, "stack") + "/providers/"
	counter := &countingClient{next: &http.Client{}}
	client := secrets.Client(testenv.SecretsManager(t), awsclient.Requests.SecretsManager)
	client = secretsmanager.New(client.Options(), func(o *secretsmanager.Options) { o.HTTPClient = counter })
	return secrets.New(client, prefix), testenv.SecretsManager(t), prefix, counter
}

func put(t *testing.T, c *secretsmanager.Client, id, value string) {
	t.Helper()
	ctx := context.Background()
	_, err := c.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String(id), SecretString: aws.String(value)})
	if err != nil {
		t.Fatalf("create secret %s: %v", id, err)
	}
	t.Cleanup(func() {
		_, _ = c.DeleteSecret(ctx, &secretsmanager.DeleteSecretInput{SecretId: aws.String(id), ForceDeleteWithoutRecovery: aws.Bool(true)})
	})
}

func TestGetReadsTheSecretUnderThePrefixOnceAndKeepsIt(t *testing.T) {
	store, raw, prefix, counter := newStore(t)
	ctx := context.Background()
	put(t, raw, prefix+"replicate", `{"token":"r8_abc","webhook_secret":"whsec_c2VjcmV0","webhook_token":"cog-bearer"}`)
	// The same name without the prefix, and under another stack's prefix:
	// neither may be what Get reads.
	put(t, raw, "replicate-"+testenv.UniqueName(t, "x"), `{"token":"wrong"}`)

	got, err := store.Get(ctx, "replicate")
	if err != nil {
		t.Fatal(err)
	}
	want := secrets.Secret{Token: "r8_abc", WebhookSecret: "whsec_c2VjcmV0", WebhookToken: "cog-bearer"}
	if got != want {
		t.Fatalf("Get = %q; want the stored members", []string{got.Token, got.WebhookSecret, got.WebhookToken})
	}
	// Rotated in Secrets Manager: this process keeps the value it read.
	if _, err := raw.PutSecretValue(ctx, &secretsmanager.PutSecretValueInput{
		SecretId: aws.String(prefix + "replicate"), SecretString: aws.String(`{"token":"r8_new"}`),
	}); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		again, err := store.Get(ctx, "replicate")
		if err != nil || again != want {
			t.Fatalf("second Get = %q, %v; want the cached value", again.Token, err)
		}
	}
	if n := counter.n.Load(); n != 1 {
		t.Fatalf("6 Gets of one secret sent %d requests; want 1", n)
	}
	// A new instance (a new execution environment) reads the new value.
	fresh := secrets.New(testenv.SecretsManager(t), prefix)
	if got, err := fresh.Get(ctx, "replicate"); err != nil || got.Token != "r8_new" {
		t.Fatalf("a new store's Get = %q, %v; want the rotated token", got.Token, err)
	}
}

func TestConcurrentFirstReadsShareOneRequest(t *testing.T) {
	store, raw, prefix, counter := newStore(t)
	put(t, raw, prefix+"cog", `{"webhook_token":"tok"}`)
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := store.Get(context.Background(), "cog")
			if err == nil && s.WebhookToken != "tok" {
				err = errors.New("wrong webhook_token")
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := counter.n.Load(); n != 1 {
		t.Fatalf("32 concurrent first Gets sent %d requests; want 1", n)
	}
}

func TestAMissingSecretIsErrNotFoundAndIsLookedForAgain(t *testing.T) {
	store, raw, prefix, _ := newStore(t)
	ctx := context.Background()
	_, err := store.Get(ctx, "replicate")
	if !errors.Is(err, secrets.ErrNotFound) {
		t.Fatalf("Get of a missing secret: %v; want ErrNotFound", err)
	}
	if fault.IsUnavailable(err) {
		t.Fatalf("a missing secret is marked as an outage: %v", err)
	}
	if !strings.Contains(err.Error(), prefix+"replicate") {
		t.Errorf("the error %q does not name the secret it looked for", err)
	}
	put(t, raw, prefix+"replicate", `{"token":"late"}`)
	if got, err := store.Get(ctx, "replicate"); err != nil || got.Token != "late" {
		t.Fatalf("Get after the secret was created = %q, %v", got.Token, err)
	}
}

func TestBadValuesAreRefusedWithoutQuotingThem(t *testing.T) {
	store, raw, prefix, _ := newStore(t)
	const sensitive = "s3cr3t-value-xyz"
	for name, value := range map[string]string{
		"not-json":    "token=" + sensitive,
		"truncated":   `{"token":"` + sensitive,
		"array":       `["` + sensitive + `"]`,
		"number":      `{"token": 12345, "webhook_secret":"` + sensitive + `"}`,
		"unknown-key": `{"tokn":"` + sensitive + `"}`,
	} {
		t.Run(name, func(t *testing.T) {
			put(t, raw, prefix+name, value)
			_, err := store.Get(context.Background(), name)
			if err == nil {
				t.Fatalf("Get of %s succeeded", name)
			}
			if strings.Contains(err.Error(), sensitive) || strings.Contains(err.Error(), "12345") {
				t.Fatalf("the error quotes the secret's value: %v", err)
			}
			if !strings.Contains(err.Error(), prefix+name) {
				t.Errorf("the error %q does not name the secret", err)
			}
		})
	}
}

func TestBadNamesAreRefusedWithoutARequest(t *testing.T) {
	store, _, _, counter := newStore(t)
	for _, name := range []string{"", "/abs", "sp ace", "semi;colon", strings.Repeat("a", 257)} {
		if _, err := store.Get(context.Background(), name); err == nil || errors.Is(err, secrets.ErrNotFound) {
			t.Errorf("Get(%q) = %v; want a name error", name, err)
		}
	}
	if n := counter.n.Load(); n != 0 {
		t.Fatalf("bad names sent %d requests", n)
	}
}

func TestASecretNeverPrintsItsValues(t *testing.T) {
	s := secrets.Secret{Token: "tok-AAA", WebhookSecret: "whsec_BBB", WebhookToken: "CCC-bearer"}
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("provider", "secret", s)
	printed := fmt.Sprintf("%v %+v %#v %s", s, s, s, s) + logged.String()
	for _, v := range []string{"AAA", "BBB", "CCC"} {
		if strings.Contains(printed, v) {
			t.Fatalf("a printed or logged Secret shows %q: %s", v, printed)
		}
	}
}

func TestAnUnreachableSecretsManagerIsAnOutage(t *testing.T) {
	// A port nothing listens on: taken, then released.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	endpoint := "http://" + l.Addr().String()
	l.Close()
	p := awsclient.Policy{MaxAttempts: 2, MaxBackoff: time.Millisecond, ConnectTimeout: time.Second}
	store := secrets.New(secrets.Client(emulator.SecretsManagerClient(endpoint), p), "genjobs/providers/")
	_, err = store.Get(context.Background(), "replicate")
	if !fault.IsUnavailable(err) {
		t.Fatalf("Get with Secrets Manager down = %v; want an outage (fault.Unavailable)", err)
	}
}

// The console's Stripe keys are read like a provider's secret: once, kept,
// looked for again while missing, and never printed.
func TestStripeKeysAreReadOnceAndNeverPrinted(t *testing.T) {
	_, raw, prefix, _ := newStore(t)
	ctx := context.Background()
	counter := &countingClient{next: &http.Client{}}
	client := secrets.Client(testenv.SecretsManager(t), awsclient.Requests.SecretsManager)
	client = secretsmanager.New(client.Options(), func(o *secretsmanager.Options) { o.HTTPClient = counter })
	id := strings.TrimSuffix(prefix, "providers/") + "stripe"
	stripe := secrets.NewStripe(func() *secretsmanager.Client { return client }, id)

	if _, err := stripe.Keys(ctx); !errors.Is(err, secrets.ErrNotFound) || !strings.Contains(err.Error(), id) {
		t.Fatalf("Keys of a missing secret: %v; want ErrNotFound naming %s", err, id)
	}
	put(t, raw, id, `{"secret_key":"sk_test_abc","webhook_secret":"whsec_def"}`)
	want := secrets.StripeKeys{SecretKey: "sk_test_abc", WebhookSecret: "whsec_def"}
	for range 3 {
		if got, err := stripe.Keys(ctx); err != nil || got != want {
			t.Fatalf("Keys = %v, %v; want the stored keys", got == want, err)
		}
	}
	if n := counter.n.Load(); n != 2 {
		t.Fatalf("a missing read and 3 Keys sent %d requests; want 2", n)
	}
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("keys", "keys", want)
	for _, printed := range []string{fmt.Sprint(want), fmt.Sprintf("%+v %#v", want, want), logged.String()} {
		if strings.Contains(printed, "sk_test_abc") || strings.Contains(printed, "whsec_def") {
			t.Errorf("the keys printed their values: %s", printed)
		}
	}
}
