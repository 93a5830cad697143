package console

import (
	"encoding/json"
	"net/http"

	"genjobs/internal/console/playground"
	"genjobs/internal/httpapi"
)

// models serves a step of the models pages (playground.Pages) to a
// signed-in person: /app/models, a model's playground, and its Run, which
// creates the job through the API's own creation handler in process, as
// the person, billed in compute units.
func (c *Console) models(step func(*http.Request, playground.Session) (playground.Shown, error)) func(http.ResponseWriter, *http.Request, *request) {
	return func(w http.ResponseWriter, r *http.Request, req *request) {
		s, err := step(r, playground.Session{CSRF: req.session.CSRF,
			Person: httpapi.Person{WorkspaceID: req.current.WorkspaceID, UserID: req.session.UserID, Email: req.session.Email}})
		switch {
		case err != nil:
			c.internalError(w, r, "models page", err)
		case s.NotFound:
			c.notFound(w, r)
		case s.Failed != nil && s.Failed.Status == http.StatusServiceUnavailable:
			// The API's handler has logged it, with the request's id.
			w.Header().Set("Retry-After", s.Failed.Header.Get("Retry-After"))
			c.fail(w, r, http.StatusServiceUnavailable, "A service the console depends on did not answer just now, so this was not done. Try again in a moment.")
		case s.Failed != nil:
			c.fail(w, r, http.StatusInternalServerError, "Something went wrong on our side. Nothing was changed unless the page says so; try again in a moment.")
		case s.Redirect != "":
			http.Redirect(w, r, s.Redirect, http.StatusSeeOther)
		default:
			c.show(w, r, s.Status, c.view(req, "models", s.Title), s.Page)
		}
	}
}

// priceRoute answers the price of the form's values (its query) as JSON,
// for the playground's script to show as fields change.
func (c *Console) priceRoute(w http.ResponseWriter, r *http.Request, _ *request) {
	q, err := c.play.Price(r)
	switch {
	case err != nil:
		c.internalError(w, r, "price a request", err)
	case q == nil:
		c.notFound(w, r)
	default:
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(q)
	}
}
