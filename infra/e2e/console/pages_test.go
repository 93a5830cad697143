package console_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"genjobs/infra/local/devstack"
	"genjobs/infra/local/devstack/devstacktest"
	"genjobs/internal/member"
	"genjobs/internal/store/membersdb"
	"genjobs/internal/store/stylesdb"
	"genjobs/internal/style"
)

// TestUsageShowsTheSameFiguresAsTheAPI completes a job, then reads the
// usage page, its CSV and GET /usage for 7 days: the same days, amounts and
// jobs, and a bar for the day with the job.
func TestUsageShowsTheSameFiguresAsTheAPI(t *testing.T) {
	s, b := signedIn(t, member.Member)
	waitEnded(t, s, createJob(t, s))

	req, _ := http.NewRequest(http.MethodGet, s.URL+"/usage?days=7", nil)
	req.Header.Set("Authorization", "Bearer "+s.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var fromAPI struct {
		Total string `json:"total_usd"`
		ByDay []struct {
			Date string `json:"date"`
			USD  string `json:"usd"`
			Jobs int    `json:"jobs"`
		} `json:"by_day"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&fromAPI)
	resp.Body.Close()

	p := b.get("/app/settings/usage.csv?days=7")
	if p.status != http.StatusOK {
		t.Fatalf("CSV: %d", p.status)
	}
	rows, err := csv.NewReader(strings.NewReader(p.body)).ReadAll()
	if err != nil || len(rows) != len(fromAPI.ByDay)+1 || strings.Join(rows[0], ",") != "date,usd,jobs" {
		t.Fatalf("CSV: %v %v; want a header and %d days", rows, err, len(fromAPI.ByDay))
	}
	jobs := 0
	for i, d := range fromAPI.ByDay {
		if got := strings.Join(rows[i+1], ","); got != d.Date+","+d.USD+","+itoa(d.Jobs) {
			t.Errorf("CSV row %d %q; GET /usage says %s %s %d", i, got, d.Date, d.USD, d.Jobs)
		}
		jobs += d.Jobs
	}
	if jobs != 1 || fromAPI.Total != "0.100000" {
		t.Errorf("GET /usage: %d jobs, %s USD; want the one job's 0.10", jobs, fromAPI.Total)
	}
	page := b.get("/app/settings/usage?days=7")
	if page.status != http.StatusOK || !strings.Contains(page.body, `id="usage-total">$0.10<`) {
		t.Errorf("usage page: %d, total %q", page.status, between(page.body, `id="usage-total">`, "<"))
	}
	// The chart is drawn for a wide screen and for a phone: the same bars.
	for _, drawing := range []string{"wide", "compact"} {
		chart := between(page.body, `<svg class="chart `+drawing+`"`, "</svg>")
		if strings.Count(chart, `<rect class="bar"`) != 7 || !strings.Contains(chart, ": $0.10, 1 job</title>") {
			t.Errorf("the %s chart has %d bars and no bar titled with the job's day", drawing, strings.Count(chart, `<rect class="bar"`))
		}
	}
	for _, days := range []string{"30", "90"} {
		p := b.get("/app/settings/usage?days=" + days)
		for _, drawing := range []string{"wide", "compact"} {
			if n := strings.Count(between(p.body, `<svg class="chart `+drawing+`"`, "</svg>"), `<rect class="bar"`); p.status != http.StatusOK || n != atoi(days) {
				t.Errorf("%s days, %s chart: %d, %d bars", days, drawing, p.status, n)
			}
		}
	}
	if p := b.get("/app/settings/usage?days=8"); p.status != http.StatusBadRequest {
		t.Errorf("8 days: %d, want 400", p.status)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
func atoi(s string) int {
	var n int
	_ = json.Unmarshal([]byte(s), &n)
	return n
}

func TestOwnersManageMembersAndKeepAnOwner(t *testing.T) {
	s, b := signedIn(t, member.Owner)
	ctx := context.Background()
	p := b.post("/app/settings/members", b.form(devstack.DemoWorkspace, "email", "New.Person@example.com", "role", "admin"))
	if p.status != http.StatusCreated {
		t.Fatalf("add: %d", p.status)
	}
	if !strings.Contains(p.body, "new.person@example.com is now an admin</h2>") {
		t.Errorf("the added member's heading: %q; want new.person@example.com is now an admin", between(p.body, `id="member-added">`, "</h2>"))
	}
	if p := b.post("/app/settings/members", b.form(devstack.DemoWorkspace, "email", "third@example.com", "role", "member")); !strings.Contains(p.body, "third@example.com is now a member</h2>") {
		t.Errorf("the added member's heading: %q; want third@example.com is now a member", between(p.body, `id="member-added">`, "</h2>"))
	}
	// The page writes it as escaped text: a + in it reads &#43; in the HTML.
	temp := html.UnescapeString(between(p.body, `id="temp-password">`, "<"))
	if temp == "" {
		t.Fatal("no temporary password shown for a new person")
	}
	// The new person signs in: the set-password step, then their pages.
	nb := newBrowser(t, s)
	step := nb.post("/app/sign-in", url.Values{"email": {"new.person@example.com"}, "password": {temp}})
	challenge := between(step.body, `name="challenge" value="`, `"`)
	if step.status != http.StatusOK || challenge == "" {
		t.Fatalf("first sign-in: %d, no set-password step", step.status)
	}
	done := nb.post("/app/set-password", url.Values{"email": {"new.person@example.com"}, "challenge": {challenge},
		"password": {"Brand-New-Pass-9!"}, "password_again": {"Brand-New-Pass-9!"}})
	if done.status != http.StatusSeeOther {
		t.Fatalf("set password: %d\n%s", done.status, between(done.body, `class="error"`, "</p>"))
	}
	if !strings.Contains(nb.get("/app/settings/api-tokens").body, `id="create-token"`) {
		t.Error("the new admin cannot create tokens")
	}

	ms, _ := membersdb.New(s.Store).Members(ctx, devstack.DemoWorkspace)
	var owner, admin string
	for _, m := range ms {
		switch m.Email {
		case "owner@example.com":
			owner = m.UserID
		case "new.person@example.com":
			admin = m.UserID
		}
	}
	if p := b.post("/app/settings/members/"+owner+"/remove", b.form(devstack.DemoWorkspace)); p.status != http.StatusConflict {
		t.Errorf("removing the last owner: %d, want 409", p.status)
	}
	if p := b.post("/app/settings/members/"+owner+"/role", b.form(devstack.DemoWorkspace, "role", "member")); p.status != http.StatusConflict {
		t.Errorf("demoting the last owner: %d, want 409", p.status)
	}
	if p := nb.post("/app/settings/members/"+owner+"/remove", nb.form(devstack.DemoWorkspace)); p.status != http.StatusForbidden {
		t.Errorf("an admin removing an owner: %d, want 403", p.status)
	}
	if p := b.post("/app/settings/members/"+admin+"/role", b.form(devstack.DemoWorkspace, "role", "member")); p.status != http.StatusSeeOther {
		t.Errorf("demote the admin: %d", p.status)
	}
	if p := b.post("/app/settings/members/"+admin+"/remove", b.form(devstack.DemoWorkspace)); p.status != http.StatusSeeOther {
		t.Errorf("remove: %d", p.status)
	}
	if p := nb.get("/app/settings/api-tokens"); !strings.Contains(p.body, "No workspace yet") {
		t.Error("a removed member still sees the workspace")
	}
}

func TestTheSharedStylePageShowsItsStyleAsText(t *testing.T) {
	s, _ := signedIn(t, member.Member)
	ctx := context.Background()
	st := style.Style{ID: style.NewID(), WorkspaceID: devstack.DemoWorkspace, Owner: style.APIOwner(devstack.DemoWorkspace),
		Title: `"><img src=x onerror=alert(1)><script>alert(2)</script>`, Prompt: "ink <b>lines</b>",
		Models: []string{"model-e-4"}, URLs: []string{"https://images.example.com/cover.jpg"}, CreatedAt: time.Now()}
	styles := stylesdb.New(s.Store)
	if err := styles.CreateStyle(ctx, st); err != nil {
		t.Fatal(err)
	}
	token, _, err := styles.ShareLink(ctx, st.ID, style.APIUserID(devstack.DemoWorkspace), style.NewShareToken(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	anyone := newBrowser(t, s)
	p := anyone.get("/app/styles/shared/" + token)
	if p.status != http.StatusOK || strings.Contains(p.body, st.Title) || strings.Contains(p.body, "<b>lines") ||
		!strings.Contains(p.body, "&lt;script&gt;alert(2)&lt;/script&gt;") || !strings.Contains(p.body, `src="https://images.example.com/cover.jpg"`) {
		t.Errorf("shared page: %d\n%s", p.status, between(p.body, "<main", "</main>"))
	}
	if p := anyone.get("/app/styles/shared/nope"); p.status != http.StatusNotFound {
		t.Errorf("an unknown share link: %d, want 404", p.status)
	}
}

func TestPagesCarryAStrictPolicy(t *testing.T) {
	s, b := signedIn(t, member.Owner)
	req, _ := http.NewRequest(http.MethodGet, s.URL+"/app/settings/billing", nil)
	resp, err := b.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	csp := resp.Header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'self'", "script-src 'self'", "style-src 'self'", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %s", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe-inline") || resp.Header.Get("Referrer-Policy") != "same-origin" || resp.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("headers: %v", resp.Header)
	}
	for _, c := range resp.Cookies() {
		t.Errorf("a page set cookie %s", c.Name)
	}
}

// TestTheDemoOwnerIsOneMemberWhateverTheRuns: make run's pool is new on
// every run, and so is the demo owner's user id; the workspace keeps one.
func TestTheDemoOwnerIsOneMemberWhateverTheRuns(t *testing.T) {
	s := devstacktest.Start(t)
	ctx := context.Background()
	stale := member.Membership{WorkspaceID: devstack.DemoWorkspace, UserID: "an-earlier-run", Email: devstack.DemoOwnerEmail,
		Role: member.Owner, AddedAt: time.Now()}
	if err := membersdb.New(s.Store).AddMember(ctx, stale); err != nil {
		t.Fatal(err)
	}
	file := t.TempDir() + "/demo-owner.json"
	for range 2 {
		if err := s.Local.SeedDemoOwner(ctx, s.Store, file); err != nil {
			t.Fatal(err)
		}
	}
	ms, _ := membersdb.New(s.Store).Members(ctx, devstack.DemoWorkspace)
	if len(ms) != 1 || ms[0].UserID == stale.UserID || ms[0].Role != member.Owner {
		t.Errorf("members after two seeds: %+v; want the one current demo owner", ms)
	}
	b := newBrowser(t, s)
	b.signIn(devstack.DemoOwnerEmail, devstack.DemoOwnerPassword)
}
