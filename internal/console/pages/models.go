package pages

import (
	"encoding/json"

	"genjobs/internal/catalog/form"
)

// Model is one generation endpoint as the models pages show it: what it
// makes, its price rule, its fields from the JSON Schema that validates
// its requests (package form) and ready-to-paste snippets.
type Model struct {
	Path        string // the API's route, /generate/image/vendor-b/model-e-4
	Page        string // the playground's page, /app/models/image/vendor-b/model-e-4
	Anchor      string // the model's id on /app/models
	Title       string
	Description string
	Makes       string
	Takes       string
	Price       string // the price rule in USD (the price list's words)
	UnitsPerUSD int64
	Fields      []form.Field
	Snippets    []Snippet
}

// Snippet is one way to call the endpoint, ready to paste.
type Snippet struct {
	ID, Label, Code string
}

// Playground is a model's page: its form, filled with what was typed (or
// the defaults), the price of that, and the API's refusal.
type Playground struct {
	Model
	Inputs    []form.Input
	Action    string // where Run posts
	PriceURL  string // the console's JSON route the page's script asks for prices
	CSRF      string
	Workspace string
	Key       string // the rendered form's Idempotency-Key: a second Run makes no second job
	Units     string // the CU price of what is filled in; "" while it has none
	USD       string // the same in USD
	PriceNote string // why there is no price yet
	Problem   string // a refusal that names no field: out of compute units, too many jobs
	Script    string // the page's script: refreshes the price as fields change
}

// invalid is an input's aria-invalid: whether the API refused its value.
func invalid(in form.Input) string {
	if in.Problem != "" {
		return "true"
	}
	return "false"
}

// bound is a number input's min or max: "" for none.
func bound(n *json.Number) string {
	if n == nil {
		return ""
	}
	return n.String()
}
