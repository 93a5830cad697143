package app_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"genjobs/internal/app"
)

// The sweeper's and the worker's timings can be shortened for a local
// stack's tests; a bad value stops the function naming the variable.
func TestConfigReadsTheLocalTimings(t *testing.T) {
	d, err := app.Config(func(k string) string {
		return map[string]string{"SWEEPER_REQUEUE_AFTER": "5s", "WORKER_LEASE": "1m30s"}[k]
	})
	if err != nil || d.Sweeper.RequeueAfter != 5*time.Second || d.Worker.LeaseFor != 90*time.Second {
		t.Errorf("Config: requeue after %s, lease %s (%v); want 5s, 1m30s", d.Sweeper.RequeueAfter, d.Worker.LeaseFor, err)
	}
	if d, err := app.Config(func(string) string { return "" }); err != nil || d.Sweeper.RequeueAfter != 0 || d.Worker.LeaseFor != 0 {
		t.Errorf("unset: %s, %s (%v); want 0 (the defaults)", d.Sweeper.RequeueAfter, d.Worker.LeaseFor, err)
	}
	for name, value := range map[string]string{"SWEEPER_REQUEUE_AFTER": "soon", "WORKER_LEASE": "-1s"} {
		_, err := app.Config(func(k string) string { return map[string]string{name: value}[k] })
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s=%s: %v; want an error naming it", name, value, err)
		}
	}
}

// A function missing configuration stops at init naming every missing
// variable, in the same order each time.
func TestRequireNamesEveryMissingVariable(t *testing.T) {
	for _, c := range []struct {
		settings map[string]string
		want     string
	}{
		{map[string]string{"TABLE_NAME": "t", "JOBS_QUEUE_URL": "q"}, ""},
		{map[string]string{"TABLE_NAME": "t", "JOBS_QUEUE_URL": ""}, "JOBS_QUEUE_URL is not set"},
		{map[string]string{"TABLE_NAME": "", "JOBS_QUEUE_URL": "", "RESULTS_BUCKET": "r"}, "JOBS_QUEUE_URL, TABLE_NAME are not set"},
	} {
		err := app.Require(c.settings)
		if got := fmt.Sprint(err); c.want == "" && err != nil || c.want != "" && got != c.want {
			t.Errorf("Require(%v) = %v; want %q", c.settings, err, c.want)
		}
	}
}

// Each text setting is read from the variable its comment names, and the
// addresses lose a trailing slash.
func TestConfigReadsEachSettingFromItsVariable(t *testing.T) {
	env := map[string]string{
		"TABLE_NAME": "table", "JOBS_QUEUE_URL": "jobs", "LIGHT_JOBS_DLQ_URL": "light-dlq", "ASSETS_BUCKET": "assets",
		"BASE_URL": "https://api.example.com/", "APP_URL": "https://app.example.com/", "WORKER_QUEUE_URL": "worker",
		"DELIVERIES_DLQ_URL": "del-dlq", "SIGNING_PREVIOUS_KEY_ID": "prev", "PROVIDER_QUEUE_URL": "prov",
		"COGNITO_CLIENT_ID": "client", "STRIPE_API_BASE": "http://127.0.0.1:12111/", "ALLOW_PRIVATE_DESTINATIONS": "true",
		"MAX_SOURCE_PIXELS": "24000000",
	}
	d, err := app.Config(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range [][2]string{
		{d.Table, "table"}, {d.Queues.Jobs, "jobs"}, {d.Queues.LightJobsDLQ, "light-dlq"}, {d.Buckets.Assets, "assets"},
		{d.API.BaseURL, "https://api.example.com"}, {d.API.AppURL, "https://app.example.com"}, {d.Worker.Queue, "worker"},
		{d.Webhooks.DLQ, "del-dlq"}, {d.Signing.PreviousKeyID, "prev"}, {d.Providers.Queue, "prov"},
		{d.Console.ClientID, "client"}, {d.Console.StripeAPIBase, "http://127.0.0.1:12111"},
	} {
		if c[0] != c[1] {
			t.Errorf("read %q; want %q", c[0], c[1])
		}
	}
	if !d.Network.AllowPrivate || d.Worker.MaxSourcePixels != 24000000 || len(d.Webhooks.Schedule) == 0 {
		t.Errorf("AllowPrivate %t, MaxSourcePixels %d, webhook schedule %v; want true, 24000000, the default schedule",
			d.Network.AllowPrivate, d.Worker.MaxSourcePixels, d.Webhooks.Schedule)
	}
}
