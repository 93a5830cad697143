package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"genjobs/internal/billing"
	"genjobs/internal/job"
)

func TestInvoiceAndLedgerVerify(t *testing.T) {
	e, ctx := newEnv(t), context.Background()
	ws := e.ok(t, "workspace", "create", "--name", "Net30")["workspace_id"].(string)
	other := e.ok(t, "workspace", "create", "--name", "Prepaid")["workspace_id"].(string)
	e.ok(t, "balance", "topup", "--workspace", other, "--usd", "10", "--payment-id", "pay_o")
	out := e.ok(t, "workspace", "invoice", "--workspace", ws, "--credit-limit-usd", "50")
	if out["credit_limit_usd"] != "50.000000" || out["owed_usd"] != "0.000000" || out["available_usd"] != "0.000000" {
		t.Errorf("invoice: %v", out)
	}
	// A job of the invoiced workspace runs without a prepaid balance and,
	// completed, is owed.
	s, now := e.store(), time.Now()
	j := &job.Job{ID: job.NewID(now), WorkspaceID: ws, CreatedAt: now, Price: 1_209_500,
		Endpoint: "/generate/video/vendor-b/model-b-fast", Request: []byte(`{}`)}
	if err := s.CreateJob(ctx, j); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Transition(ctx, j, job.Change{To: job.Completed}, now); err != nil {
		t.Fatal(err)
	}
	out = e.ok(t, "balance", "show", "--workspace", ws)
	if out["owed_usd"] != "1.209500" || out["spent_usd"] != "1.209500" || out["available_usd"] != "-1.209500" {
		t.Errorf("balance show of an invoiced workspace: %v", out)
	}
	// A prepaid workspace shows the three fields only.
	wantKeys(t, e.ok(t, "balance", "show", "--workspace", other), "available_usd", "reserved_usd", "spent_usd")

	out = e.ok(t, "ledger", "verify", "--workspace", ws)
	wantKeys(t, out, "workspace_id", "stored", "ledger", "stored_cu", "ledger_cu", "differences")
	if d := out["differences"].([]any); len(d) != 0 {
		t.Errorf("differences of a correct ledger: %v", d)
	}
	all := e.ok(t, "ledger", "verify", "--all")
	if n := len(all["workspaces"].([]any)); n != 2 {
		t.Errorf("--all verified %d workspaces; want 2", n)
	}

	// A balance changed behind the ledger's back is caught, by both forms.
	e.addToWorkspace(t, other, "available_micros", 1)
	want := "available: stored " + (10*billing.USD + 1).String() + ", ledger " + (10 * billing.USD).String()
	for _, args := range [][]string{{"ledger", "verify", "--workspace", other}, {"ledger", "verify", "--all"}} {
		r := e.run(args...)
		if r.code != 1 || !strings.Contains(r.stdout, want) || !strings.Contains(r.stderr, "disagrees with the ledger") {
			t.Errorf("%q on a tampered balance: exit %d, stdout %q, stderr %q", args, r.code, r.stdout, r.stderr)
		}
	}
	e.fails(t, 1, "workspace ws_nope does not exist", "ledger", "verify", "--workspace", "ws_nope")
}

func TestWorkspacePlanAndLedgerVerifyOfComputeUnits(t *testing.T) {
	e, ctx := newEnv(t), context.Background()
	ws := e.ok(t, "workspace", "create", "--name", "Studio")["workspace_id"].(string)
	out := e.ok(t, "workspace", "plan", "--workspace", ws, "--monthly-units", "500")
	wantKeys(t, out, "workspace_id", "monthly_units", "topped_up_cu", "available_cu", "reserved_cu", "spent_cu")
	if out["monthly_units"] != 500.0 || out["topped_up_cu"] != 500.0 || out["available_cu"] != 500.0 {
		t.Errorf("a new plan: %v; want 500 units at once", out)
	}
	// Set again within the month: nothing more is credited.
	if out := e.ok(t, "workspace", "plan", "--workspace", ws, "--monthly-units", "800"); out["topped_up_cu"] != 0.0 || out["available_cu"] != 500.0 || out["monthly_units"] != 800.0 {
		t.Errorf("a changed plan within the month: %v; want 800 a month from the next, 500 now", out)
	}
	// A job billed in compute units completes: ledger verify follows it.
	s, now := e.store(), time.Now()
	j := &job.Job{ID: job.NewID(now), WorkspaceID: ws, CreatedAt: now, Price: 30_000, Currency: billing.CurrencyCU, Units: 3,
		Endpoint: "/generate/image/vendor-b/model-e-4", Request: []byte(`{}`)}
	if err := s.CreateJob(ctx, j); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Transition(ctx, j, job.Change{To: job.Completed}, now); err != nil {
		t.Fatal(err)
	}
	out = e.ok(t, "ledger", "verify", "--workspace", ws)
	if got := out["stored_cu"].(map[string]any); got["available_cu"] != 497.0 || got["spent_cu"] != 3.0 {
		t.Errorf("stored_cu %v; want 497 available, 3 spent", got)
	}
	if d := out["differences"].([]any); len(d) != 0 || out["stored"].(map[string]any)["spent_usd"] != "0.000000" {
		t.Errorf("ledger verify of a CU job: %v", out)
	}
	// Units changed behind the ledger's back are caught.
	e.addToWorkspace(t, ws, "cu_available", 7)
	r := e.run("ledger", "verify", "--workspace", ws)
	if r.code != 1 || !strings.Contains(r.stdout, "cu available: stored 504, ledger 497") {
		t.Errorf("ledger verify of tampered units: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	e.fails(t, 2, "--monthly-units must be a whole number", "workspace", "plan", "--workspace", ws, "--monthly-units", "-1")
	e.fails(t, 2, "--monthly-units must be a whole number", "workspace", "plan", "--workspace", ws, "--monthly-units", "1.5")
	e.fails(t, 2, "--monthly-units is required", "workspace", "plan", "--workspace", ws)
	e.fails(t, 1, "workspace ws_nope does not exist", "workspace", "plan", "--workspace", "ws_nope", "--monthly-units", "5")
}
