package console_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"genjobs/infra/local/devstack"
	"genjobs/internal/job"
	"genjobs/internal/member"
	"genjobs/internal/store/accountsdb"
)

// In Chromium, an owner buys a pack of 1,000 compute units from the billing
// page: the Stripe double's checkout shows "Compute units" at 10.00 USD,
// Pay brings the owner back to a page saying the units arrived, with the
// balance 1,000 CU higher and the USD balance as it was; the usage page
// shows the units the application's jobs spent by person.
func TestAPackOfComputeUnitsInABrowser(t *testing.T) {
	if _, err := os.Stat(chromium()); err != nil {
		t.Fatalf("no Chromium at %s: %v", chromium(), err)
	}
	s, _ := signedIn(t, member.Owner)
	if _, err := accountsdb.New(s.Store).SetPlan(context.Background(), devstack.DemoWorkspace, 500, time.Now()); err != nil {
		t.Fatal(err)
	}
	appJob(t, s.Store, "ana@example.com", 30, job.Completed)

	c := startChrome(t, 1280, 900)
	css := func(sel string) chromedp.CSS { return chromedp.CSS(sel) }
	app := s.URL + "/app"
	if err := chromedp.Do(c.browser, chromedp.Navigate(app)); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	c.do("sign in",
		chromedp.WaitVisible(css(`input[name=email]`)),
		chromedp.SendKeys(css(`input[name=email]`), "owner@example.com"),
		chromedp.SendKeys(css(`input[name=password]`), password),
		chromedp.Submit(css(`input[name=password]`)),
		chromedp.WaitVisible(css(`#create-token`)),
	)
	c.do("billing", chromedp.Navigate(app+"/settings/billing"), chromedp.WaitVisible(css(`#pack-1000`)), c.shot("20-billing-units"))
	usdBefore := c.text(`#available`)
	if got := c.text(`#cu-available`); got != "470 CU" {
		t.Errorf("compute units before: %q; want 470 CU (the plan's 500, 30 spent)", got)
	}
	if got := c.text(`#cu-plan`); got != "500 CU" {
		t.Errorf("the plan: %q; want 500 CU", got)
	}
	c.do("buy the 1,000 pack", chromedp.Click(css(`#pack-1000`)), chromedp.WaitVisible(css(`button.pay`)), c.shot("21-checkout-pack"))
	if got := c.text(`main`); !strings.Contains(got, "Compute units") || !strings.Contains(got, "10.00 USD") {
		t.Errorf("the checkout page: %q; want Compute units at 10.00 USD", got)
	}
	c.do("pay", chromedp.Click(css(`button.pay`)), chromedp.WaitVisible(css(`#checkout-result`)), c.shot("22-pack-received"))
	if got := c.text(`#checkout-result`); !strings.Contains(got, "1,000 compute units were added") {
		t.Errorf("after paying: %q", got)
	}
	if got := c.text(`#cu-available`); got != "1,470 CU" {
		t.Errorf("compute units after the pack: %q; want 1,470 CU", got)
	}
	if got := c.text(`#available`); got != usdBefore {
		t.Errorf("the USD balance moved: %s -> %s", usdBefore, got)
	}
	if row := c.text(`#topups tbody tr:first-child`); !strings.Contains(row, "1,000 CU") || !strings.Contains(row, "Paid") {
		t.Errorf("the newest row: %q; want the 1,000 CU pack, paid", row)
	}
	c.do("usage", chromedp.Navigate(app+"/settings/usage"), chromedp.WaitVisible(css(`#usage-people`)), c.shot("23-usage-units"))
	if got := c.text(`#usage-cu-total`); got != "30 CU" {
		t.Errorf("usage: %q; want 30 CU", got)
	}
	if got := c.text(`#usage-people tbody tr:first-child`); !strings.Contains(got, "ana@example.com") || !strings.Contains(got, "30") {
		t.Errorf("by person: %q; want ana@example.com, 30", got)
	}
	audit(t, s)
}
