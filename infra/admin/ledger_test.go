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
	wantKeys(t, out, "workspace_id", "stored", "ledger", "differences")
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
