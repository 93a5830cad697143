package app_test

import (
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
