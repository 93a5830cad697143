package playground

import (
	"net/http"
	"net/url"
	"time"

	"github.com/a-h/templ"

	"genjobs/internal/catalog"
	"genjobs/internal/catalog/form"
	"genjobs/internal/console/pages"
	"genjobs/internal/httpapi"
)

// Pages makes the models pages for the console, which signs the person
// in, checks the form's CSRF token and writes what a step answers (Shown).
type Pages struct {
	Catalog *catalog.Catalog
	Prices  Prices
	API     http.Handler // POST /generate/... and POST /assets (Runner)
	APIURL  string       // the API's public address (BASE_URL); empty: the request's domain
	Script  string       // the playground's script's URL
	Now     func() time.Time
}

// Session is what a step needs of the signed-in request.
type Session struct {
	CSRF   string
	Person httpapi.Person // in the workspace they act in
}

// Shown is what a step answers: a page (Title, Page at Status), a
// redirect, the 404 page, or an API's failure (a 5xx it has logged).
type Shown struct {
	Title    string
	Page     templ.Component
	Status   int
	Redirect string
	NotFound bool
	Failed   *Answer
}

// endpoint is the model r's path names.
func (p *Pages) endpoint(r *http.Request) (*catalog.Endpoint, bool) {
	return p.Catalog.Lookup(r.PathValue("kind"), r.PathValue("vendor"), r.PathValue("model"))
}

// Models is /app/models: every endpoint with its fields, price and
// snippets.
func (p *Pages) Models(r *http.Request, _ Session) (Shown, error) {
	models, err := DescribeAll(p.Catalog, p.Prices, httpapi.PublicBaseURL(p.APIURL, r))
	return Shown{Title: "Models", Page: pages.Models(models), Status: http.StatusOK}, err
}

// Playground is a model's page with its form filled with the defaults.
func (p *Pages) Playground(r *http.Request, s Session) (Shown, error) {
	e, ok := p.endpoint(r)
	if !ok {
		return Shown{NotFound: true}, nil
	}
	return p.page(r, s, e, nil, nil, "", NewKey(), http.StatusOK)
}

// Price is the price of the form's values (r's query), for the page's
// script; nil for an unknown model.
func (p *Pages) Price(r *http.Request) (*Quoted, error) {
	e, ok := p.endpoint(r)
	if !ok {
		return nil, nil
	}
	q, err := QuoteQuery(e, r.URL.Query(), p.Prices, p.Now())
	return &q, err
}

// Run runs the posted form (Runner.Run) and leads to the job's page, or
// shows the form again with the API's refusal. "Update the price"
// (action=price) only shows the form's price.
func (p *Pages) Run(r *http.Request, s Session) (Shown, error) {
	e, ok := p.endpoint(r)
	if !ok {
		return Shown{NotFound: true}, nil
	}
	fields, err := form.Fields(e)
	if err != nil {
		return Shown{}, err
	}
	if r.PostForm.Get("action") == "price" {
		values, key, files := Filled(r, fields)
		return p.page(r, s, e, values, Counts(files), "", key, http.StatusOK)
	}
	out, err := Runner{API: p.API, Prices: p.Prices, Now: p.Now}.Run(r, s.Person, e, fields)
	switch {
	case err != nil:
		return Shown{}, err
	case out.Failed != nil:
		return Shown{Failed: out.Failed}, nil
	case out.JobID != "":
		return Shown{Redirect: httpapi.AppPath + "/jobs/" + out.JobID}, nil
	}
	return p.page(r, s, e, out.Values, out.Files, out.Problem, out.Key, out.Status)
}

// page is e's playground (Page) with values (nil: the defaults), files,
// the API's refusal and the form's key.
func (p *Pages) page(r *http.Request, s Session, e *catalog.Endpoint, values url.Values, files map[string]int, problem, key string, status int) (Shown, error) {
	m, err := Describe(e, p.Prices, httpapi.PublicBaseURL(p.APIURL, r))
	if err != nil {
		return Shown{}, err
	}
	pg, err := Page(m, e, values, files, problem, p.Prices, p.Now())
	pg.CSRF, pg.Workspace, pg.Key, pg.Script = s.CSRF, s.Person.WorkspaceID, key, p.Script
	return Shown{Title: m.Title, Page: pages.PlaygroundPage(pg), Status: status}, err
}
