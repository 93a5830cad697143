package devstack_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"genjobs/infra/local/devstack"
	"genjobs/infra/local/sam"
	"genjobs/internal/emulator"
	"genjobs/internal/secrets"
	"genjobs/internal/testenv"
)

func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "secrets.json")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// A bad PROVIDER_SECRETS_FILE stops make run with a message that names the
// file, the entry and the problem, and never shows a value.
func TestABadSecretsFileIsNamedWithoutItsValues(t *testing.T) {
	const value = "r8_SENSITIVE"
	for name, tc := range map[string]struct{ content, want string }{
		"not JSON":          {"{\n  \"replicate\": {\"token\": \"" + value + "\",}\n}", "not valid JSON (line 2"},
		"not an object":     {`["` + value + `"]`, "must be a JSON object of secrets by name"},
		"null":              {`null`, "must be a JSON object of secrets by name"},
		"entry not object":  {`{"replicate": "` + value + `"}`, `entry "replicate" is not a JSON object`},
		"unknown member":    {`{"replicate": {"tokn": "` + value + `"}}`, `entry "replicate" has the unknown member "tokn"`},
		"number":            {`{"cog": {"webhook_token": 12345}}`, `entry "cog": "webhook_token" must be a string`},
		"bad name":          {`{"re plicate": {"token": "` + value + `"}}`, `"re plicate" may hold only letters, digits`},
		"name starts slash": {`{"/replicate": {"token": "` + value + `"}}`, "must not start with '/'"},
	} {
		t.Run(name, func(t *testing.T) {
			path := writeFile(t, tc.content)
			_, err := devstack.ReadProviderSecrets(path)
			if err == nil {
				t.Fatal("a bad file was accepted")
			}
			msg := err.Error()
			if !strings.Contains(msg, "PROVIDER_SECRETS_FILE "+path) || !strings.Contains(msg, tc.want) {
				t.Errorf("error %q; want the file and %q", msg, tc.want)
			}
			if strings.Contains(msg, value) || strings.Contains(msg, "12345") {
				t.Errorf("the error shows a secret's value: %q", msg)
			}
		})
	}
	_, err := devstack.ReadProviderSecrets(filepath.Join(t.TempDir(), "missing.json"))
	if err == nil || !strings.Contains(err.Error(), "PROVIDER_SECRETS_FILE") || !strings.Contains(err.Error(), "missing.json") {
		t.Errorf("a missing file: %v", err)
	}
}

// The file's secrets reach Secrets Manager under the prefix every
// function's PROVIDER_SECRETS_PREFIX names, where internal/secrets reads
// them; provisioning again (a restart) gives them the file's values again.
func TestSecretsFileLoadsWhereTheFunctionsRead(t *testing.T) {
	ctx := context.Background()
	path := writeFile(t, `{"replicate": {"token": "r8_x", "webhook_secret": "whsec_eA=="}, "cog": {"webhook_token": "cb"}}`)
	loaded, err := devstack.ReadProviderSecrets(path)
	if err != nil {
		t.Fatal(err)
	}
	local, _, _, _ := stackWith(t)
	local.Secrets = loaded
	if err := local.LoadSecrets(ctx); err != nil {
		t.Fatal(err)
	}
	tpl, err := sam.Load(filepath.Join(repo, "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, fn := range tpl.Functions() {
		env, err := tpl.Env(fn.LogicalID, local.Resolve())
		if err != nil {
			t.Fatal(err)
		}
		if got := env[secrets.PrefixEnv]; got != local.SecretsPrefix() {
			t.Errorf("%s: %s = %q; make run loads the secrets under %q", fn.LogicalID, secrets.PrefixEnv, got, local.SecretsPrefix())
		}
	}
	store := secrets.New(testenv.SecretsManager(t), local.SecretsPrefix())
	rep, err := store.Get(ctx, "replicate")
	if err != nil || rep.Token != "r8_x" || rep.WebhookSecret != "whsec_eA==" {
		t.Fatalf("replicate = %q %q, %v", rep.Token, rep.WebhookSecret, err)
	}
	if cog, err := store.Get(ctx, "cog"); err != nil || cog.WebhookToken != "cb" {
		t.Fatalf("cog = %q, %v", cog.WebhookToken, err)
	}

	// A second run with a changed file updates the secret in place.
	local.Secrets = devstack.ProviderSecrets{"replicate": []byte(`{"token":"r8_y"}`)}
	if err := local.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := secrets.New(testenv.SecretsManager(t), local.SecretsPrefix()).Get(ctx, "replicate"); err != nil || got.Token != "r8_y" {
		t.Fatalf("replicate after a second load = %q, %v", got.Token, err)
	}
}

// moto keeps its secrets in memory: after a kill, the supervisor's
// Restarted (Reprovision, as make run wires it) loads them again.
func TestSecretsComeBackAfterMotoRestarts(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	py, err := emulator.MotoPython(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// A moto of its own: the shared one must never get a signal.
	mo, err := emulator.StartMoto(ctx, emulator.MotoOptions{Python: py, LogFile: filepath.Join(t.TempDir(), "moto.log")})
	if err != nil {
		t.Fatal(err)
	}
	local, _, _, _ := stackWith(t)
	local.UseMoto(mo.Endpoint())
	local.Secrets = devstack.ProviderSecrets{"replicate": []byte(`{"token":"r8_back"}`)}
	tpl, err := sam.Load(filepath.Join(repo, "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := local.LoadSecrets(ctx); err != nil {
		_ = mo.Stop()
		t.Fatal(err)
	}
	sup := emulator.Supervise(mo, emulator.SuperviseOptions{Restarted: func(ctx context.Context) error { return local.Reprovision(ctx, tpl) }})
	defer sup.Stop()
	if err := syscall.Kill(mo.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		got, err := secrets.New(emulator.SecretsManagerClient(mo.Endpoint()), local.SecretsPrefix()).Get(ctx, "replicate")
		if err == nil && got.Token == "r8_back" && sup.Restarts() == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the secret is not back a minute after moto was killed (restarts %d): %v", sup.Restarts(), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
