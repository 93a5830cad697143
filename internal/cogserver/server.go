// Package cogserver serves the reference engines over Cog's HTTP protocol
// (its HTTP API, as the replicate/cog repository documents it), so that an endpoint routed to a "cog"
// provider can run end to end on one machine with no network.
//
// One Server plays one Cog model server per generation endpoint, each under
// the path prefix {kind}/{vendor}/{model}: a route's base_url is
// http://127.0.0.1:PORT/image/vendor-b/model-e-4 and the server answers
// PUT {base_url}/predictions/{id} there. A model's inputs are the fields of
// the endpoint's request schema, validated and defaulted by the catalog; its
// output is the engine's file as a data: URI (or a URL, below).
//
// What it does as Cog does:
//   - POST /predictions and PUT /predictions/{id}, synchronous (200 with
//     the finished prediction) or with Prefer: respond-async (202 with
//     {"id","status":"starting"}). A PUT for an id that is still running
//     answers 202 with that prediction's state and input; its body is not
//     looked at (a different input does not start a second prediction). Once
//     a prediction has ended the server forgets it.
//   - Statuses starting, processing, succeeded, failed, canceled.
//   - Webhooks: the prediction's state POSTed at start (status processing,
//     as Cog's server sends it), output, logs and completed, limited by
//     webhook_events_filter (default all); logs at most every 500 ms; the
//     completed one retried on 429, 500, 502, 503, 504 and connection errors
//     (12 retries, after 100 ms x 2^attempt, the exponent at most 10); with
//     Authorization: Bearer {token} when the server has a webhook token
//     (Cog's WEBHOOK_AUTH_TOKEN). Deliveries of one prediction are sent in
//     order.
//   - 422 {"detail":[{"loc","msg","type"}]} for an input the schema refuses
//     (unknown input fields are dropped with a warning, as Cog does); 409
//     when every slot of the model is busy (one by default); 406 for
//     Accept: text/event-stream (the engines do not stream).
//   - POST /predictions/{id}/cancel: 200 {} and the engine's context ends,
//     the prediction ends canceled; 404 {} for an id that is not running.
//   - GET /health-check (READY or BUSY), GET / and GET /openapi.json.
//   - Outputs are data: URIs, or with UploadURL (Cog's --upload-url) URLs
//     of the uploaded files; PUT and GET /uploads/{name} make the server its
//     own upload target (upload.go).
//
// Progress is written to the logs as tqdm-style lines (" 45%|#########
// | 45/100"), the form Replicate's clients read a percentage from.
package cogserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"genjobs/internal/catalog"
	"genjobs/internal/clock"
	"genjobs/internal/engine"
	"genjobs/internal/fetch"
)

// Defaults of Options.
const (
	DefaultConcurrency  = 1 // Cog runs one prediction at a time unless told otherwise
	DefaultLogsInterval = 500 * time.Millisecond
	DefaultRetryBase    = 100 * time.Millisecond
	DefaultMaxRetries   = 12
	// MaxBodyBytes bounds a prediction request. The catalog refuses inputs
	// above 64 KiB anyway: large images come as URLs.
	MaxBodyBytes = 1 << 20
)

// Options configures a Server.
type Options struct {
	Catalog *catalog.Catalog
	Engines engine.Registry // an endpoint without an engine here is not served
	// Inputs fetches image-valued inputs (URLs and data: URIs).
	Inputs *fetch.Fetcher
	// Webhooks sends the webhook requests, and the uploads of UploadURL.
	Webhooks *http.Client
	// UploadURL, when set, is where outputs are uploaded (Cog's
	// --upload-url): outputs are then URLs rather than data: URIs.
	UploadURL string
	// ReportPaths, without UploadURL, reports each output as the file's
	// path on the server's own disk, as Cog's Python server does without
	// --upload-url (releases 0.10 to 0.16): a client elsewhere cannot read
	// it. For trying a client's handling of that answer.
	ReportPaths bool
	// WebhookToken, when set, is sent as Authorization: Bearer on every
	// webhook request (Cog's WEBHOOK_AUTH_TOKEN).
	WebhookToken string
	// Concurrency is how many predictions each model runs at once; 0 means
	// DefaultConcurrency.
	Concurrency int
	// TempDir holds the outputs of running predictions; "" is the system's.
	TempDir string
	// LogsInterval is the least time between two logs webhooks; 0 means
	// DefaultLogsInterval.
	LogsInterval time.Duration
	// RetryBase and MaxRetries shape the retries of the completed webhook;
	// 0 means the defaults.
	RetryBase  time.Duration
	MaxRetries int
	Clock      clock.Clock // nil: the system clock
	Log        *slog.Logger
}

// Server is the model server. Build it with New; it is safe for concurrent
// use. Close cancels what still runs.
type Server struct {
	opt    Options
	models map[string]*model // by base path, e.g. "image/vendor-b/model-e-4"
	mux    *http.ServeMux

	uploads *uploads // the server's own upload target

	wg      sync.WaitGroup  // the predictions' goroutines and their webhook senders
	closing context.Context // ends on Close: every engine and delivery stops
	close   context.CancelFunc
}

// model is one endpoint served as one Cog model.
type model struct {
	ep    *catalog.Endpoint
	eng   engine.Engine
	base  string          // kind/vendor/model
	known map[string]bool // the input fields Cog would not strip
	slots chan struct{}   // one token per running prediction

	mu      sync.Mutex
	running map[string]*prediction
}

// New builds a Server for every endpoint of the catalog that has an engine.
func New(opt Options) (*Server, error) {
	if opt.Catalog == nil || opt.Inputs == nil || opt.Webhooks == nil || opt.Log == nil {
		return nil, errors.New("cogserver: Catalog, Inputs, Webhooks and Log are required")
	}
	if opt.Concurrency <= 0 {
		opt.Concurrency = DefaultConcurrency
	}
	if opt.LogsInterval <= 0 {
		opt.LogsInterval = DefaultLogsInterval
	}
	if opt.RetryBase <= 0 {
		opt.RetryBase = DefaultRetryBase
	}
	if opt.MaxRetries <= 0 {
		opt.MaxRetries = DefaultMaxRetries
	}
	if opt.Clock == nil {
		opt.Clock = clock.System{}
	}
	dir, err := os.MkdirTemp(opt.TempDir, "cogserver-uploads-")
	if err != nil {
		return nil, fmt.Errorf("cogserver: the upload store: %w", err)
	}
	s := &Server{opt: opt, models: map[string]*model{}, uploads: &uploads{dir: dir, files: map[string]stored{}}}
	s.closing, s.close = context.WithCancel(context.Background())
	for _, ep := range opt.Catalog.Endpoints() {
		eng, ok := opt.Engines.For(ep.Model)
		if !ok {
			continue
		}
		known, err := inputFields(ep)
		if err != nil {
			return nil, fmt.Errorf("cogserver: %s: %w", ep.Path(), err)
		}
		m := &model{
			ep: ep, eng: eng, known: known,
			base:    BasePath(ep),
			slots:   make(chan struct{}, opt.Concurrency),
			running: map[string]*prediction{},
		}
		s.models[m.base] = m
	}
	s.routes()
	return s, nil
}

// BasePath is where the server serves ep's model: {kind}/{vendor}/{model},
// the endpoint's path without /generate/. A route's base_url is
// http://HOST:PORT/ followed by it.
func BasePath(ep *catalog.Endpoint) string {
	return ep.Kind + "/" + ep.Vendor + "/" + ep.Model
}

// inputFields lists the fields of ep's schema and its deprecated aliases:
// the decoder knows them, anything else is stripped.
func inputFields(ep *catalog.Endpoint) (map[string]bool, error) {
	var schema struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(ep.Schema(), &schema); err != nil {
		return nil, err
	}
	known := map[string]bool{}
	for name := range schema.Properties {
		known[name] = true
	}
	for _, d := range ep.Deprecations() {
		known[d.Field] = true
	}
	return known, nil
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Close cancels every running prediction and waits for their goroutines
// (the completed webhook included, whose retries stop at once), then
// deletes the upload store's files.
func (s *Server) Close() {
	s.close()
	s.wg.Wait()
	if err := os.RemoveAll(s.uploads.dir); err != nil {
		s.opt.Log.Warn("could not remove the upload store", "dir", s.uploads.dir, "error", err.Error())
	}
}

const prefix = "/{kind}/{vendor}/{model}"

func (s *Server) routes() {
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("GET /{$}", s.index)
	s.mux.HandleFunc("GET /health-check", s.healthAll)
	s.mux.HandleFunc("GET "+prefix+"/{$}", s.withModel(s.discovery))
	s.mux.HandleFunc("GET "+prefix+"/health-check", s.withModel(s.health))
	s.mux.HandleFunc("GET "+prefix+"/openapi.json", s.withModel(s.openAPI))
	s.mux.HandleFunc("POST "+prefix+"/predictions", s.withModel(s.create))
	s.mux.HandleFunc("PUT "+prefix+"/predictions/{id}", s.withModel(s.createIdempotent))
	s.mux.HandleFunc("POST "+prefix+"/predictions/{id}/cancel", s.withModel(s.cancel))
	s.mux.HandleFunc("PUT /uploads/{name}", s.putUpload)
	s.mux.HandleFunc("GET /uploads/{name}", s.getUpload)
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, map[string]string{"detail": "Not Found"})
	})
}

func (s *Server) withModel(h func(http.ResponseWriter, *http.Request, *model)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		m, ok := s.models[r.PathValue("kind")+"/"+r.PathValue("vendor")+"/"+r.PathValue("model")]
		if !ok {
			writeJSON(w, http.StatusNotFound, map[string]string{"detail": "Not Found"})
			return
		}
		h(w, r, m)
	}
}

// index lists the models, so that a developer finds the base URLs.
func (s *Server) index(w http.ResponseWriter, r *http.Request) {
	type entry struct {
		Endpoint string `json:"endpoint"`
		BaseURL  string `json:"base_url"`
	}
	var list []entry
	for _, base := range slices.Sorted(maps.Keys(s.models)) {
		list = append(list, entry{Endpoint: s.models[base].ep.Path(), BaseURL: "http://" + r.Host + "/" + base})
	}
	writeJSON(w, http.StatusOK, map[string]any{"models": list})
}

// discovery is Cog's GET /, under the model's prefix.
func (s *Server) discovery(w http.ResponseWriter, r *http.Request, m *model) {
	p := "/" + m.base
	writeJSON(w, http.StatusOK, map[string]string{
		"cog_version":                "genjobs-cogserver",
		"openapi_url":                p + "/openapi.json",
		"healthcheck_url":            p + "/health-check",
		"predictions_url":            p + "/predictions",
		"predictions_idempotent_url": p + "/predictions/{prediction_id}",
		"predictions_cancel_url":     p + "/predictions/{prediction_id}/cancel",
	})
}

// healthBody is Cog's health-check answer. The engines have no setup step,
// so setup has succeeded as soon as the server runs.
type healthBody struct {
	Status string `json:"status"` // READY or BUSY
	Setup  struct {
		Status string `json:"status"`
		Logs   string `json:"logs"`
	} `json:"setup"`
	Version map[string]string `json:"version"`
}

func newHealth(busy bool) healthBody {
	h := healthBody{Status: "READY", Version: map[string]string{"cogserver": "genjobs"}}
	if busy {
		h.Status = "BUSY"
	}
	h.Setup.Status = "succeeded"
	return h
}

func (s *Server) health(w http.ResponseWriter, r *http.Request, m *model) {
	writeJSON(w, http.StatusOK, newHealth(len(m.slots) == cap(m.slots)))
}

// healthAll answers for the process: BUSY when every slot of every model is
// in use.
func (s *Server) healthAll(w http.ResponseWriter, r *http.Request) {
	busy := len(s.models) > 0
	for _, m := range s.models {
		busy = busy && len(m.slots) == cap(m.slots)
	}
	writeJSON(w, http.StatusOK, newHealth(busy))
}

// request is Cog's PredictionRequest.
type request struct {
	ID                  *string                    `json:"id"`
	Input               map[string]json.RawMessage `json:"input"`
	Webhook             *string                    `json:"webhook"`
	WebhookEventsFilter *[]string                  `json:"webhook_events_filter"`
}

// detail is one entry of a 422's "detail" list, as Cog (FastAPI) writes it.
type detail struct {
	Loc  []string `json:"loc"`
	Msg  string   `json:"msg"`
	Type string   `json:"type"`
}

func unprocessable(w http.ResponseWriter, msg string, loc ...string) {
	writeJSON(w, http.StatusUnprocessableEntity, map[string]any{
		"detail": []detail{{Loc: append([]string{"body"}, loc...), Msg: msg, Type: "value_error"}},
	})
}

// mode is how the client wants the answer.
type mode int

const (
	syncMode mode = iota
	asyncMode
)

// responseMode reads Prefer and Accept. ok is false for a stream request,
// which the engines cannot serve.
func responseMode(r *http.Request) (m mode, ok bool) {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		if mt, _, _ := strings.Cut(part, ";"); strings.TrimSpace(mt) == "text/event-stream" {
			return syncMode, false
		}
	}
	for _, v := range r.Header.Values("Prefer") {
		for _, pref := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(pref), "respond-async") {
				return asyncMode, true
			}
		}
	}
	return syncMode, true
}

func notAcceptable(w http.ResponseWriter) {
	writeJSON(w, http.StatusNotAcceptable, map[string]string{
		"error": "This model does not support streaming responses. Add @cog.streaming to predict() to enable SSE.",
	})
}

// readRequest reads a prediction request; ok is false when it has answered.
func readRequest(w http.ResponseWriter, r *http.Request) (req request, ok bool) {
	r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	dec := json.NewDecoder(r.Body)
	err := dec.Decode(&req)
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		writeJSON(w, http.StatusRequestEntityTooLarge, map[string]string{"detail": fmt.Sprintf("the body is larger than %d bytes", MaxBodyBytes)})
		return req, false
	case errors.Is(err, io.EOF): // no body: an empty input, as Cog takes it
		return request{}, true
	case err != nil:
		unprocessable(w, "the body is not a prediction request: "+err.Error())
		return req, false
	}
	return req, true
}

// create is POST /predictions: the id comes from the body or is made up.
func (s *Server) create(w http.ResponseWriter, r *http.Request, m *model) {
	md, ok := responseMode(r)
	if !ok {
		notAcceptable(w)
		return
	}
	req, ok := readRequest(w, r)
	if !ok {
		return
	}
	id := newID()
	if req.ID != nil && *req.ID != "" {
		id = *req.ID
	}
	s.start(w, r, m, id, req, md)
}

// createIdempotent is PUT /predictions/{id}.
func (s *Server) createIdempotent(w http.ResponseWriter, r *http.Request, m *model) {
	md, ok := responseMode(r)
	if !ok {
		notAcceptable(w)
		return
	}
	req, ok := readRequest(w, r)
	if !ok {
		return
	}
	id := r.PathValue("id")
	if req.ID != nil && *req.ID != id {
		unprocessable(w, "prediction ID must match the ID supplied in the URL", "id")
		return
	}
	if p := m.held(id); p != nil {
		// Cog answers the running prediction, whatever this body says.
		defer p.release()
		s.writePrediction(w, http.StatusAccepted, p.snapshot(true))
		return
	}
	s.start(w, r, m, id, req, md)
}

// start validates req and runs it as prediction id.
func (s *Server) start(w http.ResponseWriter, r *http.Request, m *model, id string, req request, md mode) {
	log := s.opt.Log.With("model", m.base, "prediction_id", id)
	events, msg := eventFilter(req.WebhookEventsFilter)
	if msg != "" {
		unprocessable(w, msg, "webhook_events_filter")
		return
	}
	var hook *url.URL
	if req.Webhook != nil && *req.Webhook != "" {
		u, err := url.Parse(*req.Webhook)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			unprocessable(w, "webhook must be an absolute http(s) URL", "webhook")
			return
		}
		hook = u
	}
	input, stripped := m.strip(req.Input)
	if len(stripped) > 0 {
		log.Warn("stripped unknown input fields", "fields", stripped)
	}
	body, err := json.Marshal(input)
	if err != nil {
		unprocessable(w, "input must be an object", "input")
		return
	}
	decoded, err := m.ep.Decode(body, s.opt.Clock.Now())
	var invalid *catalog.InvalidError
	switch {
	case errors.As(err, &invalid):
		unprocessable(w, invalid.Reason, "input")
		return
	case err != nil:
		log.Error("decoding an input failed", "error", err.Error())
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": "internal error", "status": "failed"})
		return
	}

	p, err := s.newPrediction(m, id, body, decoded, hook, events, log)
	if err != nil {
		log.Error("could not prepare a prediction", "error", err.Error())
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": "internal error", "status": "failed"})
		return
	}
	switch running, ok := m.admit(p); {
	case running != nil:
		// A request with the same id was admitted first: answer it as Cog does.
		p.discard()
		defer running.release()
		s.writePrediction(w, http.StatusAccepted, running.snapshot(true))
		return
	case !ok:
		p.discard()
		writeJSON(w, http.StatusConflict, map[string]string{"error": "At capacity - all prediction slots busy", "status": "failed"})
		return
	}
	if md == syncMode {
		p.hold() // the answer reads the outputs before they are deleted
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.run(p)
	}()
	if md == asyncMode {
		writeJSON(w, http.StatusAccepted, map[string]string{"id": id, "status": "starting"})
		return
	}
	// Synchronous: wait for the end; a client that goes away cancels it.
	defer p.release()
	select {
	case <-p.done:
	case <-r.Context().Done():
		p.cancel()
		<-p.done
		return
	}
	s.writePrediction(w, http.StatusOK, p.snapshot(false))
}

// eventFilter reads webhook_events_filter: absent means every event; an
// empty list means none.
func eventFilter(list *[]string) (map[string]bool, string) {
	all := map[string]bool{eventStart: true, eventOutput: true, eventLogs: true, eventCompleted: true}
	if list == nil {
		return all, ""
	}
	events := map[string]bool{}
	for _, e := range *list {
		if !all[e] {
			return nil, fmt.Sprintf("unknown event %q: events are start, output, logs and completed", e)
		}
		events[e] = true
	}
	return events, ""
}

// strip drops the input fields the model does not know, as Cog does.
func (m *model) strip(input map[string]json.RawMessage) (map[string]json.RawMessage, []string) {
	out := map[string]json.RawMessage{}
	var stripped []string
	for k, v := range input {
		if m.known[k] {
			out[k] = v
		} else {
			stripped = append(stripped, k)
		}
	}
	slices.Sort(stripped)
	return out, stripped
}

func (m *model) lookup(id string) *prediction {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.running[id]
}

// held returns the prediction running under id, if any, held (see hold)
// until the caller releases it: its outputs stay while they are written.
func (m *model) held(id string) *prediction {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.running[id]
	if p != nil {
		p.hold() // before forget, so before run waits for its users
	}
	return p
}

// admit takes a slot for p and registers it. It returns the prediction
// that runs under p's id, if any, held as by held, and ok false when every
// slot is busy.
func (m *model) admit(p *prediction) (running *prediction, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if q := m.running[p.id]; q != nil {
		q.hold()
		return q, false
	}
	select {
	case m.slots <- struct{}{}:
	default:
		return nil, false
	}
	m.running[p.id] = p
	return nil, true
}

// forget removes p and gives its slot back: Cog forgets a prediction
// that has ended.
func (m *model) forget(p *prediction) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.running[p.id] == p {
		delete(m.running, p.id)
		<-m.slots
	}
}

// cancel is POST /predictions/{id}/cancel.
func (s *Server) cancel(w http.ResponseWriter, r *http.Request, m *model) {
	p := m.lookup(r.PathValue("id"))
	if p == nil {
		writeJSON(w, http.StatusNotFound, map[string]any{})
		return
	}
	p.cancel()
	s.opt.Log.Info("prediction cancel requested", "model", m.base, "prediction_id", p.id)
	writeJSON(w, http.StatusOK, map[string]any{})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writePrediction answers a prediction's state, its outputs streamed from
// their files.
func (s *Server) writePrediction(w http.ResponseWriter, status int, st snapshot) {
	w.Header().Set("Content-Type", "application/json")
	if n, ok := contentLength(st); ok {
		w.Header().Set("Content-Length", n)
	}
	w.WriteHeader(status)
	if err := st.write(w); err != nil {
		s.opt.Log.Warn("writing a prediction to the client failed", "prediction_id", st.ID, "error", err.Error())
	}
}
