package console_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"genjobs/infra/local/devstack"
	"genjobs/internal/billing"
	"genjobs/internal/job"
	"genjobs/internal/member"
	"genjobs/internal/store/accountsdb"
	"genjobs/internal/store/ledgerdb"
)

// appJob stores a job made in the application by email, billed in compute
// units, and ends it with to.
func appJob(t *testing.T, st interface {
	CreateJob(context.Context, *job.Job) error
	Transition(context.Context, *job.Job, job.Change, time.Time) (*job.Job, error)
}, email string, units billing.Units, to job.Status) {
	t.Helper()
	ctx, now := context.Background(), time.Now()
	j := &job.Job{ID: job.NewID(now), WorkspaceID: devstack.DemoWorkspace, CreatedAt: now,
		Endpoint: "/generate/image/vendor-b/model-e-4", Request: []byte(`{"prompt":"a fox"}`),
		Price: billing.Micros(units) * 10_000, Currency: billing.CurrencyCU, Units: units, Source: job.SourceApp, CreatedBy: email}
	if err := st.CreateJob(ctx, j); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Transition(ctx, j, job.Change{To: to}, now); err != nil {
		t.Fatal(err)
	}
}

// The usage page shows, beside the USD of API jobs, the compute units the
// application's completed jobs spent: the total, by day, and by the person
// who made them (a cancelled job's units are released, not spent), to
// every member.
func TestTheUsagePageShowsComputeUnitsByDayAndByPerson(t *testing.T) {
	s, b := signedIn(t, member.Member)
	if _, err := accountsdb.New(s.Store).SetPlan(context.Background(), devstack.DemoWorkspace, 1000, time.Now()); err != nil {
		t.Fatal(err)
	}
	appJob(t, s.Store, "ana@example.com", 30, job.Completed)
	appJob(t, s.Store, "bo@example.com", 7, job.Completed)
	appJob(t, s.Store, "ana@example.com", 12, job.Completed)
	appJob(t, s.Store, "bo@example.com", 5, job.Cancelled)
	api := createJob(t, s) // an API token's job, in USD
	waitEnded(t, s, api)

	p := b.get("/app/settings/usage?days=7")
	if got := between(p.body, `id="usage-cu-total">`, "<"); got != "49 CU" {
		t.Errorf("compute units spent: %q; want 49 CU (30 + 7 + 12; the cancelled 5 released)", got)
	}
	if got := between(p.body, `id="usage-cu-jobs">`, "<"); got != "3" {
		t.Errorf("application jobs: %q; want 3", got)
	}
	if got := between(p.body, `id="usage-total">`, "<"); got != "$0.10" {
		t.Errorf("USD total: %q; want $0.10 (the API job alone)", got)
	}
	people := between(p.body, `id="usage-people">`, "</table>")
	ana, bo := strings.Index(people, "ana@example.com"), strings.Index(people, "bo@example.com")
	if ana < 0 || bo < ana || !strings.Contains(people[ana:bo], ">42<") || !strings.Contains(people[bo:], ">7<") {
		t.Errorf("compute units by person: want ana@example.com 42 then bo@example.com 7:\n%s", people)
	}
	today := time.Now().UTC().Format(time.DateOnly)
	days := between(p.body, `id="usage-days">`, "</table>")
	row := between(days, "<td>"+today+"</td>", "</tr>")
	if !strings.Contains(row, ">$0.10<") || !strings.Contains(row, ">49<") {
		t.Errorf("today's row %q; want the API job's $0.10 and the application's 49 units", row)
	}
	if a, err := ledgerdb.New(s.Store).AuditLedger(context.Background(), devstack.DemoWorkspace); err != nil || len(a.Differences) > 0 || a.StoredUnits.Spent != 49 {
		t.Errorf("ledger verify: %+v, %v", a, err)
	}
}
