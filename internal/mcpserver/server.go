// Package mcpserver serves the API as Model Context Protocol tools at
// POST /mcp (docs/mcp.md): MCP's Streamable HTTP transport from the official
// Go SDK, stateless, answering JSON. Each tool calls the REST API's own
// handler for its route in process (generate, jobs, usage, styles), so a job
// created through MCP is validated, priced, limited, made idempotent and
// billed by exactly the code a POST /generate request runs, and a refusal
// carries the same message.
package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"genjobs/internal/auth"
	"genjobs/internal/catalog"
	"genjobs/internal/clock"
	"genjobs/internal/fault"
	"genjobs/internal/httpapi"
	"genjobs/internal/job"
	"genjobs/internal/mcpauth"
	"genjobs/internal/openapi"
)

// MaxBodyBytes bounds a request to /mcp: a generation body's cap
// (catalog.MaxBodyBytes) and room for the JSON-RPC envelope and the tool's
// own arguments (a 2048-character webhook_url, a 255-character
// idempotency_key).
const MaxBodyBytes = catalog.MaxBodyBytes + 8<<10

// MaxWait bounds wait_seconds and wait_job's timeout_seconds: a call ends
// well inside API Gateway's 30-second integration timeout.
const MaxWait = 20 * time.Second

// DefaultPoll is how often a wait reads the job.
const DefaultPoll = 500 * time.Millisecond

// PriceRules says an endpoint's price rule in words (prices.List).
type PriceRules interface {
	Describe(path string) (string, error)
}

// Config is what the server is built from, once per function instance.
type Config struct {
	// API serves the REST routes the tools call: POST /generate/...,
	// GET|DELETE /jobs/{id}, GET /jobs, GET /usage, GET /styles.
	API     http.Handler
	Auth    httpapi.Authenticator
	Catalog *catalog.Catalog
	Prices  PriceRules
	Clock   clock.Clock
	// Poll is how often a wait reads the job; zero means DefaultPoll.
	Poll time.Duration
	// Sleep pauses a wait; nil means a timer (tests inject their own).
	Sleep func(ctx context.Context, d time.Duration) error
	// Version is the server's version as initialize reports it.
	Version string
	// BaseURL is the service's public address (BASE_URL; empty: the
	// domain the request reached): OAuth access tokens must be issued by
	// it for {BaseURL}/mcp, and a 401 names its protected resource
	// metadata.
	BaseURL string
}

// mcpPath is the server's path: {base_url}/mcp is the resource OAuth
// access tokens are for.
const mcpPath = "/mcp"

// Name is the server's name as initialize reports it.
const Name = "genjobs"

// New returns the handler of /mcp: 405 for every method but POST, 401 before
// anything of the body is read, 413 over MaxBodyBytes, protocol errors for a
// body that is not one JSON-RPC message, then the SDK's stateless transport.
//
// The tools are built on the first request that gets that far, not here:
// reading the seven request schemas, the price list and the record schema
// doubled the function's cold start, and an instance that only refuses
// requests never needs them. A failure to build them is logged and answered
// with a 500 on every request (TestToolsAreTheEndpointsWithTheirOwnSchemasAndPrices
// builds them).
func New(c Config) (http.Handler, error) {
	if c.API == nil || c.Auth == nil || c.Catalog == nil || c.Prices == nil || c.Clock == nil {
		return nil, errors.New("mcpserver: API, Auth, Catalog, Prices and Clock are required")
	}
	if c.Poll <= 0 {
		c.Poll = DefaultPoll
	}
	if c.Sleep == nil {
		c.Sleep = sleep
	}
	if c.Version == "" {
		c.Version = "1"
	}
	return &front{auth: c.Auth, base: c.BaseURL, build: func() (http.Handler, error) {
		srv := mcp.NewServer(&mcp.Implementation{Name: Name, Title: "Generation job service", Version: c.Version},
			&mcp.ServerOptions{Instructions: instructions})
		t := &tools{Config: c}
		if err := t.register(srv); err != nil {
			return nil, err
		}
		return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
			&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true, MaxRequestBodyBytes: MaxBodyBytes}), nil
	}}, nil
}

const instructions = "Create media generation jobs (image enhancement, images, videos, 3D models) billed to the workspace you connected with: " +
	"in USD from its API balance with an API token, in compute units with a connection you signed in to. " +
	"and follow them. A generation tool answers the job at once; pass wait_seconds (up to 20) to wait for it within the call, " +
	"or call wait_job or get_job later. A completed job's results are resource links: presigned download URLs valid for an hour. " +
	"list_models says what each model makes and costs."

// front does what the API does before a handler reads a body: method,
// authentication, size; then it refuses what is not one JSON-RPC message,
// so that the SDK sees only single messages (it would serve a batch to an
// old protocol version).
type front struct {
	auth  httpapi.Authenticator
	base  string // Config.BaseURL
	build func() (http.Handler, error)

	once sync.Once
	next http.Handler // the SDK's transport with the tools, once built
	err  error
}

// Fixed texts of /mcp's own refusals (docs/mcp.md).
const (
	msgMethod = "/mcp takes POST only: MCP's Streamable HTTP transport, stateless."
	msgParse  = "Parse error: the body is not a JSON object."
	msgBatch  = "Invalid request: JSON-RPC batches are not supported; send one message per request."
)

var msgTooLarge = "The request body is too large: at most " + strconv.Itoa(MaxBodyBytes) + " bytes."

func (f *front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		httpapi.WriteError(w, http.StatusMethodNotAllowed, msgMethod)
		return
	}
	// /mcp is the protected resource of OAuth connections: its requests
	// carry an API token or an access token for it, and its 401s lead a
	// client to sign in (docs/mcp.md, "Signing in with OAuth: what is built").
	base := strings.TrimSuffix(httpapi.PublicBaseURL(f.base, r), "/")
	r = r.WithContext(auth.WithResource(r.Context(), auth.Resource{Issuer: base, Audience: base + mcpPath}))
	p, ok := httpapi.AuthenticateWith(f.auth, w, r, func(sent bool) string { return mcpauth.Challenge(base, sent) })
	if !ok {
		return
	}
	if p.PersonID != "" {
		// An OAuth connection: the tools act for the person in the
		// token's workspace, in compute units, without a token of the API.
		r = r.WithContext(httpapi.WithOrigin(r.Context(), httpapi.Origin{Source: job.SourceMCP,
			Person: &httpapi.Person{WorkspaceID: p.WorkspaceID, UserID: p.PersonID, Email: p.Email}}))
	}
	body, err := readBounded(r, MaxBodyBytes)
	if errors.Is(err, errTooLarge) {
		httpapi.WriteError(w, http.StatusRequestEntityTooLarge, msgTooLarge)
		return
	}
	if err != nil {
		httpapi.InternalError(w, r, "read body", err)
		return
	}
	switch first := firstByte(body); {
	case first == '[':
		protocolError(w, jsonrpc.CodeInvalidRequest, msgBatch)
		return
	case first != '{' || !json.Valid(body):
		protocolError(w, jsonrpc.CodeParseError, msgParse)
		return
	}
	f.once.Do(func() { f.next, f.err = f.build() })
	if f.err != nil {
		httpapi.InternalError(w, r, "build the MCP tools", f.err)
		return
	}
	tools, cancel := fault.Reserve(r.Context(), ToolMargin)
	defer cancel()
	ctx := context.WithValue(r.Context(), hostKey{}, r.Host)
	r = r.WithContext(context.WithValue(ctx, toolsKey{}, tools))
	r.Body = readCloser{bytes.NewReader(body)}
	r.ContentLength = int64(len(body))
	mw := &methodWriter{ResponseWriter: w}
	f.next.ServeHTTP(mw, r)
	mw.finish(body)
}

// notHandled begins the SDK's plain-text 400 for a method it does not
// have (its jsonrpc2.ErrNotHandled), which it sends before the message
// reaches the server for every protocol version before 2026-07-28.
const notHandled = "JSON RPC not handled"

// methodWriter passes the SDK's answer through, except a plain-text 400,
// which it holds: finish turns one for an unknown method into JSON-RPC's
// -32601 and writes any other as it was.
type methodWriter struct {
	http.ResponseWriter
	held   bool
	status int
	body   bytes.Buffer
}

func (w *methodWriter) WriteHeader(code int) {
	if code == http.StatusBadRequest && strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") {
		w.held, w.status = true, code
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *methodWriter) Write(b []byte) (int, error) {
	if w.held {
		return w.body.Write(b)
	}
	return w.ResponseWriter.Write(b)
}

// finish writes what was held. A request (a message with an id) for an
// unknown method is answered 200 with the error and its id, as any
// JSON-RPC error answering a request, so that the client reads it as the
// answer to its call; a notification, which no answer can carry, 400 with
// id null.
func (w *methodWriter) finish(msg []byte) {
	if !w.held {
		return
	}
	m, err := jsonrpc.DecodeMessage(msg)
	req, ok := m.(*jsonrpc.Request)
	if !bytes.HasPrefix(w.body.Bytes(), []byte(notHandled)) || err != nil || !ok {
		w.ResponseWriter.WriteHeader(w.status)
		_, _ = w.ResponseWriter.Write(w.body.Bytes())
		return
	}
	status := http.StatusBadRequest
	if req.IsCall() {
		status = http.StatusOK
	}
	writeRPCError(w.ResponseWriter, status, req.ID, jsonrpc.CodeMethodNotFound, "Method not found: "+req.Method+" is not a method of this server.")
}

var errTooLarge = errors.New("body over the bound")

func readBounded(r *http.Request, limit int) ([]byte, error) {
	var buf bytes.Buffer
	n, err := buf.ReadFrom(http.MaxBytesReader(nil, r.Body, int64(limit)))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) || n > int64(limit) {
		return nil, errTooLarge
	}
	return buf.Bytes(), err
}

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }

func firstByte(b []byte) byte {
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) == 0 {
		return 0
	}
	return b[0]
}

// protocolError answers a JSON-RPC error that belongs to no request (id
// null), as JSON-RPC 2.0 answers a parse error or an invalid request.
func protocolError(w http.ResponseWriter, code int64, msg string) {
	writeRPCError(w, http.StatusBadRequest, jsonrpc.ID{}, code, msg)
}

// writeRPCError answers the SDK's JSON-RPC error response. A message whose
// id is unknown (the zero ID) is answered with "id": null, as JSON-RPC 2.0
// requires and the SDK's encoder, which leaves the member out, does not.
func writeRPCError(w http.ResponseWriter, status int, id jsonrpc.ID, code int64, msg string) {
	b, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: code, Message: msg}})
	if err != nil { // a number and a string: not expected
		httpapi.WriteError(w, http.StatusInternalServerError, "Internal server error.")
		return
	}
	if !id.IsValid() {
		b = append([]byte(`{"id":null,`), b[1:]...)
	}
	httpapi.WriteJSON(w, status, json.RawMessage(b))
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

type hostKey struct{}

// ToolMargin is kept between the end of a request's tools and the request's
// own: a tool whose dependency hangs gives up that much earlier, so that
// the SDK, which answers nothing once the request's context has ended,
// still writes the tool's error (the client would read an empty 200).
const ToolMargin = 500 * time.Millisecond

type toolsKey struct{}

// toolContext is the context a tool runs under: the SDK hands tools a
// context without the request's deadline or cancellation, so the request's
// (fault.Reserve(r.Context(), ToolMargin), set by front) is put back: its
// deadline, and its end.
func toolContext(ctx context.Context) (context.Context, context.CancelFunc) {
	req, ok := ctx.Value(toolsKey{}).(context.Context)
	if !ok {
		return context.WithCancel(ctx)
	}
	var cancel context.CancelFunc
	if d, ok := req.Deadline(); ok {
		ctx, cancel = context.WithDeadline(ctx, d)
	} else {
		ctx, cancel = context.WithCancel(ctx)
	}
	stop := context.AfterFunc(req, cancel)
	return ctx, func() { stop(); cancel() }
}

// hostOf is the host the MCP request reached (the api-proxy sets it from
// the event's domain name): the REST handlers make the public base URL of
// records and asset URLs from it, as they do for their own requests.
func hostOf(ctx context.Context) string {
	h, _ := ctx.Value(hostKey{}).(string)
	return h
}

// outputSchema is a component schema of the OpenAPI document (Job), as
// JSON without its $schema: the shape a tool's structured content has.
func outputSchema(name string) (json.RawMessage, error) {
	raw, ok := openapi.ComponentSchema(name)
	if !ok {
		return nil, errors.New("mcpserver: no component schema " + name)
	}
	var s map[string]any
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	delete(s, "$schema")
	return json.Marshal(s)
}
