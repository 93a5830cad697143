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
	if err != nil || d.RequeueAfter != 5*time.Second || d.LeaseFor != 90*time.Second {
		t.Errorf("Config: requeue after %s, lease %s (%v); want 5s, 1m30s", d.RequeueAfter, d.LeaseFor, err)
	}
	if d, err := app.Config(func(string) string { return "" }); err != nil || d.RequeueAfter != 0 || d.LeaseFor != 0 {
		t.Errorf("unset: %s, %s (%v); want 0 (the defaults)", d.RequeueAfter, d.LeaseFor, err)
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
