package console

import (
	"errors"
	"net/http"

	"genjobs/internal/console/money"
)

// moneyPage serves a step of the billing and usage pages (money.Pages) to
// a signed-in person, in the tab nav; the billing page shows the notice of
// a redirect after a change (?done=).
func (c *Console) moneyPage(nav string, step func(*http.Request, money.Session) (money.Shown, error)) func(http.ResponseWriter, *http.Request, *request) {
	return func(w http.ResponseWriter, r *http.Request, req *request) {
		s, err := step(r, money.Session{Acting: req.acting(), Email: req.session.Email})
		var failed *money.Internal
		switch {
		case errors.As(err, &failed):
			c.internalError(w, r, failed.What, failed.Err)
		case err != nil:
			c.internalError(w, r, nav+" page", err)
		case s.Failed != nil:
			c.fail(w, r, s.Failed.Status, s.Failed.Message)
		case s.Redirect != "":
			http.Redirect(w, r, s.Redirect, http.StatusSeeOther)
		case s.Write != nil:
			s.Write(w)
		default:
			v := c.view(req, nav, s.Title)
			v.Refresh, v.RefreshTo = s.Refresh, s.RefreshTo
			if nav == "billing" {
				v.Notice = notices[r.URL.Query().Get("done")]
			}
			c.show(w, r, s.Status, v, s.Page)
		}
	}
}
