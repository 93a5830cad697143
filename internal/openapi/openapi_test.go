package openapi_test

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xeipuuv/gojsonschema"

	"genjobs/internal/catalog"
	"genjobs/internal/job"
	"genjobs/internal/openapi"
)

const baseURL = "https://api.genjobs.test"

func build(t *testing.T) (*catalog.Catalog, []byte, map[string]any) {
	t.Helper()
	c, err := catalog.New()
	if err != nil {
		t.Fatal(err)
	}
	b, err := openapi.Build(c, baseURL)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("the document is not JSON: %v", err)
	}
	return c, b, doc
}

// at follows a JSON pointer ("/paths/~1jobs/get") into v.
func at(t *testing.T, v any, pointer string) any {
	t.Helper()
	for _, tok := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[tok]; !ok {
				t.Fatalf("%s: no %q", pointer, tok)
			}
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i >= len(x) {
				t.Fatalf("%s: no item %q", pointer, tok)
			}
			v = x[i]
		default:
			t.Fatalf("%s: %q inside a %T", pointer, tok, v)
		}
	}
	return v
}

func path(p string) string { return "/paths/" + strings.ReplaceAll(p, "/", "~1") }

// deref follows a local $ref, if v is one.
func deref(t *testing.T, doc, v any) any {
	t.Helper()
	if m, ok := v.(map[string]any); ok {
		if r, ok := m["$ref"].(string); ok {
			return at(t, doc, strings.TrimPrefix(r, "#"))
		}
	}
	return v
}

func TestDocumentHead(t *testing.T) {
	_, _, doc := build(t)
	for pointer, want := range map[string]any{
		"/openapi":       "3.1.0",
		"/info/title":    "Generation Job Service",
		"/info/version":  "1",
		"/servers/0/url": baseURL,
		"/components/securitySchemes/bearerAuth/type":   "http",
		"/components/securitySchemes/bearerAuth/scheme": "bearer",
	} {
		if got := at(t, doc, pointer); got != want {
			t.Errorf("%s = %v, want %v", pointer, got, want)
		}
	}
	if !reflect.DeepEqual(doc["security"], []any{map[string]any{"bearerAuth": []any{}}}) {
		t.Errorf("security = %v", doc["security"])
	}
	if d, _ := at(t, doc, "/info/description").(string); d == "" {
		t.Error("no info.description")
	}
	if at(t, doc, "/info/license/name") == "" {
		t.Error("no license")
	}
}

func TestGenerationPaths(t *testing.T) {
	c, _, doc := build(t)
	if got := len(doc["paths"].(map[string]any)); got != len(c.Endpoints())+3 {
		t.Errorf("%d paths, want the %d generation endpoints and 3 more", got, len(c.Endpoints()))
	}
	for _, e := range c.Endpoints() {
		op := at(t, doc, path(e.Path())+"/post").(map[string]any)
		if op["operationId"] != e.OperationID || op["summary"] != e.Summary {
			t.Errorf("%s: operationId %v, summary %v", e.Path(), op["operationId"], op["summary"])
		}
		if !reflect.DeepEqual(op["tags"], []any{e.Tag}) {
			t.Errorf("%s: tags %v", e.Path(), op["tags"])
		}
		var want any
		if err := json.Unmarshal(e.Schema(), &want); err != nil {
			t.Fatal(err)
		}
		if got := at(t, op, "/requestBody/content/application~1json/schema"); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: requestBody schema is not the endpoint's Schema()", e.Path())
		}
		if at(t, op, "/requestBody/required") != true {
			t.Errorf("%s: requestBody not required", e.Path())
		}
		param := deref(t, doc, at(t, op, "/parameters/0")).(map[string]any)
		if param["name"] != "X-Webhook-URL" || param["in"] != "header" || param["required"] != false ||
			at(t, param, "/schema/maxLength") != 2048.0 || at(t, param, "/schema/format") != "uri" {
			t.Errorf("%s: webhook parameter %v", e.Path(), param)
		}
		for status, schema := range map[string]string{
			"200": "Job", "400": "Error", "401": "Error", "402": "OutOfCredits", "429": "Error",
		} {
			resp := deref(t, doc, at(t, op, "/responses/"+status))
			got := at(t, resp, "/content/application~1json/schema/$ref")
			if got != "#/components/schemas/"+schema {
				t.Errorf("%s %s: schema %v, want %s", e.Path(), status, got, schema)
			}
		}
		if len(e.Deprecations()) > 0 {
			for _, h := range []string{"Deprecation", "Sunset"} {
				at(t, op, "/responses/200/headers/"+h)
			}
			if d := op["description"].(string); !strings.Contains(d, "until 2026-06-19") {
				t.Errorf("%s: description does not name the aliases: %s", e.Path(), d)
			}
		}
	}
}

func TestJobPaths(t *testing.T) {
	_, _, doc := build(t)

	get := at(t, doc, path("/jobs/{id}")+"/get").(map[string]any)
	if get["operationId"] != "getJob" || at(t, get, "/parameters/0/name") != "id" || at(t, get, "/parameters/0/in") != "path" {
		t.Errorf("GET /jobs/{id}: %v", get)
	}
	wantResponses(t, doc, get, map[string]string{"200": "Job", "401": "Error", "404": "Error"})

	list := at(t, doc, path("/jobs")+"/get").(map[string]any)
	if list["operationId"] != "listJobs" {
		t.Errorf("GET /jobs operationId %v", list["operationId"])
	}
	params := map[string]map[string]any{}
	for _, p := range list["parameters"].([]any) {
		p := p.(map[string]any)
		if p["in"] != "query" {
			t.Errorf("parameter %v is not in the query", p["name"])
		}
		params[p["name"].(string)] = p["schema"].(map[string]any)
	}
	if l := params["limit"]; l["type"] != "integer" || l["minimum"] != 1.0 || l["maximum"] != 1000.0 || l["default"] != 100.0 {
		t.Errorf("limit: %v", l)
	}
	if params["cursor"]["type"] != "string" {
		t.Errorf("cursor: %v", params["cursor"])
	}
	var statuses []any
	for _, s := range job.Statuses {
		statuses = append(statuses, string(s))
	}
	if !reflect.DeepEqual(params["status"]["enum"], statuses) {
		t.Errorf("status: %v", params["status"])
	}
	wantResponses(t, doc, list, map[string]string{"200": "JobList", "400": "Error", "401": "Error"})

	self := at(t, doc, path("/openapi.json")+"/get").(map[string]any)
	if !reflect.DeepEqual(self["security"], []any{}) {
		t.Errorf("GET /openapi.json must be public: security %v", self["security"])
	}
	at(t, self, "/responses/200")
}

func wantResponses(t *testing.T, doc any, op map[string]any, want map[string]string) {
	t.Helper()
	got := op["responses"].(map[string]any)
	if len(got) != len(want) {
		t.Errorf("%v: responses %v, want %v", op["operationId"], got, want)
	}
	for status, schema := range want {
		resp := deref(t, doc, at(t, op, "/responses/"+status))
		if r := at(t, resp, "/content/application~1json/schema/$ref"); r != "#/components/schemas/"+schema {
			t.Errorf("%v %s: %v, want %s", op["operationId"], status, r, schema)
		}
	}
}

// TestEveryRefResolves walks the whole document.
func TestEveryRefResolves(t *testing.T) {
	_, _, doc := build(t)
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if r, ok := v["$ref"].(string); ok {
				if !strings.HasPrefix(r, "#/") {
					t.Errorf("non-local $ref %s", r)
				} else {
					at(t, doc, strings.TrimPrefix(r, "#"))
				}
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(doc)
}

func validator(t *testing.T, name string) *gojsonschema.Schema {
	t.Helper()
	raw, ok := openapi.ComponentSchema(name)
	if !ok {
		t.Fatalf("no component %s", name)
	}
	if strings.Contains(string(raw), `"$ref"`) {
		t.Fatalf("%s still holds a $ref", name)
	}
	s, err := gojsonschema.NewSchema(gojsonschema.NewBytesLoader(raw))
	if err != nil {
		t.Fatalf("%s does not compile: %v", name, err)
	}
	return s
}

func valid(t *testing.T, s *gojsonschema.Schema, doc string) bool {
	t.Helper()
	res, err := s.Validate(gojsonschema.NewStringLoader(doc))
	if err != nil {
		t.Fatalf("%s: %v", doc, err)
	}
	return res.Valid()
}

func TestJobSchema(t *testing.T) {
	s := validator(t, "Job")
	const id = `"0194b3a0-5c6e-7d2f-9a01-23456789abcd"`
	good := []string{
		`{"job_id":` + id + `,"status":"queued","created_at":"2026-11-21T20:33:00.120Z","completed_at":null,"result":null}`,
		`{"job_id":` + id + `,"status":"backlogged","created_at":"2026-11-21T20:33:00Z","completed_at":null,"result":null,"progress":null}`,
		`{"job_id":` + id + `,"status":"intermediate-complete","created_at":"2026-11-21T20:33:00.120Z","completed_at":null,"result":{"urls":["https://example.com/preview.png"]},"progress":0.5}`,
		`{"job_id":` + id + `,"status":"completed","created_at":"2026-11-21T20:33:00.120Z","completed_at":"2026-11-21T20:34:10.001Z","result":{"urls":["https://example.com/a.png"]},"progress":1}`,
		`{"job_id":` + id + `,"status":"failed","created_at":"2026-11-21T20:33:00.120Z","completed_at":"2026-11-21T20:34:10.001Z","result":null,"error":{"code":"timeout","message":"The job did not finish in time."}}`,
		`{"job_id":"00000000-0000-0000-0000-000000000000","status":"cancelled","created_at":"2026-11-21T20:33:00.120Z","completed_at":"2026-11-21T20:33:01.000Z","result":null,"error":{"code":"internal"}}`,
		`{"job_id":"ffffffff-ffff-ffff-ffff-ffffffffffff","status":"queued","created_at":"2026-11-21T20:33:00.120Z","completed_at":null,"result":null}`,
	}
	bad := map[string]string{
		"extra property":      `{"job_id":` + id + `,"status":"queued","created_at":"2026-11-21T20:33:00.120Z","completed_at":null,"result":null,"workspace":"w"}`,
		"missing result":      `{"job_id":` + id + `,"status":"queued","created_at":"2026-11-21T20:33:00.120Z","completed_at":null}`,
		"unknown status":      `{"job_id":` + id + `,"status":"done","created_at":"2026-11-21T20:33:00.120Z","completed_at":null,"result":null}`,
		"version 0 id":        `{"job_id":"0194b3a0-5c6e-0d2f-9a01-23456789abcd","status":"queued","created_at":"2026-11-21T20:33:00.120Z","completed_at":null,"result":null}`,
		"variant c id":        `{"job_id":"0194b3a0-5c6e-7d2f-ca01-23456789abcd","status":"queued","created_at":"2026-11-21T20:33:00.120Z","completed_at":null,"result":null}`,
		"local time":          `{"job_id":` + id + `,"status":"queued","created_at":"2026-11-21T20:33:00.120+01:00","completed_at":null,"result":null}`,
		"progress over 1":     `{"job_id":` + id + `,"status":"processing","created_at":"2026-11-21T20:33:00.120Z","completed_at":null,"result":null,"progress":1.5}`,
		"unknown code":        `{"job_id":` + id + `,"status":"failed","created_at":"2026-11-21T20:33:00.120Z","completed_at":"2026-11-21T20:34:10.001Z","result":null,"error":{"code":"oops"}}`,
		"error extra":         `{"job_id":` + id + `,"status":"failed","created_at":"2026-11-21T20:33:00.120Z","completed_at":"2026-11-21T20:34:10.001Z","result":null,"error":{"code":"timeout","retry":true}}`,
		"result without urls": `{"job_id":` + id + `,"status":"completed","created_at":"2026-11-21T20:33:00.120Z","completed_at":"2026-11-21T20:34:10.001Z","result":{}}`,
	}
	for _, doc := range good {
		if !valid(t, s, doc) {
			t.Errorf("refused %s", doc)
		}
	}
	for name, doc := range bad {
		if valid(t, s, doc) {
			t.Errorf("%s: accepted %s", name, doc)
		}
	}
}

// TestJobSchemaFitsTheRecord: what package job writes is what the schema
// describes, and the schema's id rule is job.ValidID's.
func TestJobSchemaFitsTheRecord(t *testing.T) {
	s := validator(t, "Job")
	now := time.Date(2026, time.November, 21, 20, 33, 0, 120e6, time.UTC)
	for i := 0; i < 200; i++ {
		b, err := json.Marshal(job.Record{ID: job.NewID(now), Status: job.Queued, CreatedAt: job.At(now)})
		if err != nil {
			t.Fatal(err)
		}
		if !valid(t, s, string(b)) {
			t.Fatalf("refused a creation record: %s", b)
		}
	}
	for _, id := range []string{
		"0194b3a0-5c6e-7d2f-9a01-23456789abcd", "0194B3A0-5C6E-7D2F-9A01-23456789ABCD",
		"0194b3a0-5c6e-9d2f-9a01-23456789abcd", "0194b3a0-5c6e-1d2f-bfff-23456789abcd",
		"0194b3a05c6e7d2f9a0123456789abcd", "00000000-0000-0000-0000-000000000000",
		"ffffffff-ffff-ffff-ffff-ffffffffffff", "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF",
		"0194b3a0-5c6e-7d2f-7a01-23456789abcd", "",
	} {
		doc := `{"job_id":"` + id + `","status":"queued","created_at":"2026-11-21T20:33:00.120Z","completed_at":null,"result":null}`
		if got, want := valid(t, s, doc), job.ValidID(id); got != want {
			t.Errorf("%q: schema says %v, job.ValidID %v", id, got, want)
		}
	}
}

func TestJobStatusesMatchPackageJob(t *testing.T) {
	raw, _ := openapi.ComponentSchema("Job")
	var s struct {
		Properties struct {
			Status struct {
				Enum []string `json:"enum"`
			} `json:"status"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, st := range job.Statuses {
		want = append(want, string(st))
	}
	if !reflect.DeepEqual(s.Properties.Status.Enum, want) {
		t.Errorf("Job.status enum %v, job.Statuses %v", s.Properties.Status.Enum, want)
	}
}

func TestOtherComponents(t *testing.T) {
	for _, tc := range []struct {
		name      string
		good, bad []string
	}{
		{"Error", []string{`{"error":"Job not found."}`}, []string{`{}`, `{"error":1}`, `{"error":"x","message":"y"}`}},
		{"OutOfCredits", []string{`{"error":"You have run out of credits.","message":"Top it up."}`}, []string{`{"error":"x"}`, `{"error":"x","message":"y","z":1}`}},
		{"JobError", []string{`{"code":"invalid_input"}`, `{"code":"input_blocked","message":"m"}`}, []string{`{"message":"m"}`, `{"code":"engine"}`}},
		{"JobList", []string{
			`{"items":[],"next_cursor":null}`,
			`{"items":[{"job_id":"0194b3a0-5c6e-7d2f-9a01-23456789abcd","status":"queued","created_at":"2026-11-21T20:33:00.120Z","completed_at":null,"result":null}],"next_cursor":"abc"}`,
		}, []string{
			`{"items":[]}`,
			`{"items":[{"job_id":"x"}],"next_cursor":null}`,
		}},
	} {
		s := validator(t, tc.name)
		for _, doc := range tc.good {
			if !valid(t, s, doc) {
				t.Errorf("%s refused %s", tc.name, doc)
			}
		}
		for _, doc := range tc.bad {
			if valid(t, s, doc) {
				t.Errorf("%s accepted %s", tc.name, doc)
			}
		}
	}
	if _, ok := openapi.ComponentSchema("Nope"); ok {
		t.Error("ComponentSchema found Nope")
	}
}
