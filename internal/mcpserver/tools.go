package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"genjobs/internal/billing"
	"genjobs/internal/catalog"
	"genjobs/internal/httpapi"
	"genjobs/internal/job"
	"genjobs/internal/style"
)

type tools struct{ Config }

// ToolName is the tool of a generation endpoint: generate_ + kind + _ +
// model, every character but a-z and 0-9 turned into _
// (generate_video_model_d_flash_1_1).
func ToolName(e *catalog.Endpoint) string { return e.ToolName() }

// The tool-only arguments of a generation tool, beside the endpoint's fields.
const (
	argIdempotencyKey = "idempotency_key"
	argWebhookURL     = "webhook_url"
	argWaitSeconds    = "wait_seconds"
)

// generationArgs are the schemas of the tool-only arguments: what the REST
// API takes as headers, and the wait.
var generationArgs = map[string]any{
	argIdempotencyKey: map[string]any{"type": "string", "minLength": 1, "maxLength": 255,
		"description": "Makes the creation safe to retry: a second call with the same key and arguments within 24 hours answers the first call's job and creates nothing (the REST API's Idempotency-Key)."},
	argWebhookURL: map[string]any{"type": "string", "maxLength": 2048,
		"description": "An https:// URL the finished job is POSTed to, signed (the REST API's X-Webhook-URL)."},
	argWaitSeconds: map[string]any{"type": "integer", "minimum": 0, "maximum": int(MaxWait / time.Second), "default": 0,
		"description": "Seconds to wait within this call for the job to end (0 to 20); the answer is the job as it stands then. 0 answers at once."},
}

// register adds the tools to srv. Their schemas are JSON already
// (json.RawMessage), encoded once here: the SDK encodes a tool's input
// schema again on every call of it to look for parameters it takes as
// headers, which for a schema of maps costs more than the rest of the
// protocol's work.
func (t *tools) register(srv *mcp.Server) error {
	jobSchema, err := outputSchema("Job")
	if err != nil {
		return err
	}
	for _, e := range t.Catalog.Endpoints() {
		tool, err := t.generationTool(e, jobSchema)
		if err != nil {
			return err
		}
		srv.AddTool(tool, guard(t.generate(e)))
	}
	for _, q := range t.queryTools() {
		tool := &mcp.Tool{Name: q.name, Description: q.description, InputSchema: paramsSchema(q.params),
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: q.method == http.MethodGet, IdempotentHint: true, DestructiveHint: ptr(q.method == http.MethodDelete), OpenWorldHint: ptr(false)}}
		if q.record {
			tool.OutputSchema = jobSchema
		}
		srv.AddTool(tool, guard(t.query(q)))
	}
	wait := &mcp.Tool{Name: "wait_job", OutputSchema: jobSchema,
		Description: "Waits up to timeout_seconds (1 to 20, default 20) for a job to end (completed, failed or cancelled) and answers its record as it stands then. A completed job's result files are resource links.",
		InputSchema: paramsSchema([]param{jobIDParam, {name: "timeout_seconds", typ: "integer", min: ptr(1), max: ptr(int(MaxWait / time.Second)),
			description: "How long to wait at most, in seconds (default 20)."}}),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)}}
	srv.AddTool(wait, guard(t.waitJob))
	models := &mcp.Tool{Name: "list_models",
		Description: "Lists the generation models: each one's endpoint path, tool name, what it makes, its price rule and how long a job usually takes.",
		InputSchema: paramsSchema(nil), Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)}}
	list, err := t.models()
	if err != nil {
		return err
	}
	srv.AddTool(models, guard(func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return success(list, false), nil
	}))
	return nil
}

func ptr[T any](v T) *T { return &v }

// generationTool is an endpoint's tool: its input schema is the endpoint's
// own request schema, the one that validates REST requests, with the
// tool-only arguments added; its output schema is out, the job record's.
func (t *tools) generationTool(e *catalog.Endpoint, out json.RawMessage) (*mcp.Tool, error) {
	var schema map[string]any
	if err := json.Unmarshal(e.Schema(), &schema); err != nil {
		return nil, fmt.Errorf("mcpserver: schema of %s: %w", e.Path(), err)
	}
	props, _ := schema["properties"].(map[string]any)
	if props == nil {
		return nil, fmt.Errorf("mcpserver: schema of %s has no properties", e.Path())
	}
	for name, p := range generationArgs {
		if _, taken := props[name]; taken {
			return nil, fmt.Errorf("mcpserver: %s has a field %s, which its tool takes for itself", e.Path(), name)
		}
		props[name] = p
	}
	desc, err := t.describe(e)
	if err != nil {
		return nil, err
	}
	in, err := json.Marshal(schema)
	if err != nil {
		return nil, err
	}
	return &mcp.Tool{Name: ToolName(e), Title: e.Summary, Description: desc, InputSchema: json.RawMessage(in), OutputSchema: out,
		Annotations: &mcp.ToolAnnotations{Title: e.Summary, DestructiveHint: ptr(false), OpenWorldHint: ptr(true)}}, nil
}

// describe is an endpoint tool's description: what it makes, its price rule
// from the price list in use, and how long a job usually takes.
func (t *tools) describe(e *catalog.Endpoint) (string, error) {
	price, err := t.Prices.Describe(e.Path())
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s: makes %s. %s Price: %s (reserved at creation, charged only if the job completes: from the API balance with an API token, in compute units through a signed-in connection). "+
		"A job usually takes %s. Creates a job (POST %s) and answers its record; set wait_seconds to wait for it within the call, "+
		"or follow it with wait_job or get_job. A completed job's result files are resource links.",
		e.Summary, e.Makes(), e.Description, price, e.Takes, e.Path()), nil
}

type modelInfo struct {
	Path        string `json:"path"`
	Tool        string `json:"tool"`
	Description string `json:"description"`
	Price       string `json:"price"`
	Takes       string `json:"takes"`
}

func (t *tools) models() (any, error) {
	var out []modelInfo
	for _, e := range t.Catalog.Endpoints() {
		price, err := t.Prices.Describe(e.Path())
		if err != nil {
			return nil, err
		}
		out = append(out, modelInfo{Path: e.Path(), Tool: ToolName(e), Description: e.Summary + ": makes " + e.Makes() + ". " + e.Description,
			Price: price, Takes: e.Takes})
	}
	return struct {
		Models []modelInfo `json:"models"`
	}{out}, nil
}

// generate creates a job through POST /generate/...: the arguments but the
// tool's own are the request body, idempotency_key and webhook_url its
// headers.
func (t *tools) generate(e *catalog.Endpoint) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args := map[string]json.RawMessage{}
		if raw := bytes.TrimSpace(req.Params.Arguments); len(raw) > 0 && !bytes.Equal(raw, []byte("null")) {
			if err := json.Unmarshal(raw, &args); err != nil {
				return refusal(httpapi.InvalidBodyPrefix + "the arguments must be a JSON object"), nil
			}
		}
		header := map[string]string{}
		for arg, name := range map[string]string{argIdempotencyKey: "Idempotency-Key", argWebhookURL: "X-Webhook-URL"} {
			raw, ok := args[arg]
			if !ok {
				continue
			}
			delete(args, arg)
			var s string
			if json.Unmarshal(raw, &s) != nil {
				return refusal(httpapi.InvalidBodyPrefix + arg + " must be a string"), nil
			}
			header[name] = s
		}
		var wait time.Duration
		if raw, ok := args[argWaitSeconds]; ok {
			delete(args, argWaitSeconds)
			n, ok := integer(raw)
			if !ok || n < 0 || n > int64(MaxWait/time.Second) {
				return refusal(httpapi.InvalidBodyPrefix + "wait_seconds must be an integer between 0 and 20"), nil
			}
			wait = time.Duration(n) * time.Second
		}
		body, err := json.Marshal(args)
		if err != nil {
			return nil, err
		}
		a := t.call(ctx, req, http.MethodPost, e.Path(), nil, body, header)
		if a.status == http.StatusOK && wait > 0 {
			a = t.wait(ctx, req, a, wait)
		}
		return a.result(true), nil
	}
}

// integer reads a JSON integer (5 or 5.0), not a string of one.
func integer(raw json.RawMessage) (int64, bool) {
	var n json.Number
	if bytes.HasPrefix(bytes.TrimSpace(raw), []byte(`"`)) || json.Unmarshal(raw, &n) != nil {
		return 0, false
	}
	if i, err := n.Int64(); err == nil {
		return i, true
	}
	f, err := n.Float64()
	if err != nil || f != float64(int64(f)) {
		return 0, false
	}
	return int64(f), true
}

// param is an argument of a tool that calls a GET or DELETE route: a query
// parameter, or (path) the job id in the path.
type param struct {
	name, typ, description string
	enum                   []string
	min, max               *int
	required, path         bool
}

var jobIDParam = param{name: "job_id", typ: "string", required: true, path: true, description: "The job's id, as a creation or list_jobs answered it."}

type queryTool struct {
	name, description string
	method, route     string // route: the REST path; {id} is the job_id argument
	params            []param
	record            bool // it answers a job record
	// details: a job's details (GET /jobs/{id}/details) follow its record
	// as the result's second content block.
	details bool
}

func (t *tools) queryTools() []queryTool {
	statuses := make([]string, len(job.Statuses))
	for i, s := range job.Statuses {
		statuses[i] = string(s)
	}
	filters := make([]string, len(style.Filters))
	for i, f := range style.Filters {
		filters[i] = string(f)
	}
	return []queryTool{
		{name: "get_job", method: http.MethodGet, route: "/jobs/{id}", params: []param{jobIDParam}, record: true, details: true,
			description: "Reads one job of the workspace: status, progress, timestamps, error if it failed. A second text block holds its details: endpoint, input as accepted, source, who made it, price and charge, start, end and route. A completed job's result files are resource links (download URLs valid for an hour; read the job again for fresh ones)."},
		{name: "list_jobs", method: http.MethodGet, route: "/jobs",
			description: "Lists the workspace's jobs, newest first, a page at a time.",
			params: []param{
				{name: "status", typ: "string", enum: statuses, description: "Only jobs with this status."},
				{name: "limit", typ: "integer", min: ptr(1), max: ptr(job.MaxListLimit), description: "Jobs per page (default 100)."},
				{name: "cursor", typ: "string", description: "next_cursor of the previous page, with the same status."},
			}},
		{name: "cancel_job", method: http.MethodDelete, route: "/jobs/{id}", params: []param{jobIDParam}, record: true,
			description: "Cancels a job that has not ended; its price is released, nothing is charged. An ended job cannot be cancelled."},
		{name: "get_usage", method: http.MethodGet, route: "/usage",
			description: "What the workspace was billed for completed jobs over the last days (UTC), in USD, by day and by model.",
			params:      []param{{name: "days", typ: "integer", min: ptr(1), max: ptr(billing.MaxUsageDays), description: "How many days back, today included (default 7)."}}},
		{name: "list_styles", method: http.MethodGet, route: "/styles",
			description: "Lists the styles the workspace's API user sees (its own, shared with the workspace, the service's, public ones), newest first.",
			params: []param{
				{name: "filter", typ: "string", enum: filters, description: "Which styles (default all)."},
				{name: "limit", typ: "integer", min: ptr(1), max: ptr(style.MaxLimit), description: "Styles per page (default 100)."},
				{name: "cursor", typ: "string", description: "next_cursor of the previous page, with the same filters."},
				{name: "ids", typ: "string", description: "Comma-separated style ids: only these."},
				{name: "liked", typ: "boolean", description: "Only styles the API user liked."},
				{name: "user", typ: "string", description: "Only styles of this owner id."},
				{name: "model", typ: "string", enum: style.Models, description: "Only styles made for this model."},
			}},
	}
}

// paramsSchema is the input schema of a tool that takes ps, as JSON.
func paramsSchema(ps []param) json.RawMessage {
	props := map[string]any{}
	var required []string
	for _, p := range ps {
		s := map[string]any{"type": p.typ, "description": p.description}
		if p.enum != nil {
			s["enum"] = p.enum
		}
		if p.min != nil {
			s["minimum"] = *p.min
		}
		if p.max != nil {
			s["maximum"] = *p.max
		}
		props[p.name] = s
		if p.required {
			required = append(required, p.name)
		}
	}
	schema := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if required != nil {
		schema["required"] = required
	}
	b, err := json.Marshal(schema)
	if err != nil { // strings, numbers and lists of strings
		panic("mcpserver: a parameters schema: " + err.Error())
	}
	return b
}

// readParams checks a call's arguments against ps: known names, JSON types,
// required ones present, bounds where the tool has them. The REST route
// checks the rest, with its own messages.
func readParams(raw json.RawMessage, ps []param) (map[string]string, string) {
	args := map[string]json.RawMessage{}
	if raw = bytes.TrimSpace(raw); len(raw) > 0 && !bytes.Equal(raw, []byte("null")) {
		if json.Unmarshal(raw, &args) != nil {
			return nil, "the arguments must be a JSON object"
		}
	}
	for _, name := range slices.Sorted(maps.Keys(args)) {
		if !slices.ContainsFunc(ps, func(p param) bool { return p.name == name }) {
			return nil, name + " is not a known argument"
		}
	}
	out := map[string]string{}
	for _, p := range ps {
		v, ok := args[p.name]
		if !ok || bytes.Equal(v, []byte("null")) {
			if p.required {
				return nil, p.name + " is required"
			}
			continue
		}
		switch p.typ {
		case "string":
			var s string
			if json.Unmarshal(v, &s) != nil {
				return nil, p.name + " must be a string"
			}
			out[p.name] = s
		case "boolean":
			var b bool
			if json.Unmarshal(v, &b) != nil {
				return nil, p.name + " must be true or false"
			}
			out[p.name] = strconv.FormatBool(b)
		case "integer":
			n, ok := integer(v)
			if !ok {
				return nil, p.name + " must be an integer"
			}
			out[p.name] = strconv.FormatInt(n, 10)
		}
		if p.required && out[p.name] == "" {
			return nil, p.name + " is required"
		}
	}
	return out, ""
}

// query serves a tool that is a GET or DELETE route of the REST API.
func (t *tools) query(q queryTool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args, msg := readParams(req.Params.Arguments, q.params)
		if msg != "" {
			return refusal(invalidArgs + msg), nil
		}
		route, values := q.route, url.Values{}
		for _, p := range q.params {
			v, ok := args[p.name]
			switch {
			case !ok:
			case p.path:
				if !job.ValidID(strings.ToLower(v)) {
					return refusal(httpapi.MsgJobNotFound), nil
				}
				route = strings.Replace(route, "{id}", url.PathEscape(v), 1)
			default:
				values.Set(p.name, v)
			}
		}
		if q.details {
			// The record and the details are two requests of one job:
			// the jobs routes answer both from one read of it.
			ctx = httpapi.WithOneJobRead(ctx)
		}
		res := t.call(ctx, req, q.method, route, values, nil, nil).result(q.record)
		if q.details && !res.IsError {
			t.addDetails(ctx, req, route, res)
		}
		return res, nil
	}
}

// addDetails puts the details of the job whose record res is (GET
// {route}/details, in process, as the caller) into res as its second
// content block, after the record's text and before any resource link.
// Details that cannot be read leave the record alone: it is the answer.
func (t *tools) addDetails(ctx context.Context, req *mcp.CallToolRequest, route string, res *mcp.CallToolResult) {
	d := t.call(ctx, req, http.MethodGet, route+"/details", nil, nil, nil)
	if d.status != http.StatusOK {
		httpapi.Logger(ctx).Warn("mcp: get_job without its details", "status", d.status)
		return
	}
	block := &mcp.TextContent{Text: string(bytes.TrimSpace(d.body))}
	res.Content = append(res.Content[:1], append([]mcp.Content{block}, res.Content[1:]...)...)
}

const invalidArgs = "The arguments are invalid: "

func (t *tools) waitJob(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	ps := []param{jobIDParam, {name: "timeout_seconds", typ: "integer"}}
	args, msg := readParams(req.Params.Arguments, ps)
	if msg != "" {
		return refusal(invalidArgs + msg), nil
	}
	timeout := MaxWait
	if v, ok := args["timeout_seconds"]; ok {
		n, _ := strconv.Atoi(v)
		if n < 1 || n > int(MaxWait/time.Second) {
			return refusal(invalidArgs + "timeout_seconds must be an integer between 1 and 20"), nil
		}
		timeout = time.Duration(n) * time.Second
	}
	if !job.ValidID(strings.ToLower(args["job_id"])) {
		return refusal(httpapi.MsgJobNotFound), nil
	}
	a := t.call(ctx, req, http.MethodGet, "/jobs/"+url.PathEscape(args["job_id"]), nil, nil, nil)
	if a.status == http.StatusOK {
		a = t.wait(ctx, req, a, timeout)
	}
	return a.result(true), nil
}

// wait reads the job of last, a record answer, until it has ended, d has
// passed on the clock, or the call's context ends; it answers the last
// record read.
func (t *tools) wait(ctx context.Context, req *mcp.CallToolRequest, last answer, d time.Duration) answer {
	var rec struct {
		ID          string  `json:"job_id"`
		CompletedAt *string `json:"completed_at"`
	}
	deadline := t.Clock.Now().Add(d)
	for {
		if json.Unmarshal(last.body, &rec) != nil || rec.CompletedAt != nil || rec.ID == "" {
			return last
		}
		left := deadline.Sub(t.Clock.Now())
		if left <= 0 || t.Sleep(ctx, min(t.Poll, left)) != nil {
			return last
		}
		a := t.call(ctx, req, http.MethodGet, "/jobs/"+url.PathEscape(rec.ID), nil, nil, nil)
		if a.status != http.StatusOK {
			return last
		}
		last = a
	}
}

// answer is what a REST handler answered in process.
type answer struct {
	status int
	body   []byte
}

// call runs one request through the REST handler of its route, as the
// caller: the MCP request's Authorization, its host (the public base URL of
// records), and the headers given.
func (t *tools) call(ctx context.Context, req *mcp.CallToolRequest, method, route string, query url.Values, body []byte, header map[string]string) answer {
	// Every job a tool makes says it came through MCP; an OAuth
	// connection's caller has already said so, with the signed-in person.
	if _, ok := httpapi.OriginOf(ctx); !ok {
		ctx = httpapi.WithOrigin(ctx, httpapi.Origin{Source: job.SourceMCP})
	}
	target := route
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	r, err := http.NewRequestWithContext(ctx, method, target, bytes.NewReader(body))
	if err != nil {
		httpapi.Logger(ctx).Error("mcp: build request", "error", err.Error())
		return answer{status: http.StatusInternalServerError, body: []byte(`{"error":"Internal server error."}`)}
	}
	if req.Extra != nil {
		r.Header.Set("Authorization", req.Extra.Header.Get("Authorization"))
	}
	if body != nil {
		r.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		r.Header.Set(k, v)
	}
	r.Host = hostOf(ctx)
	w := httptest.NewRecorder()
	t.API.ServeHTTP(w, r)
	return answer{status: w.Code, body: w.Body.Bytes()}
}

// result is the tool result of a REST answer: anything but a 2xx is an
// error result with the API's message (its status text where the answer
// has none: a redirect); a success is its JSON as structured content and
// as text, and, for a completed job's record (withLinks), one resource link
// per result URL.
func (a answer) result(withLinks bool) *mcp.CallToolResult {
	if a.status < 200 || a.status > 299 {
		var e struct {
			Error   string `json:"error"`
			Message string `json:"message"`
		}
		_ = json.Unmarshal(a.body, &e)
		text := strings.TrimSpace(e.Error + " " + e.Message)
		if text == "" {
			text = http.StatusText(a.status)
		}
		if text == "" {
			text = "Internal server error."
		}
		return refusal(text)
	}
	return success(json.RawMessage(a.body), withLinks)
}

func refusal(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}

// success is a result of v, JSON as the REST API writes it ('&' kept as is:
// result URLs are read by people too).
func success(v any, withLinks bool) *mcp.CallToolResult {
	b, ok := v.(json.RawMessage)
	if !ok {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if enc.Encode(v) != nil {
			return refusal("Internal server error.")
		}
		b = bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	}
	res := &mcp.CallToolResult{StructuredContent: json.RawMessage(b), Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}
	if !withLinks {
		return res
	}
	var rec struct {
		Status job.Status `json:"status"`
		Result *struct {
			URLs []string `json:"urls"`
		} `json:"result"`
	}
	if json.Unmarshal(b, &rec) != nil || rec.Status != job.Completed || rec.Result == nil {
		return res
	}
	for i, u := range rec.Result.URLs {
		res.Content = append(res.Content, resultLink(i, u))
	}
	return res
}

// mediaTypes are the result files' types by extension: the engines' outputs.
var mediaTypes = map[string]string{
	".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".webp": "image/webp",
	".gif": "image/gif", ".glb": "model/gltf-binary",
}

func resultLink(i int, raw string) *mcp.ResourceLink {
	name := "result " + strconv.Itoa(i+1)
	var mediaType string
	if u, err := url.Parse(raw); err == nil {
		if base := path.Base(u.Path); base != "." && base != "/" {
			name = base
		}
		mediaType = mediaTypes[strings.ToLower(path.Ext(u.Path))]
	}
	return &mcp.ResourceLink{URI: raw, Name: name, MIMEType: mediaType,
		Description: "A result file of the job: a presigned download URL, valid for an hour."}
}

// guard runs a tool under its request's deadline (toolContext), and turns
// a panic in it into an error result with the fixed message, logged: the
// SDK runs tools without a recover.
func guard(h mcp.ToolHandler) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
		ctx, cancel := toolContext(ctx)
		defer cancel()
		defer func() {
			if p := recover(); p != nil {
				httpapi.Logger(ctx).Error("mcp: panic in a tool", "tool", req.Params.Name, "panic", fmt.Sprint(p))
				res, err = refusal("Internal server error."), nil
			}
		}()
		return h(ctx, req)
	}
}
