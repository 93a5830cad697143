package providertest

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"genjobs/internal/provider/fal"
)

// FalRequest is a request as the fal fake holds it.
type FalRequest struct {
	ID      string
	Model   string // the model id it was submitted to, with its path
	Input   map[string]any
	Webhook string
	// StartTimeout is the X-Fal-Request-Start-Timeout it was sent with.
	StartTimeout string
	Status       string // IN_QUEUE, IN_PROGRESS, COMPLETED
	Logs         []string
	// Result is the model's output once COMPLETED; ErrStatus and ErrBody
	// the model's error instead (the result answers them).
	Result    any
	ErrStatus int
	ErrBody   string
	Cancelled bool
}

// Fal fakes fal's queue API (queue.fal.run), as fal's queue and webhook
// documentation describe it: POST /{model id}?fal_webhook=..., GET
// /{owner}/{app}/requests/{id}/status (202 until COMPLETED, then 200),
// GET /{owner}/{app}/requests/{id} (the result, or the model's error), PUT
// .../cancel; Authorization: Key {Key}; webhooks signed with ED25519 by a
// key of its JWKS (JWKSURL), with the X-Fal-Webhook-* headers.
type Fal struct {
	URL     string // the base_url of a route
	JWKSURL string // the jwks_url of a route
	Key     string // the API key it accepts
	UserID  string // the account's user id its webhooks name

	record
	reqs     map[string]*FalRequest
	order    []string
	submits  int // submissions answered (faults included)
	jwksHits int
	jwksDown bool
	signing  ed25519.PrivateKey // the key webhooks are signed with
	served   []ed25519.PublicKey
}

// NewFal starts a fake on 127.0.0.1.
func NewFal(t testing.TB) *Fal {
	f := &Fal{Key: "fal-test-key", UserID: "user_fake", reqs: map[string]*FalRequest{}}
	f.signing = f.newKey()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/jwks.json", f.jwks)
	mux.HandleFunc("GET /{owner}/{app}/requests/{id}/status", f.status)
	mux.HandleFunc("GET /{owner}/{app}/requests/{id}", f.result)
	mux.HandleFunc("PUT /{owner}/{app}/requests/{id}/cancel", f.cancel)
	mux.HandleFunc("POST /{model...}", f.submit)
	srv := Listen(t, f.keep(mux))
	f.URL, f.JWKSURL = srv.URL, srv.URL+"/.well-known/jwks.json"
	return f
}

// newKey makes a signing key and serves its public half.
func (f *Fal) newKey() ed25519.PrivateKey {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		panic(err)
	}
	f.served = append(f.served, pub)
	return priv
}

// Rotate signs from now on with a new key, served beside the old ones.
func (f *Fal) Rotate() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.signing = f.newKey()
}

// JWKSDown makes the JWKS answer 503 (down true) or its keys again.
func (f *Fal) JWKSDown(down bool) { f.mu.Lock(); f.jwksDown = down; f.mu.Unlock() }

// JWKSHits is how many times the JWKS was fetched.
func (f *Fal) JWKSHits() int { f.mu.Lock(); defer f.mu.Unlock(); return f.jwksHits }

// Submits is how many submissions were answered (refusals included);
// Creates how many requests were queued.
func (f *Fal) Submits() int { f.mu.Lock(); defer f.mu.Unlock(); return f.submits }

// Only returns the one request, failing the test if there is not exactly one.
func (f *Fal) Only(t testing.TB) FalRequest {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.order) != 1 {
		t.Fatalf("fal fake holds %d requests; want 1", len(f.order))
	}
	return *f.reqs[f.order[0]]
}

// ForJob returns the id of the request whose webhook names job jobID.
func (f *Fal) ForJob(jobID string) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, id := range f.order {
		if strings.Contains(f.reqs[id].Webhook, "/"+jobID+"/") {
			return id, true
		}
	}
	return "", false
}

// Set moves request id to status with logs; COMPLETED with result, or with
// the model's error (errStatus, errBody) when errStatus is set.
func (f *Fal) Set(id, status string, logs []string, result any, errStatus int, errBody string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.reqs[id]
	r.Status, r.Logs, r.Result, r.ErrStatus, r.ErrBody = status, logs, result, errStatus, errBody
}

func (f *Fal) authorised(w http.ResponseWriter, req *http.Request) bool {
	if req.Header.Get("Authorization") != "Key "+f.Key {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"detail": "Unauthorized"})
		return false
	}
	return true
}

func (f *Fal) urls(model, id string) (status, response, cancel string) {
	parts := strings.SplitN(model, "/", 3)
	base := f.URL + "/" + parts[0] + "/" + parts[1] + "/requests/" + id
	return base + "/status", base, base + "/cancel"
}

func (f *Fal) submit(w http.ResponseWriter, req *http.Request) {
	if !f.authorised(w, req) {
		return
	}
	model := req.PathValue("model")
	if strings.Count(model, "/") < 1 {
		writeJSON(w, http.StatusNotFound, map[string]any{"detail": "Application not found"})
		return
	}
	var input map[string]any
	if err := decodeJSON(req, &input); err != nil {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"detail": "the body is not a JSON object"})
		return
	}
	f.mu.Lock()
	f.submits++
	fault := f.nextFault()
	if fault != nil && !fault.Lose {
		f.mu.Unlock()
		fault.headers(w)
		writeJSON(w, fault.Status, map[string]any{"detail": fault.Body})
		return
	}
	id := newRequestID()
	r := &FalRequest{ID: id, Model: model, Input: input, Webhook: req.URL.Query().Get("fal_webhook"),
		StartTimeout: req.Header.Get("X-Fal-Request-Start-Timeout"), Status: fal.InQueue}
	f.reqs[id] = r
	f.order = append(f.order, id)
	f.creates++
	f.mu.Unlock()
	if fault != nil && fault.Lose {
		hijackClose(w)
		return
	}
	status, response, cancel := f.urls(model, id)
	writeJSON(w, http.StatusOK, map[string]any{"request_id": id, "gateway_request_id": id, "status": fal.InQueue,
		"status_url": status, "response_url": response, "cancel_url": cancel, "queue_position": 0})
}

func (f *Fal) find(w http.ResponseWriter, req *http.Request) (FalRequest, bool) {
	if !f.authorised(w, req) {
		return FalRequest{}, false
	}
	f.mu.Lock()
	r, ok := f.reqs[req.PathValue("id")]
	var out FalRequest
	if ok {
		out = *r
	}
	f.mu.Unlock()
	if !ok || !strings.HasPrefix(r.Model, req.PathValue("owner")+"/"+req.PathValue("app")) {
		writeJSON(w, http.StatusNotFound, map[string]any{"detail": "Request not found"})
		return FalRequest{}, false
	}
	return out, true
}

func (f *Fal) status(w http.ResponseWriter, req *http.Request) {
	r, ok := f.find(w, req)
	if !ok {
		return
	}
	_, response, _ := f.urls(r.Model, r.ID)
	body := map[string]any{"status": r.Status, "request_id": r.ID, "response_url": response}
	if r.Status == fal.InQueue {
		body["queue_position"] = 0
	}
	if req.URL.Query().Get("logs") == "1" {
		logs := []map[string]any{}
		for _, l := range r.Logs {
			logs = append(logs, map[string]any{"message": l, "level": "INFO", "source": "user", "timestamp": time.Now().UTC().Format(time.RFC3339)})
		}
		body["logs"] = logs
	}
	code := http.StatusAccepted
	if r.Status == fal.Completed {
		code = http.StatusOK
	}
	writeJSON(w, code, body)
}

func (f *Fal) result(w http.ResponseWriter, req *http.Request) {
	r, ok := f.find(w, req)
	if !ok {
		return
	}
	switch {
	case r.Status != fal.Completed:
		writeJSON(w, http.StatusBadRequest, map[string]any{"detail": "Request is still in progress"})
	case r.ErrStatus != 0:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(r.ErrStatus)
		_, _ = w.Write([]byte(r.ErrBody))
	default:
		writeJSON(w, http.StatusOK, r.Result)
	}
}

func (f *Fal) cancel(w http.ResponseWriter, req *http.Request) {
	if !f.authorised(w, req) {
		return
	}
	id := req.PathValue("id")
	f.mu.Lock()
	f.cancels = append(f.cancels, id)
	r, ok := f.reqs[id]
	completed := ok && r.Status == fal.Completed
	if ok && !completed {
		r.Cancelled = true
	}
	f.mu.Unlock()
	switch {
	case !ok:
		writeJSON(w, http.StatusNotFound, map[string]any{"status": "NOT_FOUND"})
	case completed:
		writeJSON(w, http.StatusBadRequest, map[string]any{"status": "ALREADY_COMPLETED"})
	default:
		writeJSON(w, http.StatusAccepted, map[string]any{"status": "CANCELLATION_REQUESTED"})
	}
}

func (f *Fal) jwks(w http.ResponseWriter, _ *http.Request) {
	f.mu.Lock()
	f.jwksHits++
	down := f.jwksDown
	var keys []map[string]any
	for i, k := range f.served {
		keys = append(keys, map[string]any{"kty": "OKP", "crv": "Ed25519", "use": "sig", "alg": "EdDSA",
			"kid": strconv.Itoa(i), "x": base64.RawURLEncoding.EncodeToString(k)})
	}
	f.mu.Unlock()
	if down {
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"detail": "unavailable"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"keys": keys})
}

// FalWebhook is one webhook as the fake would send it; tests may spoil it.
type FalWebhook struct {
	URL    string
	Body   []byte
	Header http.Header
}

// Webhook builds request id's webhook as fal sends it when the request has
// ended, signed at time at: status OK with the result as payload, or
// ERROR with the model's error.
func (f *Fal) Webhook(id string, at time.Time) FalWebhook {
	f.mu.Lock()
	r := *f.reqs[id]
	key := f.signing
	f.mu.Unlock()
	body := map[string]any{"request_id": id, "gateway_request_id": id, "status": "OK", "payload": r.Result}
	if r.ErrStatus != 0 {
		var detail any
		if json.Unmarshal([]byte(r.ErrBody), &detail) != nil {
			detail = r.ErrBody
		}
		body = map[string]any{"request_id": id, "gateway_request_id": id, "status": "ERROR",
			"error": fmt.Sprintf("Invalid status code: %d", r.ErrStatus), "payload": detail}
	}
	b, _ := json.Marshal(body)
	return f.Sign(r.Webhook, id, b, at, key)
}

// Sign signs body as fal would with key, at time at.
func (f *Fal) Sign(u, id string, body []byte, at time.Time, key ed25519.PrivateKey) FalWebhook {
	ts := strconv.FormatInt(at.Unix(), 10)
	sig := ed25519.Sign(key, fal.Message(id, f.UserID, ts, body))
	h := http.Header{"Content-Type": {"application/json"}}
	h.Set(fal.HeaderRequestID, id)
	h.Set(fal.HeaderUserID, f.UserID)
	h.Set(fal.HeaderTimestamp, ts)
	h.Set(fal.HeaderSignature, hex.EncodeToString(sig))
	return FalWebhook{URL: u, Body: body, Header: h}
}

// Callback sends request id's webhook now and returns the answer's status.
func (f *Fal) Callback(t testing.TB, id string) int {
	t.Helper()
	w := f.Webhook(id, time.Now())
	return Send(t, w.URL, w.Body, w.Header)
}

// StrangerKey is a signing key the fake's JWKS never serves.
func StrangerKey() ed25519.PrivateKey {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		panic(err)
	}
	return priv
}

func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
