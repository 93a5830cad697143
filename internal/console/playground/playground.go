// Package playground is what the console's models pages and playground do
// besides rendering: describe an endpoint for people (its fields from the
// request schema, its price rule, snippets to call it), price a filled-in
// form as the API would, and send a run or an upload to the API's own
// handlers in process as the signed-in person. It imports no AWS package.
package playground

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"time"

	"genjobs/internal/asset"
	"genjobs/internal/billing"
	"genjobs/internal/catalog"
	"genjobs/internal/catalog/form"
	"genjobs/internal/console/pages"
	"genjobs/internal/httpapi"
	"genjobs/internal/job"
)

// Prices prices a request as the API does (prices.List).
type Prices interface {
	Price(path string, params map[string]any) (billing.Micros, error)
	Units(price billing.Micros) (billing.Units, error)
	Describe(path string) (string, error)
	UnitsPerUSD() (int64, error)
}

// DescribeAll is every endpoint of cat (Describe).
func DescribeAll(cat *catalog.Catalog, prices Prices, api string) ([]pages.Model, error) {
	var models []pages.Model
	for _, e := range cat.Endpoints() {
		m, err := Describe(e, prices, api)
		if err != nil {
			return nil, err
		}
		models = append(models, m)
	}
	return models, nil
}

// Describe is e as the models pages show it; api is the API's public
// address, for the snippets.
func Describe(e *catalog.Endpoint, prices Prices, api string) (pages.Model, error) {
	page := httpapi.AppPath + "/models/" + strings.TrimPrefix(e.Path(), "/generate/")
	fields, err := form.Fields(e)
	if err != nil {
		return pages.Model{}, err
	}
	rule, err := prices.Describe(e.Path())
	if err != nil {
		return pages.Model{}, err
	}
	perUSD, err := prices.UnitsPerUSD()
	if err != nil {
		return pages.Model{}, err
	}
	return pages.Model{
		Path: e.Path(), Page: page, Anchor: e.Kind + "-" + e.Model,
		Title: e.Summary, Description: e.Description, Makes: e.Makes(), Takes: e.Takes,
		Price: rule, UnitsPerUSD: perUSD, Fields: fields, Snippets: snippets(api, e),
	}, nil
}

// snippets are the endpoint's example request (its schema's example) for
// curl, the Go client, genjobs and the MCP tool.
func snippets(api string, e *catalog.Endpoint) []pages.Snippet {
	var body bytes.Buffer
	_ = json.Compact(&body, e.Example())
	ex := body.String()
	route := strings.TrimPrefix(e.Path(), "/generate/")
	id := e.Kind + "-" + e.Model + "-"
	var args map[string]json.RawMessage
	_ = json.Unmarshal(e.Example(), &args)
	if args == nil {
		args = map[string]json.RawMessage{}
	}
	args["wait_seconds"] = json.RawMessage("20")
	call, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": e.ToolName(), "arguments": args}})
	return []pages.Snippet{
		{ID: id + "curl", Label: "curl", Code: "curl -s " + api + e.Path() + ` \` + "\n" +
			`  -H "Authorization: Bearer $GENJOBS_TOKEN" -H "Content-Type: application/json" \` + "\n" +
			"  -d " + shellQuote(ex)},
		{ID: id + "go", Label: "Go client", Code: "c, err := client.NewClient(client.WithBaseURL(" + fmt.Sprintf("%q", api) + "))\n" +
			"job, err := c.Generate(ctx, client.RawRequest{\n" +
			"\tRoute: " + fmt.Sprintf("%q", route) + ",\n" +
			"\tBody:  json.RawMessage(`" + ex + "`),\n" +
			"})"},
		{ID: id + "genjobs", Label: "genjobs", Code: "genjobs generate " + route + " -d " + shellQuote(ex) + " --wait"},
		{ID: id + "mcp", Label: "MCP tool " + e.ToolName(), Code: string(call)},
	}
}

// shellQuote is s in single quotes for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Quoted is the price of a filled-in form, or why it has none: the
// console's price route answers it as JSON.
type Quoted struct {
	Units   string `json:"units,omitempty"` // "3"
	USD     string `json:"usd,omitempty"`   // "0.03"
	Problem string `json:"problem,omitempty"`
	Field   string `json:"field,omitempty"` // the field Problem names
}

// Quote prices what values ask for, as the API would: the request the form
// makes, decoded by the endpoint's schema, priced by the price list.
func Quote(e *catalog.Endpoint, fields []form.Field, values url.Values, prices Prices, now time.Time) (Quoted, error) {
	dec, err := e.Decode(form.Body(fields, values), now)
	var invalid *catalog.InvalidError
	if errors.As(err, &invalid) {
		return Quoted{Problem: invalid.Error(), Field: form.ProblemField(fields, invalid.Error())}, nil
	}
	if err != nil {
		return Quoted{}, err
	}
	usd, err := prices.Price(e.Path(), dec.Params)
	if err != nil {
		return Quoted{}, err
	}
	units, err := prices.Units(usd)
	if err != nil {
		return Quoted{}, err
	}
	return Quoted{Units: units.String(), USD: strings.TrimSuffix(strings.TrimRight(usd.String(), "0"), ".")}, nil
}

// QuoteQuery prices the form's values in query (Quote): what the
// console's price route answers.
func QuoteQuery(e *catalog.Endpoint, query url.Values, prices Prices, now time.Time) (Quoted, error) {
	fields, err := form.Fields(e)
	if err != nil {
		return Quoted{}, err
	}
	return Quote(e, fields, query, prices, now)
}

// Defaults is what a fresh form (inputs made with no values) posts.
func Defaults(inputs []form.Input) url.Values {
	v := url.Values{}
	for _, in := range inputs {
		switch {
		case in.Widget == form.Checkbox && in.Checked:
			v.Set(in.Name, "true")
		case in.Widget != form.Checkbox && in.Value != "":
			v.Set(in.Name, in.Value)
		}
	}
	return v
}

// NewKey is a rendered form's Idempotency-Key.
func NewKey() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return "app-" + hex.EncodeToString(b)
}

// ValidKey reports whether k is a key NewKey made.
func ValidKey(k string) bool {
	if len(k) != 36 || !strings.HasPrefix(k, "app-") {
		return false
	}
	_, err := hex.DecodeString(k[4:])
	return err == nil
}

// uploadPlaceholder stands for a file not stored yet, so that the request
// can be checked and priced before anything is written.
const uploadPlaceholder = "https://upload.invalid/file.png"

// WithUploads is values with a placeholder for each file uploaded to a
// field (files: how many), where the asset URLs will go: in place of an
// image field's URL, after a list's lines.
func WithUploads(fields []form.Field, values url.Values, files map[string]int) url.Values {
	if len(files) == 0 {
		return values
	}
	v := url.Values{}
	for k, x := range values {
		v[k] = append([]string(nil), x...)
	}
	for _, f := range fields {
		for range files[f.Name] {
			if f.Widget == form.Image {
				v.Set(f.Name, uploadPlaceholder)
			} else {
				v.Add(f.Name, uploadPlaceholder)
			}
		}
	}
	return v
}

// Uploads are the image files posted with a run, by field: an image
// field's file input is "{name}.file"; an image field takes one.
func Uploads(r *http.Request, fields []form.Field) map[string][]*multipart.FileHeader {
	out := map[string][]*multipart.FileHeader{}
	if r.MultipartForm == nil {
		return out
	}
	for _, f := range fields {
		if f.Widget != form.Image && f.Widget != form.Images {
			continue
		}
		for _, fh := range r.MultipartForm.File[f.Name+".file"] {
			if fh.Size > 0 || fh.Filename != "" {
				out[f.Name] = append(out[f.Name], fh)
			}
		}
		if f.Widget == form.Image && len(out[f.Name]) > 1 {
			out[f.Name] = out[f.Name][:1]
		}
	}
	return out
}

// Answer is what a REST handler answered in process.
type Answer struct {
	Status int
	Header http.Header
	Body   []byte
}

// Message is the API's refusal text ({"error"}, and its "message" where
// there is one).
func (a Answer) Message() string {
	var e struct {
		Error   string `json:"error"`
		Message string `json:"message"`
	}
	_ = json.Unmarshal(a.Body, &e)
	if s := strings.TrimSpace(e.Error + " " + e.Message); s != "" {
		return s
	}
	return http.StatusText(a.Status)
}

// Post sends a POST to api (the API's handlers) as person, with the
// console request's host (the API's public domain): the handler
// authenticates the person without a token and bills a creation in
// compute units (an Origin on the context, which no client can set). key,
// when set, is the Idempotency-Key.
func Post(ctx context.Context, api http.Handler, person httpapi.Person, host, path, contentType string, body []byte, key string) (Answer, error) {
	ctx = httpapi.WithOrigin(ctx, httpapi.Origin{Source: job.SourceApp, Person: &person})
	in, err := http.NewRequestWithContext(ctx, http.MethodPost, path, bytes.NewReader(body))
	if err != nil {
		return Answer{}, err
	}
	in.Host = host
	in.Header.Set("Content-Type", contentType)
	if key != "" {
		in.Header.Set("Idempotency-Key", key)
	}
	rec := &recorder{header: http.Header{}}
	api.ServeHTTP(rec, in)
	return Answer{Status: rec.status, Header: rec.header, Body: rec.body.Bytes()}, nil
}

type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *recorder) Header() http.Header { return w.header }

func (w *recorder) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *recorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.body.Write(b)
}

// Filled is what a posted form asks for: its fields' values, its key (a
// new one when it carries none of NewKey's), and its image files by field.
func Filled(r *http.Request, fields []form.Field) (values url.Values, key string, files map[string][]*multipart.FileHeader) {
	values = url.Values{}
	for _, f := range fields {
		if v, ok := r.PostForm[f.Name]; ok {
			values[f.Name] = v
		}
	}
	if key = r.PostForm.Get("key"); !ValidKey(key) {
		key = NewKey()
	}
	return values, key, Uploads(r, fields)
}

// Counts is how many files each field has.
func Counts(files map[string][]*multipart.FileHeader) map[string]int {
	n := map[string]int{}
	for name, fhs := range files {
		n[name] = len(fhs)
	}
	return n
}

// Runner runs forms through the API's handlers (API: POST /generate/...
// and POST /assets) as the signed-in person.
type Runner struct {
	API    http.Handler
	Prices Prices
	Now    func() time.Time
}

// Outcome is what a run led to: a job to open, a refusal to show beside
// the form, or a failure of the API (a 5xx it has logged).
type Outcome struct {
	JobID   string
	Values  url.Values     // the form's values, with the asset URLs of the files stored
	Files   map[string]int // the files not stored, by field
	Problem string         // the API's refusal
	Status  int            // the page's status with Problem
	Key     string         // the key the form carries on
	Failed  *Answer
}

// keyReused is the page's words for the API's 422 to a key used with other
// values: the form was run, then changed (the Back button).
const keyReused = "This form already ran with other values; Run again to make a new job."

// Run checks the form's request as the API will, before anything is
// written; stores its image files as assets of the workspace (POST
// /assets); then creates the job (POST /generate/...) with the form's
// Idempotency-Key, so that a second click answers the same job. host is
// the console request's: the API's public domain.
func (rn Runner) Run(r *http.Request, person httpapi.Person, e *catalog.Endpoint, fields []form.Field) (Outcome, error) {
	values, key, files := Filled(r, fields)
	out := Outcome{Values: values, Files: Counts(files), Key: key}
	q, err := Quote(e, fields, WithUploads(fields, values, out.Files), rn.Prices, rn.Now())
	if err != nil {
		return out, err
	}
	if q.Problem != "" {
		out.Problem, out.Status = q.Problem, http.StatusBadRequest
		return out, nil
	}
	out.Files = nil
	for _, f := range fields {
		for _, fh := range files[f.Name] {
			u, a, err := rn.store(r, person, fh)
			if err != nil {
				return out, err
			}
			if a.Status != http.StatusCreated {
				return out.refused(a, f.Name+": "+a.Message()), nil
			}
			if f.Widget == form.Image {
				values.Set(f.Name, u)
			} else {
				values.Add(f.Name, u)
			}
		}
	}
	a, err := Post(r.Context(), rn.API, person, r.Host, e.Path(), "application/json", form.Body(fields, values), key)
	if err != nil {
		return out, err
	}
	switch a.Status {
	case http.StatusOK:
		var rec struct {
			ID string `json:"job_id"`
		}
		if err := json.Unmarshal(a.Body, &rec); err != nil || !job.ValidID(rec.ID) {
			return out, fmt.Errorf("playground: the creation answered %q", a.Body)
		}
		out.JobID = rec.ID
		return out, nil
	case http.StatusUnprocessableEntity:
		out.Key = NewKey()
		out.Problem, out.Status = keyReused, http.StatusConflict
		return out, nil
	}
	return out.refused(a, a.Message()), nil
}

// refused is out with the API's refusal a, or its failure.
func (out Outcome) refused(a Answer, msg string) Outcome {
	if a.Status >= 500 || a.Status < 200 {
		out.Failed = &a
		return out
	}
	out.Problem, out.Status = msg, a.Status
	return out
}

// store stores one uploaded image as an asset of the workspace, through
// POST /assets in process; u is its asset URL when a is a 201.
func (rn Runner) store(r *http.Request, person httpapi.Person, fh *multipart.FileHeader) (u string, a Answer, err error) {
	f, err := fh.Open()
	if err != nil {
		return "", a, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, asset.MaxDirectBytes+1))
	if err != nil {
		return "", a, err
	}
	ct, _, _ := mime.ParseMediaType(fh.Header.Get("Content-Type"))
	if a, err = Post(r.Context(), rn.API, person, r.Host, "/assets", ct, data, ""); err != nil {
		return "", a, err
	}
	var created struct {
		AssetURL string `json:"asset_url"`
	}
	if a.Status == http.StatusCreated && json.Unmarshal(a.Body, &created) != nil {
		return "", a, fmt.Errorf("playground: the upload answered %q", a.Body)
	}
	return created.AssetURL, a, nil
}

// Page is a model's playground page: its form filled with values (nil:
// the defaults; files: how many files each field had), the price of what
// is filled in, and the API's refusal, beside its field when it names one.
// The caller adds the session's fields.
func Page(m pages.Model, e *catalog.Endpoint, values url.Values, files map[string]int, problem string, prices Prices, now time.Time) (pages.Playground, error) {
	p := pages.Playground{Model: m, Action: m.Page, PriceURL: m.Page + "/price"}
	p.Inputs = form.Inputs(m.Fields, values, problem)
	if problem != "" && form.ProblemField(m.Fields, problem) == "" {
		p.Problem = problem
	}
	if values == nil {
		values = Defaults(p.Inputs)
	}
	q, err := Quote(e, m.Fields, WithUploads(m.Fields, values, files), prices, now)
	p.Units, p.USD, p.PriceNote = q.Units, q.USD, q.Problem
	return p, err
}

// MaxRunBytes caps a run's form: its fields and the image files uploaded
// with it (each at most 4 MiB, as POST /assets takes; the Lambda payload's
// limit leaves room for about one). Larger images go through POST
// /assets/uploads, and their asset URL in the field.
const MaxRunBytes = asset.MaxDirectBytes + 256<<10

// WithFiles reads a run's form, files and all (ReadForm), before next
// (the console's form check) reads its fields; fail answers a form it
// cannot read.
func WithFiles(fail func(w http.ResponseWriter, r *http.Request, status int, msg string), next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if status, msg := ReadForm(w, r); status != 0 {
			fail(w, r, status, msg)
			return
		}
		next(w, r)
	}
}

// ReadForm reads a run's form of up to MaxRunBytes, multipart/form-data
// (with files) or not; status is not 0 when it cannot, with msg for the
// page.
func ReadForm(w http.ResponseWriter, r *http.Request) (status int, msg string) {
	r.Body = http.MaxBytesReader(w, r.Body, MaxRunBytes)
	err := r.ParseMultipartForm(MaxRunBytes)
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return http.StatusRequestEntityTooLarge, "The files sent are larger than 4 MiB in all. Upload a larger image with POST /assets/uploads and give its asset URL instead."
	case err != nil && !errors.Is(err, http.ErrNotMultipart):
		return http.StatusBadRequest, "The form could not be read."
	}
	return 0, ""
}
