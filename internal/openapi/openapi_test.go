package openapi_test

import (
	"encoding/json"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xeipuuv/gojsonschema"

	"genjobs/internal/asset"
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
	if got := len(doc["paths"].(map[string]any)); got != len(c.Endpoints())+13 {
		t.Errorf("%d paths, want the %d generation endpoints and 13 more", got, len(c.Endpoints()))
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
		key := deref(t, doc, at(t, op, "/parameters/1")).(map[string]any)
		if key["name"] != "Idempotency-Key" || key["in"] != "header" || at(t, key, "/schema/maxLength") != 255.0 {
			t.Errorf("%s: idempotency parameter %v", e.Path(), key)
		}
		at(t, op, "/responses/200/headers/Idempotent-Replayed")
		for status, schema := range map[string]string{
			"200": "Job", "400": "Error", "401": "Error", "402": "OutOfCredits", "409": "Error", "422": "Error", "429": "Error", "503": "Error",
		} {
			resp := deref(t, doc, at(t, op, "/responses/"+status))
			got := at(t, resp, "/content/application~1json/schema/$ref")
			if got != "#/components/schemas/"+schema {
				t.Errorf("%s %s: schema %v, want %s", e.Path(), status, got, schema)
			}
		}
		// The creation answer's examples: a pending job, queued or backlogged.
		examples := at(t, op, "/responses/200/content/application~1json/examples").(map[string]any)
		var statuses []string
		for name := range examples {
			st := at(t, examples, "/"+name+"/value/status")
			if st != name || at(t, examples, "/"+name+"/value/result") != nil {
				t.Errorf("%s: example %s is a %v job with result %v", e.Path(), name, st, at(t, examples, "/"+name+"/value/result"))
			}
			statuses = append(statuses, name)
		}
		if slices.Sort(statuses); !reflect.DeepEqual(statuses, []string{"backlogged", "queued"}) {
			t.Errorf("%s: creation examples %v, want backlogged and queued", e.Path(), statuses)
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
	wantResponses(t, doc, get, map[string]string{"200": "Job", "401": "Error", "404": "Error", "503": "Error"})

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
	wantResponses(t, doc, list, map[string]string{"200": "JobList", "400": "Error", "401": "Error", "503": "Error"})

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
		"result, no url":      `{"job_id":` + id + `,"status":"completed","created_at":"2026-11-21T20:33:00.120Z","completed_at":"2026-11-21T20:34:10.001Z","result":{"urls":[]}}`,
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
		b, err := json.Marshal(job.Record{ID: job.NewID(now), Status: job.Queued, CreatedAt: job.TimeOf(now)})
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

// errorExample is the error text a response's example shows.
func errorExample(t *testing.T, doc any, op map[string]any, status string) string {
	t.Helper()
	resp := deref(t, doc, at(t, op, "/responses/"+status))
	msg, _ := at(t, resp, "/content/application~1json/example/error").(string)
	return msg
}

func TestAssetPaths(t *testing.T) {
	_, _, doc := build(t)
	described := false
	for _, tag := range doc["tags"].([]any) {
		if tag := tag.(map[string]any); tag["name"] == "Assets" {
			d, _ := tag["description"].(string)
			described = d != ""
		}
	}
	if !described {
		t.Error("no Assets tag with a description")
	}
	ops := map[string]map[string]any{
		"uploadAsset":      at(t, doc, path("/assets")+"/post").(map[string]any),
		"startAssetUpload": at(t, doc, path("/assets/uploads")+"/post").(map[string]any),
		"getAsset":         at(t, doc, path("/assets/{id}")+"/get").(map[string]any),
	}
	for id, op := range ops {
		if op["operationId"] != id || !reflect.DeepEqual(op["tags"], []any{"Assets"}) || op["summary"] == "" {
			t.Errorf("%s: operationId %v, tags %v, summary %v", id, op["operationId"], op["tags"], op["summary"])
		}
		if _, ok := op["security"]; ok {
			t.Errorf("%s overrides security; it needs the workspace's token", id)
		}
	}

	// POST /assets: the raw bytes of one of the accepted types, no schema.
	upload := ops["uploadAsset"]
	if at(t, upload, "/requestBody/required") != true {
		t.Error("POST /assets: requestBody not required")
	}
	content := at(t, upload, "/requestBody/content").(map[string]any)
	var types []string
	for ct, media := range content {
		types = append(types, ct)
		if len(media.(map[string]any)) != 0 {
			t.Errorf("POST /assets %s: %v; a binary body takes no schema", ct, media)
		}
	}
	if want := slices.Sorted(slices.Values(asset.ContentTypes)); !reflect.DeepEqual(slices.Sorted(slices.Values(types)), want) {
		t.Errorf("POST /assets takes %v, want %v", types, want)
	}
	wantResponses(t, doc, upload, map[string]string{"201": "Asset", "400": "Error", "401": "Error", "413": "Error", "503": "Error"})
	at(t, upload, "/responses/201/headers/Location/schema")
	if got := errorExample(t, doc, upload, "400"); got != "The request body is not a PNG, JPEG or WebP image." {
		t.Errorf("POST /assets 400 example %q", got)
	}
	if got := errorExample(t, doc, upload, "413"); got != "The image is larger than 4 MiB; use POST /assets/uploads." {
		t.Errorf("POST /assets 413 example %q", got)
	}

	// POST /assets/uploads: a JSON body.
	start := ops["startAssetUpload"]
	if at(t, start, "/requestBody/required") != true ||
		at(t, start, "/requestBody/content/application~1json/schema/$ref") != "#/components/schemas/AssetUploadRequest" {
		t.Errorf("POST /assets/uploads: requestBody %v", start["requestBody"])
	}
	wantResponses(t, doc, start, map[string]string{"201": "AssetUpload", "400": "Error", "401": "Error", "503": "Error"})
	at(t, start, "/responses/201/headers/Location/schema")
	if got := errorExample(t, doc, start, "400"); !strings.HasPrefix(got, "The request body is invalid: ") {
		t.Errorf("POST /assets/uploads 400 example %q", got)
	}

	// GET /assets/{id}: a redirect, or the same 404 for anyone but the owner.
	get := ops["getAsset"]
	if p := at(t, get, "/parameters/0").(map[string]any); p["name"] != "id" || p["in"] != "path" || p["required"] != true {
		t.Errorf("GET /assets/{id} parameter %v", p)
	}
	responses := get["responses"].(map[string]any)
	var statuses []string
	for status := range responses {
		statuses = append(statuses, status)
	}
	if slices.Sort(statuses); !reflect.DeepEqual(statuses, []string{"302", "401", "404", "503", "default"}) {
		t.Errorf("GET /assets/{id} answers %v", statuses)
	}
	redirect := at(t, get, "/responses/302").(map[string]any)
	if _, ok := redirect["content"]; ok {
		t.Error("GET /assets/{id} 302 has a body")
	}
	if at(t, redirect, "/headers/Location/schema/format") != "uri" ||
		!reflect.DeepEqual(at(t, redirect, "/headers/Cache-Control/schema/enum"), []any{"no-store"}) {
		t.Errorf("GET /assets/{id} 302 headers %v", redirect["headers"])
	}
	for _, status := range []string{"401", "404", "default"} {
		if r := at(t, deref(t, doc, responses[status]), "/content/application~1json/schema/$ref"); r != "#/components/schemas/Error" {
			t.Errorf("GET /assets/{id} %s: %v, want Error", status, r)
		}
	}
	if got := errorExample(t, doc, get, "404"); got != "Asset not found." {
		t.Errorf("GET /assets/{id} 404 example %q", got)
	}
}

// TestAssetUploadRequestMatchesPackageAsset: the rules themselves live in the
// handler (httpapi's decodeUploadRequest, tested there); the schema must
// state the same limits, taken from package asset.
func TestAssetUploadRequestMatchesPackageAsset(t *testing.T) {
	raw, _ := openapi.ComponentSchema("AssetUploadRequest")
	var s struct {
		AdditionalProperties *bool    `json:"additionalProperties"`
		Required             []string `json:"required"`
		Properties           map[string]struct {
			Type    string   `json:"type"`
			Enum    []string `json:"enum"`
			Minimum any      `json:"minimum"`
			Maximum any      `json:"maximum"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	if s.AdditionalProperties == nil || *s.AdditionalProperties || !reflect.DeepEqual(s.Required, []string{"content_type", "size"}) || len(s.Properties) != 2 {
		t.Errorf("AssetUploadRequest: additionalProperties %v, required %v, %d properties; want exactly content_type and size",
			s.AdditionalProperties, s.Required, len(s.Properties))
	}
	if ct := s.Properties["content_type"]; ct.Type != "string" || !reflect.DeepEqual(ct.Enum, asset.ContentTypes) {
		t.Errorf("content_type %+v, want a string of %v", ct, asset.ContentTypes)
	}
	if size := s.Properties["size"]; size.Type != "integer" || size.Minimum != 1.0 || size.Maximum != float64(asset.MaxUploadBytes) {
		t.Errorf("size %+v, want an integer 1..%d", size, asset.MaxUploadBytes)
	}

	raw, _ = openapi.ComponentSchema("AssetUpload")
	minutes := strconv.Itoa(int(asset.UploadLifetime.Minutes())) + " minutes"
	if !strings.Contains(string(raw), minutes) {
		t.Errorf("AssetUpload does not say the upload URL lives %s", minutes)
	}
}

// TestAssetIDPatternIsValidID: the path parameter and the asset URLs accept
// exactly the ids package asset makes.
func TestAssetIDPatternIsValidID(t *testing.T) {
	_, _, doc := build(t)
	param := regexp.MustCompile(at(t, doc, path("/assets/{id}")+"/get/parameters/0/schema/pattern").(string))
	ids := []string{
		"ast_" + strings.Repeat("a", 26), "ast_" + strings.Repeat("7", 25) + "4",
		"", "ast_", "ast_" + strings.Repeat("a", 25), "ast_" + strings.Repeat("a", 27),
		"ast_" + strings.Repeat("a", 25) + "1", "ast_" + strings.Repeat("a", 25) + "b",
		"ast_" + strings.Repeat("A", 26), "job_" + strings.Repeat("a", 26), "ast_" + strings.Repeat("a", 24) + "/.",
		"0194b3a0-0000-7000-8000-000000000000",
	}
	for range 200 {
		ids = append(ids, asset.NewID())
	}
	ids = append(ids, at(t, doc, path("/assets/{id}")+"/get/parameters/0/example").(string))
	created, upload := validator(t, "Asset"), validator(t, "AssetUpload")
	for _, id := range ids {
		want := asset.ValidID(id)
		if got := param.MatchString(id); got != want {
			t.Errorf("%q: the path parameter says %v, asset.ValidID %v", id, got, want)
		}
		u := asset.URL(baseURL, id)
		if got := valid(t, created, `{"asset_url":"`+u+`"}`); got != want {
			t.Errorf("%s: Asset says %v, asset.ValidID %v", u, got, want)
		}
		body := `{"upload_url":"https://s3.example/x?X-Amz-Signature=0f","asset_url":"` + u + `","expires_at":"2026-11-21T20:48:00.120Z"}`
		if got := valid(t, upload, body); got != want {
			t.Errorf("%s: AssetUpload says %v, asset.ValidID %v", u, got, want)
		}
	}
}

func TestAssetComponents(t *testing.T) {
	id := asset.NewID()
	u := asset.URL("https://abc123.execute-api.us-east-1.amazonaws.com", id)
	for _, tc := range []struct {
		name      string
		good, bad []string
	}{
		{"Asset", []string{`{"asset_url":"` + u + `"}`, `{"asset_url":"http://127.0.0.1:3000/assets/` + id + `"}`}, []string{
			`{}`,
			`{"asset_url":"` + u + `","size":1}`,
			`{"asset_url":"https://abc123.execute-api.us-east-1.amazonaws.com/jobs/` + id + `"}`,
			`{"asset_url":"/assets/` + id + `"}`,
		}},
		{"AssetUpload", []string{
			`{"upload_url":"http://127.0.0.1:4566/assets-bucket/assets/ws_a/` + id + `?X-Amz-Expires=900","asset_url":"` + u + `","expires_at":"2026-11-21T20:48:00.120Z"}`,
		}, []string{
			`{"upload_url":"https://s3.example/x","asset_url":"` + u + `"}`,
			`{"upload_url":"https://s3.example/x","asset_url":"` + u + `","expires_at":"2026-11-21T21:48:00.120+01:00"}`,
			`{"upload_url":"https://s3.example/x","asset_url":"` + u + `","expires_at":"2026-11-21T20:48:00.120Z","size":1}`,
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
}

// TestExamplesMatchTheirSchemas: every example shown beside a component
// schema, in a request or a response, is an instance of it.
func TestExamplesMatchTheirSchemas(t *testing.T) {
	c, _, doc := build(t)
	checked := 0
	check := func(where, name string, example any) {
		b, err := json.Marshal(example)
		if err != nil {
			t.Fatal(err)
		}
		if !valid(t, validator(t, name), string(b)) {
			t.Errorf("%s: the example %s does not match %s", where, b, name)
		}
		checked++
	}
	var walk func(where string, v any)
	walk = func(where string, v any) {
		switch v := v.(type) {
		case map[string]any:
			schema, _ := v["schema"].(map[string]any)
			if r, ok := schema["$ref"].(string); ok && len(v) > 1 {
				name := strings.TrimPrefix(r, "#/components/schemas/")
				if e, ok := v["example"]; ok {
					check(where, name, e)
				}
				if es, ok := v["examples"].(map[string]any); ok {
					for k, e := range es {
						check(where+"/examples/"+k, name, at(t, e, "/value"))
					}
				}
				return
			}
			for k, x := range v {
				walk(where+"/"+k, x)
			}
		case []any:
			for i, x := range v {
				walk(where+"/"+strconv.Itoa(i), x)
			}
		}
	}
	// Two creation examples per generation endpoint, the asset
	// operations' request and answers, the usage answer and the MCP
	// route's 413.
	walk("/paths", doc["paths"])
	if want := 2*len(c.Endpoints()) + 5; checked != want {
		t.Errorf("%d examples in the paths, want %d", checked, want)
	}
	checked = 0
	responses := at(t, doc, "/components/responses").(map[string]any)
	walk("/components/responses", responses)
	if checked != len(responses) {
		t.Errorf("%d examples among the %d response components", checked, len(responses))
	}
}

// Every operation that reads or writes a dependency documents its 503 and
// the Retry-After that comes with it; the document itself needs none.
func TestOperationsWithADependencyDocument503(t *testing.T) {
	_, _, doc := build(t)
	for path, item := range at(t, doc, "/paths").(map[string]any) {
		for method, op := range item.(map[string]any) {
			op := op.(map[string]any)
			responses := op["responses"].(map[string]any)
			r, ok := responses["503"]
			if path == "/openapi.json" {
				if ok {
					t.Errorf("%s %s: a 503, but it reads no dependency", method, path)
				}
				continue
			}
			if !ok {
				t.Errorf("%s %s: no 503", method, path)
				continue
			}
			resp := deref(t, doc, r)
			at(t, resp, "/headers/Retry-After/schema")
			if ex := at(t, resp, "/content/application~1json/example/error"); ex != "The service is temporarily unavailable; retry shortly." {
				t.Errorf("%s %s: example %v", method, path, ex)
			}
		}
	}
}
