// Package providertest has protocol-level fakes of the model providers, for
// tests: Replicate's predictions API with Standard Webhooks signatures,
// fal's queue API with ED25519-signed webhooks and its JWKS, a Cog model
// server in each of the ways Cog reports output files, and a file server
// for outputs. Each listens on 127.0.0.1 only. They follow the providers'
// public documentation and source (Replicate's HTTP API reference and
// webhook guide; fal's queue and webhook documentation; the replicate/cog
// repository's HTTP document and servers), not any client of ours.
package providertest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"genjobs/internal/provider/replicate"
)

// Listen starts handler on 127.0.0.1 and closes it when the test ends.
func Listen(t testing.TB, handler http.Handler) *httptest.Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: handler}}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// RPrediction is a prediction as the Replicate fake holds it.
type RPrediction struct {
	ID      string         `json:"id"`
	Model   string         `json:"model,omitempty"`
	Version string         `json:"version,omitempty"`
	Status  string         `json:"status"`
	Input   map[string]any `json:"input"`
	Output  any            `json:"output"`
	Error   any            `json:"error"`
	Logs    string         `json:"logs"`
	Webhook string         `json:"webhook,omitempty"`
	Filter  []string       `json:"webhook_events_filter,omitempty"`
	Created string         `json:"created_at"`
}

// Replicate fakes Replicate's predictions API.
type Replicate struct {
	URL           string
	Token         string // the API token it accepts
	WebhookSecret string // whsec_..., signs its webhooks

	record
	preds map[string]*RPrediction
	order []string // newest last
	reads int
	seq   int
	// Hide leaves the webhook out of list items, as the real list does
	// not promise it: Find then reads each prediction.
	Hide bool
	// Succeed, when set, is the output of every prediction created: each
	// has succeeded by its creation's answer.
	Succeed any
	// Files serves files under /files/ on the API's own host.
	Files *Files
	// Next, when set, is the list's first page: no predictions, and Next
	// as its next page's URL.
	Next string
}

// NewReplicate starts a fake on 127.0.0.1.
func NewReplicate(t testing.TB) *Replicate {
	r := &Replicate{Token: "r8_test_token", WebhookSecret: "whsec_" + base64.StdEncoding.EncodeToString([]byte("test webhook signing key 32bytes")),
		preds: map[string]*RPrediction{}, Files: newFiles()}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /files/", r.Files.serve)
	mux.HandleFunc("POST /v1/models/{owner}/{name}/predictions", r.create)
	mux.HandleFunc("POST /v1/predictions", r.create)
	mux.HandleFunc("GET /v1/predictions", r.list)
	mux.HandleFunc("GET /v1/predictions/{id}", r.get)
	mux.HandleFunc("POST /v1/predictions/{id}/cancel", r.cancel)
	r.URL = Listen(t, r.keep(mux)).URL
	r.Files.URL = r.URL
	return r
}

// Reads is how many reads of a single prediction were answered.
func (r *Replicate) Reads() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reads
}

// Only returns the one prediction created, failing the test otherwise.
func (r *Replicate) Only(t testing.TB) RPrediction {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.order) != 1 {
		t.Fatalf("the fake holds %d predictions; want exactly 1", len(r.order))
	}
	return *r.preds[r.order[0]]
}

// ForJob returns the id of the prediction whose webhook names the job.
func (r *Replicate) ForJob(jobID string) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range r.order {
		if strings.Contains(r.preds[id].Webhook, "/"+jobID+"/") {
			return id, true
		}
	}
	return "", false
}

// Set changes a prediction: status, logs, output (any JSON value), error.
func (r *Replicate) Set(id, status, logs string, output any, errMsg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.preds[id]
	p.Status, p.Logs, p.Output = status, logs, output
	if errMsg != "" {
		p.Error = errMsg
	}
}

func (r *Replicate) authorised(w http.ResponseWriter, req *http.Request) bool {
	if req.Header.Get("Authorization") != "Bearer "+r.Token {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"title":"Unauthenticated","detail":"You did not pass a valid authentication token","status":401}`))
		return false
	}
	return true
}

func (r *Replicate) create(w http.ResponseWriter, req *http.Request) {
	if !r.authorised(w, req) {
		return
	}
	body, ok := readCreation(req)
	if !ok {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"title": "Invalid input", "detail": "input is required", "status": 422})
		return
	}
	r.mu.Lock()
	f := r.nextFault()
	if f != nil && !f.Lose {
		r.mu.Unlock()
		f.headers(w)
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(f.Status)
		_, _ = w.Write([]byte(f.Body))
		return
	}
	r.seq++
	p := &RPrediction{
		ID: fmt.Sprintf("rpred%04dxyz", r.seq), Version: body.Version, Status: "starting", Input: body.Input,
		Webhook: body.Webhook, Filter: body.Filter, Created: time.Now().UTC().Format(time.RFC3339Nano),
	}
	if owner := req.PathValue("owner"); owner != "" {
		p.Model = owner + "/" + req.PathValue("name")
	}
	if r.Succeed != nil {
		p.Status, p.Output = "succeeded", r.Succeed
	}
	r.preds[p.ID] = p
	r.order = append(r.order, p.ID)
	r.creates++
	out := *p
	r.mu.Unlock()
	if f != nil && f.Lose {
		hijackClose(w)
		return
	}
	writeJSON(w, http.StatusCreated, out)
}

func (r *Replicate) get(w http.ResponseWriter, req *http.Request) {
	if !r.authorised(w, req) {
		return
	}
	r.mu.Lock()
	p, ok := r.preds[req.PathValue("id")]
	var out RPrediction
	if ok {
		out = *p
		r.reads++
	}
	r.mu.Unlock()
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]any{"detail": "Not found.", "status": 404})
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (r *Replicate) list(w http.ResponseWriter, req *http.Request) {
	if !r.authorised(w, req) {
		return
	}
	r.mu.Lock()
	if r.Next != "" && req.URL.Query().Get("cursor") == "" {
		next := r.Next
		r.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{"next": next, "previous": nil, "results": []RPrediction{}})
		return
	}
	var results []RPrediction
	for i := len(r.order) - 1; i >= 0; i-- { // newest first
		p := *r.preds[r.order[i]]
		if r.Hide {
			p.Webhook = ""
		}
		results = append(results, p)
	}
	r.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"next": nil, "previous": nil, "results": results})
}

func (r *Replicate) cancel(w http.ResponseWriter, req *http.Request) {
	if !r.authorised(w, req) {
		return
	}
	r.mu.Lock()
	p, ok := r.preds[req.PathValue("id")]
	var out RPrediction
	if ok {
		if p.Status == "starting" || p.Status == "processing" {
			p.Status = "canceled"
		}
		r.cancels = append(r.cancels, p.ID)
		out = *p
	}
	r.mu.Unlock()
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]any{"detail": "Not found.", "status": 404})
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// Webhook is the signed callback Replicate would send about prediction id
// now: its URL, body and Standard Webhooks headers, with the timestamp at.
func (r *Replicate) Webhook(id string, at time.Time) (url string, body []byte, h http.Header) {
	r.mu.Lock()
	p := *r.preds[id]
	r.mu.Unlock()
	body, _ = json.Marshal(p)
	msgID := "msg_" + strconv.FormatInt(at.UnixNano(), 36)
	ts := strconv.FormatInt(at.Unix(), 10)
	key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(r.WebhookSecret, "whsec_"))
	h = http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("webhook-id", msgID)
	h.Set("webhook-timestamp", ts)
	h.Set("webhook-signature", "v1,"+replicate.Sign(key, msgID, ts, body))
	return p.Webhook, body, h
}

// Send posts a callback and returns the answer's status code.
func Send(t testing.TB, url string, body []byte, h http.Header) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = h.Clone()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// Callback sends prediction id's signed webhook as Replicate would now.
func (r *Replicate) Callback(t testing.TB, id string) int {
	t.Helper()
	url, body, h := r.Webhook(id, time.Now())
	return Send(t, url, body, h)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// hijackClose drops the connection without an answer.
func hijackClose(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic("providertest: the server cannot hijack")
	}
	conn, _, err := hj.Hijack()
	if err == nil {
		conn.Close()
	}
}
