package console_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"genjobs/infra/local/devstack"
	"genjobs/internal/job"
	"genjobs/internal/member"
)

// TestAJobsRowTurnsCompletedWithoutAReload: in Chromium, /app/jobs shows a
// queued job; the job completes; its row says completed, and its cost and
// preview follow, while the page was never reloaded (jobs.js polling the
// console's poll route under the CSP), and the script stops asking.
func TestAJobsRowTurnsCompletedWithoutAReload(t *testing.T) {
	if _, err := os.Stat(chromium()); err != nil {
		t.Fatalf("no Chromium at %s (make test installs Debian's chromium; CHROMIUM names another): %v", chromium(), err)
	}
	s, _ := signedIn(t, member.Member)
	j := storedJob(t, s, devstack.DemoWorkspace, imageEndpoint, job.SourceAPI, "", "demo", time.Now())

	c := startChrome(t, 1280, 900)
	css := func(sel string) chromedp.CSS { return chromedp.CSS(sel) }
	if err := chromedp.Do(c.browser, chromedp.Navigate(s.URL+"/app/sign-in")); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	c.do("sign in",
		chromedp.WaitVisible(css(`input[name=email]`)),
		chromedp.SendKeys(css(`input[name=email]`), string(member.Member)+"@example.com"),
		chromedp.SendKeys(css(`input[name=password]`), password),
		chromedp.Submit(css(`input[name=password]`)),
		chromedp.WaitVisible(css(`nav.tabs`)),
	)
	row := `#job-` + j.ID
	c.do("the jobs page with the queued job",
		chromedp.Navigate(s.URL+"/app/jobs"),
		chromedp.WaitVisible(css(row+`[data-running] [data-cell=state]`)),
		// A mark on this document: a reload would start a new one without it.
		chromedp.Evaluate[chromedp.Void](`window.sameDocument = true`),
	)
	if got := c.text(row + ` [data-cell=state]`); got != "queued" {
		t.Fatalf("the row's status: %q; want queued", got)
	}

	if _, err := s.Store.Transition(context.Background(), j, job.Change{To: job.Completed, Outputs: []string{"results/" + j.ID + "/0.png"}}, time.Now()); err != nil {
		t.Fatal(err)
	}
	var state string
	for range 100 { // the script asks every 2 s: at most 20 s
		ctx, stop := context.WithTimeout(c.browser, 20*time.Second)
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('`+row+` [data-cell=state]').textContent`))
		stop()
		if err != nil {
			t.Fatalf("read the row: %v", err)
		}
		if state = v; state == "completed" {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if state != "completed" {
		t.Fatalf("the row still says %q; want completed without a reload", state)
	}
	ctx, stop := context.WithTimeout(c.browser, 20*time.Second)
	defer stop()
	same, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.sameDocument === true`))
	if err != nil || !same {
		t.Errorf("the page was reloaded (%v)", err)
	}
	running, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector('`+row+`').hasAttribute('data-running')`))
	if err != nil || running {
		t.Errorf("the completed row is still marked running (%v): the script would keep asking", err)
	}
	if got := c.text(row + ` [data-cell=cost]`); got != "$0.04" {
		t.Errorf("the row's cost: %q; want what it was charged", got)
	}
	c.do("the row's preview", chromedp.WaitVisible(css(row+` [data-cell=preview] img`)), c.shot("jobs-live-row"))
}
