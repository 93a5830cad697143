package console

import (
	"encoding/json"
	"net/http"
	"net/url"

	"genjobs/internal/catalog"
	"genjobs/internal/catalog/form"
	"genjobs/internal/console/pages"
	"genjobs/internal/console/playground"
	"genjobs/internal/httpapi"
)

// endpoint is the model the path names; nil when there is none, the 404
// page written.
func (c *Console) endpoint(w http.ResponseWriter, r *http.Request) *catalog.Endpoint {
	e, ok := c.Catalog.Lookup(r.PathValue("kind"), r.PathValue("vendor"), r.PathValue("model"))
	if !ok {
		c.notFound(w, r)
	}
	return e
}

// model describes e for the models pages.
func (c *Console) model(r *http.Request, e *catalog.Endpoint) (pages.Model, error) {
	return playground.Describe(e, c.Prices, httpapi.PublicBaseURL(c.APIURL, r))
}

// modelsPage lists every endpoint with its fields, price and snippets.
func (c *Console) modelsPage(w http.ResponseWriter, r *http.Request, req *request) {
	models, err := playground.DescribeAll(c.Catalog, c.Prices, httpapi.PublicBaseURL(c.APIURL, r))
	if err != nil {
		c.internalError(w, r, "describe the models", err)
		return
	}
	c.show(w, r, http.StatusOK, c.view(req, "models", "Models"), pages.Models(models))
}

// playgroundPage is a model's form, filled with its defaults.
func (c *Console) playgroundPage(w http.ResponseWriter, r *http.Request, req *request) {
	e := c.endpoint(w, r)
	if e == nil {
		return
	}
	c.playground(w, r, req, e, nil, nil, "", playground.NewKey(), http.StatusOK)
}

// playground renders e's form (playground.Page) with values (nil: the
// defaults), files, the API's refusal and the form's key.
func (c *Console) playground(w http.ResponseWriter, r *http.Request, req *request, e *catalog.Endpoint,
	values url.Values, files map[string]int, problem, key string, status int) {
	m, err := c.model(r, e)
	var p pages.Playground
	if err == nil {
		p, err = playground.Page(m, e, values, files, problem, c.Prices, c.Clock.Now())
	}
	if err != nil {
		c.internalError(w, r, "show a playground", err)
		return
	}
	p.CSRF, p.Workspace, p.Key, p.Script = req.session.CSRF, req.current.WorkspaceID, key, c.playJS
	c.show(w, r, status, c.view(req, "models", m.Title), pages.PlaygroundPage(p))
}

// priceRoute answers the price of the form's values (its query) as JSON,
// for the playground's script to show as fields change.
func (c *Console) priceRoute(w http.ResponseWriter, r *http.Request, req *request) {
	e := c.endpoint(w, r)
	if e == nil {
		return
	}
	q, err := playground.QuoteQuery(e, r.URL.Query(), c.Prices, c.Clock.Now())
	if err != nil {
		c.internalError(w, r, "price a request", err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(q)
}

// run creates the job the form asks for through the API's own creation
// handler, in process, as the signed-in person (playground.Runner): billed
// in compute units to the workspace, with the form's Idempotency-Key (a
// second click answers the same job). A refusal shows the API's message;
// nothing is created. "Update the price" (action=price) only shows the
// form's price.
func (c *Console) run(w http.ResponseWriter, r *http.Request, req *request) {
	e := c.endpoint(w, r)
	if e == nil {
		return
	}
	fields, err := form.Fields(e)
	if err != nil {
		c.internalError(w, r, "describe a model", err)
		return
	}
	if r.PostForm.Get("action") == "price" {
		values, key, files := playground.Filled(r, fields)
		c.playground(w, r, req, e, values, playground.Counts(files), "", key, http.StatusOK)
		return
	}
	person := httpapi.Person{WorkspaceID: req.current.WorkspaceID, UserID: req.session.UserID, Email: req.session.Email}
	out, err := playground.Runner{API: c.API, Prices: c.Prices, Now: c.Clock.Now}.Run(r, person, e, fields)
	switch {
	case err != nil:
		c.internalError(w, r, "run a model", err)
	case out.Failed != nil && out.Failed.Status == http.StatusServiceUnavailable:
		// The API's handler has logged it, with the request's id.
		w.Header().Set("Retry-After", out.Failed.Header.Get("Retry-After"))
		c.fail(w, r, http.StatusServiceUnavailable, "A service the console depends on did not answer just now, so this was not done. Try again in a moment.")
	case out.Failed != nil:
		c.fail(w, r, http.StatusInternalServerError, "Something went wrong on our side. Nothing was changed unless the page says so; try again in a moment.")
	case out.JobID != "":
		http.Redirect(w, r, Base+"/jobs/"+out.JobID, http.StatusSeeOther)
	default:
		c.playground(w, r, req, e, out.Values, out.Files, out.Problem, out.Key, out.Status)
	}
}
