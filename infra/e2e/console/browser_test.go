package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"genjobs/infra/local/devstack"
	"genjobs/internal/auth"
	"genjobs/internal/billing"
	"genjobs/internal/emulator"
	"genjobs/internal/job"
	"genjobs/internal/member"
	"genjobs/internal/store/accountsdb"
)

// Chromium is Debian's browser, which `make test` installs where it is
// missing (CHROMIUM overrides the path).
func chromium() string {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	return "/usr/bin/chromium"
}

// screenshots go under .local/ (not tracked), one PNG per page the
// journey visits.
func screenshotDir(t *testing.T) string {
	root, err := emulator.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, ".local", "screenshots")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestTheConsoleInABrowser walks the console's journey in Chromium against
// the local stack: the demo owner signs in, creates a token and reads it
// once (a reload makes no other and shows it no more), calls the API with
// it, revokes it, switches API access off and on,
// tops up 25 USD through the Stripe double, starts another and cancels it
// on the checkout page, reads the usage chart, signs out; a member then
// sees no create or revoke action, opens the Jobs tab and an image job
// whose output image loads, adds an authenticator app on the
// security page (QR code, first code) and signs in with a code. Before
// that the member runs model-e-4 from its playground and lands on the
// job's page; the compute units the job charges are the price the form
// showed.
func TestTheConsoleInABrowser(t *testing.T) {
	if _, err := os.Stat(chromium()); err != nil {
		t.Fatalf("no Chromium at %s (make test installs Debian's chromium; CHROMIUM names another): %v", chromium(), err)
	}
	s, _ := signedIn(t, member.Member) // the member of the last step
	ctx := context.Background()
	ownerFile := filepath.Join(t.TempDir(), "demo-owner.json")
	if err := s.Local.SeedDemoOwner(ctx, s.Store, ownerFile); err != nil {
		t.Fatal(err)
	}
	var owner struct{ Email, Password string }
	b, _ := os.ReadFile(ownerFile)
	if err := json.Unmarshal(b, &owner); err != nil || owner.Email == "" {
		t.Fatalf("demo-owner.json: %s %v", b, err)
	}
	// A completed job, so that usage has a bar, and an image job for the
	// jobs pages.
	waitEnded(t, s, createJob(t, s))
	imageJob := createImageJob(t, s, s.Token)
	waitEnded(t, s, imageJob)
	// Compute units for the playground's run.
	if _, err := accountsdb.New(s.Store).SetPlan(ctx, devstack.DemoWorkspace, 1000, time.Now()); err != nil {
		t.Fatal(err)
	}

	c := startChrome(t, 1280, 900)
	browser, do, text, shot := c.browser, c.do, c.text, c.shot
	html := func() string {
		t.Helper()
		stepCtx, cancel := context.WithTimeout(browser, 20*time.Second)
		defer cancel()
		v, err := chromedp.Run(stepCtx, chromedp.OuterHTML(chromedp.CSS("main")))
		if err != nil {
			t.Fatalf("read the page: %v", err)
		}
		return v
	}
	css := func(sel string) chromedp.CSS { return chromedp.CSS(sel) }
	app := s.URL + "/app"

	// The first action starts the browser, without a deadline of its own.
	if err := chromedp.Do(browser, chromedp.Navigate(app)); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	do("sign in",
		chromedp.WaitVisible(css(`input[name=email]`)),
		shot("01-sign-in"),
		chromedp.SendKeys(css(`input[name=email]`), owner.Email),
		chromedp.SendKeys(css(`input[name=password]`), owner.Password),
		chromedp.Submit(css(`input[name=password]`)),
		chromedp.WaitVisible(css(`#create-token`)),
		shot("02-tokens"),
	)

	do("create a token",
		chromedp.SendKeys(css(`#create-token input[name=name]`), "browser test"),
		chromedp.Submit(css(`#create-token input[name=name]`)),
		chromedp.WaitVisible(css(`#new-token-value`)),
		shot("03-token-created"),
	)
	token := text(`#new-token-value`)
	if !strings.HasPrefix(token, auth.TokenPrefix) || len(token) != len(auth.TokenPrefix)+43 {
		t.Fatalf("the page shows %q as the token", token)
	}
	if code := api(t, s, token, "/jobs"); code != http.StatusOK {
		t.Fatalf("GET /jobs with the token from the page: %d", code)
	}

	// The form posted, redirected, and the page after it showed the value:
	// reloading that page posts nothing again and shows the value no more.
	do("reload the page that showed it", chromedp.Reload(), chromedp.WaitVisible(css(`#tokens`)), shot("03b-token-reloaded"))
	if body := html(); strings.Contains(body, `id="new-token-value"`) || !strings.Contains(body, `id="token-shown-once"`) {
		t.Error("the reloaded page shows a token value again, or does not say the value was shown once")
	}
	made := 0
	for _, tk := range tokens(t, s, devstack.DemoWorkspace) {
		if tk.Name == "browser test" {
			made++
		}
	}
	if made != 1 {
		t.Errorf("%d tokens named \"browser test\" after creating one and reloading; want 1", made)
	}
	do("the tokens page again", chromedp.Navigate(app+"/settings/api-tokens"), chromedp.WaitVisible(css(`#tokens`)))
	if body := html(); strings.Contains(body, token) {
		t.Error("the token is shown again")
	}
	do("revoke it",
		// The newest token is listed first.
		chromedp.Click(css(`#tokens tbody tr:first-child a.danger-quiet`)),
		chromedp.WaitVisible(css(`#confirm-revoke`)),
		shot("04-revoke-confirm"),
		chromedp.Click(css(`#confirm-revoke`)),
		chromedp.WaitVisible(css(`.notice`)),
		shot("05-token-revoked"),
	)
	deadline := time.Now().Add(auth.MaxCacheAge + time.Second)
	for api(t, s, token, "/jobs") != http.StatusUnauthorized {
		if time.Now().After(deadline) {
			t.Fatal("the revoked token still works after 5 seconds")
		}
		time.Sleep(200 * time.Millisecond)
	}

	// The page before the click shows a notice too: wait for the new state.
	do("API access off", chromedp.Click(css(`#api-toggle`)), chromedp.WaitVisible(css(`#api-status.off`)), chromedp.WaitVisible(css(`.notice`)), shot("06-api-off"))
	if status := text(`#api-status`); status != "Off" || apiEnabled(t, s, devstack.DemoWorkspace) {
		t.Errorf("after switching off: the page says %q", status)
	}
	do("API access on", chromedp.Click(css(`#api-toggle`)), chromedp.WaitVisible(css(`#api-status.on`)), chromedp.WaitVisible(css(`.notice`)))
	if status := text(`#api-status`); status != "On" || !apiEnabled(t, s, devstack.DemoWorkspace) {
		t.Errorf("after switching on: the page says %q", status)
	}

	do("billing", chromedp.Navigate(app+"/settings/billing"), chromedp.WaitVisible(css(`#available`)), shot("07-billing"))
	before := text(`#available`)
	do("top up 25 USD",
		chromedp.Click(css(`#preset-25`)),
		chromedp.WaitVisible(css(`button.pay`)),
		shot("08-stripe-checkout"),
		chromedp.Click(css(`button.pay`)),
		chromedp.WaitVisible(css(`#checkout-result`)),
		shot("09-payment-received"),
	)
	result, after := text(`#checkout-result`), text(`#available`)
	if !strings.Contains(result, "Payment received: 25.00 USD") || dollars(t, after)-dollars(t, before) != 25*billing.USD {
		t.Errorf("after paying 25 USD: %q, available %s -> %s", result, before, after)
	}

	// Cancel on the checkout page: back on billing, told nothing was
	// charged, the top-up cancelled and the balance as it was.
	do("top up 10 USD, then cancel",
		chromedp.Click(css(`#preset-10`)),
		chromedp.WaitVisible(css(`button.cancel`)),
		chromedp.Click(css(`button.cancel`)),
		chromedp.WaitVisible(css(`#checkout-result`)),
		shot("09b-checkout-cancelled"),
	)
	result, left := text(`#checkout-result`), text(`#available`)
	if !strings.Contains(result, "nothing was charged") || left != after {
		t.Errorf("after cancelling at checkout: %q, available %s -> %s", result, after, left)
	}
	if row := text(`#topups tbody tr:first-child`); !strings.Contains(row, "Cancelled") || !strings.Contains(row, "10.00") {
		t.Errorf("the newest top-up after cancelling: %q; want it cancelled", row)
	}

	do("usage", chromedp.Navigate(app+"/settings/usage"), chromedp.WaitVisible(css(`#usage-chart`)), shot("10-usage"))
	stepCtx, stop := context.WithTimeout(browser, 20*time.Second)
	bars, err := chromedp.Run(stepCtx, chromedp.Evaluate[int](`[...document.querySelectorAll('#usage-chart rect.bar')].filter(r => r.height.baseVal.value > 0).length`))
	stop()
	if err != nil || bars != 1 {
		t.Errorf("the chart shows %d bars with a height (%v); one day has a completed job", bars, err)
	}
	do("members", chromedp.Navigate(app+"/settings/members"), chromedp.WaitVisible(css(`#members`)), shot("11-members"))
	do("on a phone",
		chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile),
		chromedp.Navigate(app+"/settings/billing"), chromedp.WaitVisible(css(`#available`)), shot("12-billing-phone"),
		chromedp.Navigate(app+"/settings/usage"), chromedp.WaitVisible(css(`#usage-chart-compact`)), shot("13-usage-phone"),
		chromedp.EmulateReset(),
	)

	do("sign out",
		chromedp.Click(css(`#sign-out`)),
		chromedp.WaitVisible(css(`input[name=email]`)),
		chromedp.Navigate(app+"/settings/api-tokens"),
		chromedp.WaitVisible(css(`input[name=email]`)),
	)
	do("as a member",
		chromedp.SendKeys(css(`input[name=email]`), "member@example.com"),
		chromedp.SendKeys(css(`input[name=password]`), password),
		chromedp.Submit(css(`input[name=password]`)),
		chromedp.WaitVisible(css(`#tokens`)),
		shot("14-member-tokens"),
	)
	body := html()
	for _, action := range []string{`id="create-token"`, ">Revoke<", `id="api-toggle"`} {
		if strings.Contains(body, action) {
			t.Errorf("a member's tokens page shows %s", action)
		}
	}

	// The member opens the Jobs tab and the image job: its output image
	// loads from the results store, which the CSP allows.
	do("jobs pages",
		chromedp.Click(css(`nav.tabs a[href="/app/jobs"]`)),
		chromedp.WaitVisible(css(`#job-`+imageJob+` img`)),
		shot("14b-jobs"),
		chromedp.Click(css(`#job-`+imageJob+` a.status`)),
		chromedp.WaitVisible(css(`#job-outputs img`)),
	)
	// imageLoaded waits until the job page's output image has loaded or
	// failed, at most 10 s.
	imageLoaded := func(what string) {
		t.Helper()
		loaded := false
		for range 100 {
			stepCtx, stop := context.WithTimeout(browser, 20*time.Second)
			state, err := chromedp.Run(stepCtx, chromedp.Evaluate[string](`(() => { const i = document.querySelector('#job-outputs img'); return !i.complete ? 'loading' : i.naturalWidth > 0 ? 'loaded' : 'broken' })()`))
			stop()
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if loaded = state == "loaded"; state != "loading" {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if !loaded {
			t.Errorf("%s did not load: a URL the results store or the page's CSP refused", what)
		}
	}
	imageLoaded("the API job's output image")
	do("the job page", shot("14c-job"))
	// The job an API token made says so on the list, with its cost in USD.
	do("back to the list", chromedp.Navigate(app+"/jobs"), chromedp.WaitVisible(css(`#job-`+imageJob)))
	if who, cost := text(`#job-`+imageJob+` td.source`), text(`#job-`+imageJob+` [data-cell="cost"]`); !strings.HasPrefix(who, "api") || !strings.HasPrefix(cost, "$") {
		t.Errorf("the API token's job shows source %q and cost %q; want api and a USD amount", who, cost)
	}

	// The member runs model-e-4 from its playground twice while the
	// workspace has no running slot (its jobs wait, backlogged), cancels
	// the second from its page, then watches the first one's row on the
	// jobs list turn completed without a reload once slots are back. The
	// price each form showed (refreshed by the page's script as fields are
	// typed) is what the completed job charges, in compute units; the
	// cancelled one charges nothing.
	ws := devstack.DemoWorkspace
	cuBefore := units(t, s, ws)
	setRunning(t, s, ws, 0)
	eval := func(js string) string {
		t.Helper()
		stepCtx, cancel := context.WithTimeout(browser, 20*time.Second)
		defer cancel()
		v, err := chromedp.Run(stepCtx, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		return v
	}
	// until evaluates js every 100 ms until it is "true", at most 30 s.
	until := func(what, js string) {
		t.Helper()
		for range 300 {
			if eval(js) == "true" {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Fatalf("%s: still not so after 30 s", what)
	}
	run := func(name string) (id, shown string) {
		t.Helper()
		do(name+": fill in",
			chromedp.WaitVisible(css(`#playground`)),
			chromedp.SendKeys(css(`#in-prompt`), "a lighthouse at dusk"),
			chromedp.SendKeys(css(`#in-width`), "256"),
			chromedp.SendKeys(css(`#in-height`), "192"),
			chromedp.WaitVisible(css(`#price[data-units]:not([data-units=""])`)),
			shot("14e-"+name),
		)
		shown = eval(`document.querySelector('#price').dataset.units`)
		do(name+": run", chromedp.Click(css(`#run`)), chromedp.WaitVisible(css(`#job-status`)))
		return strings.TrimPrefix(eval(`location.pathname`), "/app/jobs/"), shown
	}
	do("the models page",
		chromedp.Click(css(`nav.tabs a[href="/app/models"]`)),
		chromedp.WaitVisible(css(`#image-model-e-4`)),
		shot("14d-models"),
		chromedp.Click(css(`#image-model-e-4 a.button.primary`)),
	)
	played, shownPrice := run("playground")
	do("the playground again", chromedp.Navigate(app+"/models/image/vendor-b/model-e-4"))
	cancelled, _ := run("playground-again")
	if played == cancelled || !job.ValidID(played) || !job.ValidID(cancelled) {
		t.Fatalf("the two runs led to jobs %q and %q", played, cancelled)
	}
	do("cancel the second run", chromedp.Click(css(`#job-cancel`)))
	until("the cancelled job's page", `document.querySelector('#job-status') && document.querySelector('#job-status').textContent.trim() === 'cancelled' ? 'true' : 'false'`)
	do("the jobs list", chromedp.Navigate(app+"/jobs"), chromedp.WaitVisible(css(`#job-`+played)))
	if st := eval(`document.querySelector('#job-` + played + `').dataset.status`); st != "backlogged" {
		t.Fatalf("the first run's row is %s; want backlogged while there is no running slot", st)
	}
	eval(`window.sameDocument = 'yes'`)
	setRunning(t, s, ws, 5)
	until("the first run's row", `document.querySelector('#job-`+played+` [data-cell="state"]').textContent.trim() === 'completed' ? 'true' : 'false'`)
	if eval(`window.sameDocument || 'reloaded'`) != "yes" {
		t.Error("the jobs list was reloaded: its row should change in place")
	}
	do("the row, completed", shot("14f-jobs-live"))
	if currency, price := jobPrice(t, s, played); currency != "cu" || price != shownPrice {
		t.Errorf("the playground's job is priced %s %s; the form showed %s CU", price, currency, shownPrice)
	}
	cuAfter := units(t, s, ws)
	if spent := cuAfter.Spent - cuBefore.Spent; spent.String() != shownPrice || cuAfter.Reserved != cuBefore.Reserved {
		t.Errorf("the two runs (one completed, one cancelled) charged %d CU and hold %d; the form showed %s, and a cancelled run charges nothing",
			spent, cuAfter.Reserved-cuBefore.Reserved, shownPrice)
	}
	do("the played job's page", chromedp.Click(css(`#job-`+played+` a.status`)), chromedp.WaitVisible(css(`#job-outputs img`)), shot("14g-played-job"))
	imageLoaded("the playground job's output image")

	// Out of compute units, Run says so and makes nothing; the USD balance
	// is not used instead.
	setUnits(t, s, ws, 0)
	jobsBefore, usdBefore := len(jobsOf(t, s, ws)), usdBalance(t, s, ws)
	do("the playground without units", chromedp.Navigate(app+"/models/image/vendor-b/model-e-4"))
	do("run without units",
		chromedp.WaitVisible(css(`#playground`)),
		chromedp.SendKeys(css(`#in-prompt`), "a lighthouse at dawn"),
		chromedp.SendKeys(css(`#in-width`), "256"),
		chromedp.SendKeys(css(`#in-height`), "192"),
		chromedp.Click(css(`#run`)),
		chromedp.WaitVisible(css(`#run-problem`)),
		shot("14h-out-of-units"),
	)
	if msg := text(`#run-problem`); msg != "Your workspace has run out of compute units." {
		t.Errorf("a run without compute units says %q", msg)
	}
	if n, usd := len(jobsOf(t, s, ws)), usdBalance(t, s, ws); n != jobsBefore || usd != usdBefore {
		t.Errorf("a run without compute units: %d jobs (was %d), USD balance %+v (was %+v)", n, jobsBefore, usd, usdBefore)
	}

	// The member adds an authenticator on the security page, and the next
	// sign-in asks for its code.
	do("security page",
		chromedp.Click(css(`#security-link`)),
		chromedp.WaitVisible(css(`#mfa-start`)),
		shot("15-security"),
		chromedp.SendKeys(css(`#mfa-start input[name=password]`), password),
		chromedp.Submit(css(`#mfa-start input[name=password]`)),
		chromedp.WaitVisible(css(`#totp-qr`)),
		shot("16-mfa-qr"),
	)
	stepCtx, stop = context.WithTimeout(browser, 20*time.Second)
	drawn, err := chromedp.Run(stepCtx, chromedp.Evaluate[bool](`(() => { const i = document.querySelector('#totp-qr'); return i.complete && i.naturalWidth > 0 })()`))
	stop()
	if err != nil || !drawn {
		t.Errorf("the QR code is not drawn (%v): a data: image the page or its CSP refused", err)
	}
	secret := text(`#totp-secret`)
	do("the first code",
		chromedp.SendKeys(css(`#mfa-confirm input[name=code]`), code(t, secret)),
		chromedp.Submit(css(`#mfa-confirm input[name=code]`)),
		chromedp.WaitVisible(css(`#mfa-disable`)),
		shot("17-mfa-on"),
	)
	do("sign out and in with a code",
		chromedp.Click(css(`#sign-out`)),
		chromedp.WaitVisible(css(`input[name=email]`)),
		chromedp.SendKeys(css(`input[name=email]`), "member@example.com"),
		chromedp.SendKeys(css(`input[name=password]`), password),
		chromedp.Submit(css(`input[name=password]`)),
		chromedp.WaitVisible(css(`#mfa-form`)),
		shot("18-mfa-code"),
	)
	do("the code at sign-in", // taken now, fresh
		chromedp.SendKeys(css(`#mfa-form input[name=code]`), code(t, secret)),
		chromedp.Submit(css(`#mfa-form input[name=code]`)),
		chromedp.WaitVisible(css(`#tokens`)),
	)
	t.Logf("screenshots in %s", c.shots)
}

// dollars reads "$1,234.50" as Micros.
func dollars(t *testing.T, s string) billing.Micros {
	t.Helper()
	m, err := billing.ParseUSD(strings.NewReplacer("$", "", ",", "").Replace(strings.TrimSpace(s)))
	if err != nil {
		t.Fatalf("%q is no amount: %v", s, err)
	}
	return m
}
