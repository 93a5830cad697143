package console_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"genjobs/infra/local/devstack"
	"genjobs/infra/local/devstack/devstacktest"
	"genjobs/internal/member"
	"genjobs/internal/store/membersdb"
)

// TestGettingBackInInABrowser walks, in Chromium against the local stack,
// the two ways back in: a member who forgot their password follows
// "Forgot your password?", gets a code (moto's, from the stack's mailbox,
// as from their email) and chooses a new password, then signs in with it;
// an owner resets another member's password from the members page, after
// a confirmation, and sees the temporary password once; that member signs
// in with it and chooses their own.
func TestGettingBackInInABrowser(t *testing.T) {
	if _, err := os.Stat(chromium()); err != nil {
		t.Fatalf("no Chromium at %s (make test installs Debian's chromium; CHROMIUM names another): %v", chromium(), err)
	}
	s := devstacktest.Start(t)
	person(t, s, "forgetful@example.com", devstack.DemoWorkspace, member.Member)
	person(t, s, "owner@example.com", devstack.DemoWorkspace, member.Owner)
	person(t, s, "locked@example.com", devstack.DemoWorkspace, member.Member)

	c := startChrome(t, 1280, 900)
	browser, do, text, shot := c.browser, c.do, c.text, c.shot
	css := func(sel string) chromedp.CSS { return chromedp.CSS(sel) }
	app := s.URL + "/app"
	signIn := func(step, email, password, wait string) {
		t.Helper()
		do(step,
			chromedp.WaitVisible(css(`input[name=password]`)),
			chromedp.SendKeys(css(`input[name=email]`), email),
			chromedp.SendKeys(css(`input[name=password]`), password),
			chromedp.Submit(css(`input[name=password]`)),
			chromedp.WaitVisible(css(wait)),
		)
	}

	if err := chromedp.Do(browser, chromedp.Navigate(app+"/sign-in")); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	do("forgot your password?",
		chromedp.Click(css(`#forgot-password`)),
		chromedp.WaitVisible(css(`#forgot-form`)),
		shot("20-forgot-password"),
		chromedp.SendKeys(css(`#forgot-form input[name=email]`), "forgetful@example.com"),
		chromedp.Submit(css(`#forgot-form input[name=email]`)),
		chromedp.WaitVisible(css(`#reset-form`)),
		shot("21-enter-the-code"),
	)
	code := s.Local.Mail.Code("forgetful@example.com")
	if code == "" {
		t.Fatal("no code was sent to forgetful@example.com")
	}
	do("a wrong code",
		chromedp.SendKeys(css(`#reset-form input[name=code]`), "moto-confirmation-code:000000"),
		chromedp.SendKeys(css(`#reset-form input[name=password]`), "Remembered-Now-7!"),
		chromedp.SendKeys(css(`#reset-form input[name=password_again]`), "Remembered-Now-7!"),
		chromedp.Submit(css(`#reset-form input[name=code]`)),
		chromedp.WaitVisible(css(`#reset-error`)),
	)
	if msg := text(`#reset-error`); !strings.Contains(msg, "code") {
		t.Errorf("a wrong code says %q", msg)
	}
	do("the emailed code",
		chromedp.SendKeys(css(`#reset-form input[name=code]`), code),
		chromedp.SendKeys(css(`#reset-form input[name=password]`), "Remembered-Now-7!"),
		chromedp.SendKeys(css(`#reset-form input[name=password_again]`), "Remembered-Now-7!"),
		chromedp.Submit(css(`#reset-form input[name=code]`)),
		chromedp.WaitVisible(css(`.notice`)),
		shot("22-password-changed"),
	)
	if notice := text(`.notice`); !strings.Contains(notice, "Your password is changed") {
		t.Errorf("after the reset the sign-in page says %q", notice)
	}
	signIn("sign in with the new password", "forgetful@example.com", "Remembered-Now-7!", `#tokens`)
	do("sign out", chromedp.Click(css(`#sign-out`)), chromedp.WaitVisible(css(`input[name=email]`)))

	signIn("the owner signs in", "owner@example.com", password, `#tokens`)
	do("reset a member's password",
		chromedp.Navigate(app+"/settings/members"),
		chromedp.WaitVisible(css(`#members`)),
		chromedp.Click(css(`a[href$="/reset-password"][href*="`+userID(t, s, "locked@example.com")+`"]`)),
		chromedp.WaitVisible(css(`#confirm-reset`)),
		shot("23-reset-confirm"),
		chromedp.Click(css(`#confirm-reset`)),
		chromedp.WaitVisible(css(`#temp-password`)),
		shot("24-temporary-password"),
	)
	temp := text(`#temp-password`)
	if len(temp) < 12 {
		t.Fatalf("the page shows %q as the temporary password", temp)
	}
	do("the page again", chromedp.Reload(), chromedp.WaitVisible(css(`#reset-shown-once`)))
	do("sign out", chromedp.Click(css(`#sign-out`)), chromedp.WaitVisible(css(`input[name=email]`)))
	signIn("the member signs in with it", "locked@example.com", temp, `input[name=password_again]`)
	do("and chooses their own",
		chromedp.SendKeys(css(`input[name=password]`), "Locked-No-More-8!"),
		chromedp.SendKeys(css(`input[name=password_again]`), "Locked-No-More-8!"),
		chromedp.Submit(css(`input[name=password_again]`)),
		chromedp.WaitVisible(css(`#tokens`)),
	)
	t.Logf("screenshots in %s", c.shots)
}

// userID is the user id of ws's member email.
func userID(t *testing.T, s *devstacktest.Stack, email string) string {
	t.Helper()
	ms, err := membersdb.New(s.Store).Members(context.Background(), devstack.DemoWorkspace)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.Email == email {
			return m.UserID
		}
	}
	t.Fatalf("%s is no member", email)
	return ""
}
