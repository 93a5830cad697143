package console_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"genjobs/infra/local/devstack"
	"genjobs/internal/auth"
	"genjobs/internal/billing"
	"genjobs/internal/member"
	"genjobs/internal/store/membersdb"
	"genjobs/internal/store/stylesdb"
	"genjobs/internal/store/tokensdb"
	"genjobs/internal/store/topupsdb"
	"genjobs/internal/style"
)

// phoneWidth is the narrowest phone the console is checked on, in CSS
// pixels (an iPhone 12 to 15).
const phoneWidth = 390

// fit is what a page measures of itself in the browser: how wide the
// document is, and every action (link, button, field) that lies partly
// outside the viewport's width, where a person cannot reach it without
// scrolling the page, or a table, sideways.
type fit struct {
	ScrollWidth int      `json:"scroll"`
	Viewport    int      `json:"viewport"`
	Outside     []string `json:"outside"`
	RowActions  int      `json:"rowActions"`
}

const measureFit = `(() => {
  const vw = document.documentElement.clientWidth;
  const out = {scroll: document.documentElement.scrollWidth, viewport: vw, outside: [], rowActions: 0};
  for (const el of document.querySelectorAll('a, button, input:not([type=hidden]), select, textarea')) {
    const r = el.getBoundingClientRect();
    if (r.width <= 1 || r.height <= 1) continue; // hidden, or visually hidden for screen readers
    if (el.closest('tr')) out.rowActions++;
    if (r.left < 0 || r.right > vw + 0.5) {
      out.outside.push((el.id || el.textContent.trim() || el.name || el.tagName) + ' at ' + Math.round(r.left) + '..' + Math.round(r.right));
    }
  }
  return out;
})()`

// chartFit is what the visible usage chart measures: its box, its day
// labels' boxes and the smallest size its text is drawn at.
type chartFit struct {
	Left, Right   float64
	Labels        [][2]float64
	SmallestFont  float64 `json:"smallestFont"`
	LabelsVisible int     `json:"labelsVisible"`
}

const measureChart = `(() => {
  const svg = [...document.querySelectorAll('svg.chart')].find(s => s.getBoundingClientRect().width > 0);
  if (!svg) return null;
  const box = svg.getBoundingClientRect();
  const scale = box.width / svg.viewBox.baseVal.width;
  const out = {Left: box.left, Right: box.right, Labels: [], smallestFont: 1000, labelsVisible: 0};
  for (const t of svg.querySelectorAll('text')) {
    out.smallestFont = Math.min(out.smallestFont, parseFloat(getComputedStyle(t).fontSize) * scale);
  }
  for (const t of svg.querySelectorAll('text.day')) {
    const r = t.getBoundingClientRect();
    out.Labels.push([r.left, r.right]);
  }
  out.labelsVisible = out.Labels.length;
  return out;
})()`

// TestEveryPageFitsAPhone opens every page of the console in Chromium at a
// phone's 390 CSS pixels (sign-in, both steps of a forgotten password,
// set-password, no workspace, tokens, revoke, billing, members, remove
// member, reset a member's password, security, connections, an
// assistant's consent, the shared style, an error, usage, the jobs list,
// an image job's and a 3D job's pages, the models, and the playgrounds of
// the enhancer and of a video model), with
// long names and emails in its tables: no
// page is wider than the screen, every action (a row's Revoke, Remove or
// role, every form's button) lies within it, and the usage chart's labels
// are drawn at a readable size, apart, and inside the chart, the last
// day's included, for 7, 30 and 90 days.
func TestEveryPageFitsAPhone(t *testing.T) {
	if _, err := os.Stat(chromium()); err != nil {
		t.Fatalf("no Chromium at %s (make test installs Debian's chromium; CHROMIUM names another): %v", chromium(), err)
	}
	s, _ := signedIn(t, member.Owner)
	ctx := context.Background()
	long := "a-person-with-a-rather-long-address@subdomain.example.com"
	other := person(t, s, long, devstack.DemoWorkspace, member.Member)
	token, hash := auth.NewToken()
	if err := tokensdb.New(s.Store).CreateToken(ctx, auth.Token{ID: auth.NewID("tok_"), WorkspaceID: devstack.DemoWorkspace,
		Name: "production-backend-for-the-image-pipeline", Hash: hash, Prefix: auth.Prefix(token), CreatedAt: time.Now(), CreatedBy: long}); err != nil {
		t.Fatal(err)
	}
	if err := topupsdb.New(s.Store).CreateCheckout(ctx, billing.Checkout{ID: "top_phone", WorkspaceID: devstack.DemoWorkspace, Status: billing.CheckoutPending,
		Requested: 2500 * billing.USD, CreatedBy: long, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	st := style.Style{ID: style.NewID(), WorkspaceID: devstack.DemoWorkspace, Owner: style.APIOwner(devstack.DemoWorkspace),
		Title: "Ink lines on a rainy harbour at dusk", Prompt: strings.Repeat("ink lines, soft washes, ", 12),
		Models: []string{"model-e-4", "model-g-3.1-rapid"}, CreatedAt: time.Now()}
	styles := stylesdb.New(s.Store)
	if err := styles.CreateStyle(ctx, st); err != nil {
		t.Fatal(err)
	}
	share, _, err := styles.ShareLink(ctx, st.ID, style.APIUserID(devstack.DemoWorkspace), style.NewShareToken(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	// A person new to the pool (the set-password step) and one in no
	// workspace, both with addresses that do not fit a phone's line.
	newcomer := "someone-new-with-an-equally-long-address@subdomain.example.com"
	idp, err := s.Local.Cognito()
	if err != nil {
		t.Fatal(err)
	}
	fresh, _, err := idp.EnsureUser(ctx, newcomer)
	if err != nil || fresh.TemporaryPassword == "" {
		t.Fatalf("a new person: %+v, %v", fresh, err)
	}
	loner := "nobody-has-added-this-rather-long-address@subdomain.example.com"
	if _, _, err := idp.EnsureUser(ctx, loner); err != nil {
		t.Fatal(err)
	}
	if err := idp.SetPassword(ctx, loner, password); err != nil {
		t.Fatal(err)
	}
	model := createJob(t, s) // a model's row and a bar in usage; a 3D job
	waitEnded(t, s, model)
	image := createImageJob(t, s, s.Token)
	waitEnded(t, s, image)
	tokenID := tokens(t, s, devstack.DemoWorkspace)[0].ID
	// An assistant with a long name connected by the owner (the
	// connections page) and asking again (the consent page).
	client := assistant(t, s, "A helpful assistant with a remarkably long registered name")
	ms, err := membersdb.New(s.Store).Members(ctx, devstack.DemoWorkspace)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		grant(t, s, client, m.UserID, devstack.DemoWorkspace)
	}

	c := startChrome(t, phoneWidth, 844)
	browser, do := c.browser, c.do
	shot := func(name string) chromedp.Action[chromedp.Void] { return c.shot("phone-" + name) }
	app := s.URL + "/app"
	if err := chromedp.Do(browser, chromedp.EmulateViewport(phoneWidth, 844, chromedp.EmulateScale(3), chromedp.EmulateMobile)); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	// measure checks the page the browser shows; check opens path first.
	var measure func(name string, rowActions bool)
	check := func(name, path, ready string, rowActions bool) {
		t.Helper()
		do(name, chromedp.Navigate(app+path), chromedp.WaitVisible(chromedp.CSS(ready)))
		measure(name, rowActions)
	}
	signIn := func(email, password, ready string) {
		t.Helper()
		do("sign in as "+email,
			chromedp.Navigate(app+"/sign-in"),
			chromedp.SendKeys(chromedp.CSS(`input[name=email]`), email),
			chromedp.SendKeys(chromedp.CSS(`input[name=password]`), password),
			chromedp.Submit(chromedp.CSS(`input[name=password]`)),
			chromedp.WaitVisible(chromedp.CSS(ready)),
		)
	}
	measure = func(name string, rowActions bool) {
		t.Helper()
		do(name, shot(name))
		stepCtx, cancel := context.WithTimeout(browser, 20*time.Second)
		defer cancel()
		f, err := chromedp.Run(stepCtx, chromedp.Evaluate[fit](measureFit))
		if err != nil {
			t.Fatalf("%s: measure: %v", name, err)
		}
		if f.Viewport != phoneWidth {
			t.Fatalf("%s: the viewport is %d pixels wide, not %d", name, f.Viewport, phoneWidth)
		}
		if f.ScrollWidth > phoneWidth {
			t.Errorf("%s: the page is %d pixels wide on a %d-pixel phone", name, f.ScrollWidth, phoneWidth)
		}
		if len(f.Outside) > 0 {
			t.Errorf("%s: actions outside the screen: %s", name, strings.Join(f.Outside, "; "))
		}
		if rowActions && f.RowActions == 0 {
			t.Errorf("%s: no row action was measured", name)
		}
	}

	check("sign-in", "/sign-in", "input[name=email]", false)
	check("forgot-password", "/forgot-password?email="+newcomer, "#forgot-form", false)
	check("reset-password", "/reset-password?email="+newcomer, "#reset-form", false)
	signIn(newcomer, fresh.TemporaryPassword, `input[name=password_again]`)
	measure("set-password", false)
	signIn(loner, password, `#sign-out`)
	measure("no-workspace", false)
	do("sign out", chromedp.Click(chromedp.CSS(`#sign-out`)), chromedp.WaitVisible(chromedp.CSS(`input[name=email]`)))
	signIn("owner@example.com", password, `#tokens`)
	check("tokens", "/settings/api-tokens", "#tokens", true)
	check("revoke", "/settings/api-tokens/"+tokenID+"/revoke", "#confirm-revoke", false)
	check("billing", "/settings/billing", "#topups", false)
	check("members", "/settings/members", "#members", true)
	check("remove-member", "/settings/members/"+other+"/remove", "main form", false)
	check("reset-member", "/settings/members/"+other+"/reset-password", "#confirm-reset", false)
	check("security", "/settings/security", "main h1", false)
	check("connections", "/settings/connections", "#workspace-connections", true)
	check("consent", "/oauth/authorize?"+authorizeQuery(s, client), "#consent-allow", false)
	check("shared-style", "/styles/shared/"+share, "main h1", false)
	check("error", "/settings/no-such-page", "main h1", false)
	check("jobs", "/jobs", "#jobs", true)
	check("job-image", "/jobs/"+image, "#job-outputs img", false)
	check("job-3d", "/jobs/"+model, "#job-input", false)
	check("models", "/models", "#image-model-e-4", false)
	check("playground-enhance", "/models/enhance/vendor-a/standard-enhance", "#playground", false)
	check("playground-video", "/models/video/vendor-b/model-b-fast", "#playground", false)
	for _, days := range []string{"7", "30", "90"} {
		check("usage-"+days, "/settings/usage?days="+days, "#usage-days", false)
		stepCtx, cancel := context.WithTimeout(browser, 20*time.Second)
		c, err := chromedp.Run(stepCtx, chromedp.Evaluate[*chartFit](measureChart))
		cancel()
		if err != nil || c == nil || c.LabelsVisible == 0 {
			t.Fatalf("usage, %s days: no visible chart with day labels (%v)", days, err)
		}
		if c.SmallestFont < 10 {
			t.Errorf("usage, %s days: the chart's text is drawn at %.1f pixels; want 10 or more", days, c.SmallestFont)
		}
		last := c.Labels[len(c.Labels)-1]
		if last[0] < c.Left || last[1] > c.Right+0.5 {
			t.Errorf("usage, %s days: the last day's label spans %.0f..%.0f, outside the chart's %.0f..%.0f", days, last[0], last[1], c.Left, c.Right)
		}
		for i := 1; i < len(c.Labels); i++ {
			if c.Labels[i][0] < c.Labels[i-1][1] {
				t.Errorf("usage, %s days: day labels %d and %d overlap", days, i-1, i)
			}
		}
	}
}
