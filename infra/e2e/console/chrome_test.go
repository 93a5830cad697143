package console_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chrome is Debian's Chromium for one test, headless, closed when the test
// ends. Loopback only: no name resolves but the stack's address. Each step
// has 20 seconds.
type chrome struct {
	t       *testing.T
	browser context.Context
	shots   string // where shot writes its screenshots
}

func startChrome(t *testing.T, width, height int) *chrome {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium()),
		chromedp.DisableGPU,
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"),
		chromedp.WindowSize(width, height),
	)
	alloc, stopAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	browser, stopBrowser := chromedp.NewContext(alloc)
	t.Cleanup(func() { stopBrowser(); stopAlloc() })
	return &chrome{t: t, browser: browser, shots: screenshotDir(t)}
}

// do runs one step's actions, failing the test with step's name.
func (c *chrome) do(step string, actions ...chromedp.Action[chromedp.Void]) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.browser, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		c.t.Fatalf("%s: %v", step, err)
	}
}

// text is the trimmed text of the element sel selects.
func (c *chrome) text(sel string) string {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.browser, 20*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		c.t.Fatalf("read %s: %v", sel, err)
	}
	return strings.TrimSpace(v)
}

// shot saves a screenshot of the whole page as name.png.
func (c *chrome) shot(name string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		png, err := chromedp.FullScreenshot(100)(ctx, tg)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(c.shots, name+".png"), png, 0o644)
	})
}
