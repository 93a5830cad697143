package providertest

import (
	"encoding/json"
	"net/http"
	"sync"
)

// Fault is an answer a fake gives to a creation (a Replicate creation, a
// Cog PUT, a fal submission) instead of its own.
type Fault struct {
	Status     int
	RetryAfter string
	Body       string
	// Lose: the prediction is created, then the connection is dropped
	// before any answer: a submission whose answer is lost (Replicate and
	// fal).
	Lose bool
	// Location is sent as the answer's Location header: with a 3xx
	// Status, a redirect.
	Location string
}

// Request is one request a fake was sent, as it arrived.
type Request struct {
	Method, Path  string
	Authorization string
}

// record is what every fake keeps of the calls it was sent, under the lock
// of all of a fake's state: the faults queued for its next creations, how
// many predictions it started and which it was asked to cancel.
type record struct {
	mu      sync.Mutex
	faults  []Fault
	creates int
	cancels []string
	seen    []Request
}

// Requests lists every request the fake was sent, in order.
func (r *record) Requests() []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Request(nil), r.seen...)
}

// keep records each request before h answers it.
func (r *record) keep(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.seen = append(r.seen, Request{Method: req.Method, Path: req.URL.Path, Authorization: req.Header.Get("Authorization")})
		r.mu.Unlock()
		h.ServeHTTP(w, req)
	})
}

// headers writes a fault's Retry-After and Location.
func (f *Fault) headers(w http.ResponseWriter) {
	if f.RetryAfter != "" {
		w.Header().Set("Retry-After", f.RetryAfter)
	}
	if f.Location != "" {
		w.Header().Set("Location", f.Location)
	}
}

// FailNext queues answers given to the next creations instead of their own.
func (r *record) FailNext(f ...Fault) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.faults = append(r.faults, f...)
}

// Creates is how many predictions were started (fal: requests queued; a
// Cog PUT of a running id starts none).
func (r *record) Creates() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.creates
}

// Cancels lists the ids whose cancellation was asked for, in order
// (Replicate: of the predictions it knows).
func (r *record) Cancels() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.cancels...)
}

// nextFault takes the next queued fault, nil when none is; the caller
// holds mu.
func (r *record) nextFault() *Fault {
	if len(r.faults) == 0 {
		return nil
	}
	f := r.faults[0]
	r.faults = r.faults[1:]
	return &f
}

// creation is the body of a prediction's creation, as Replicate's API and
// a Cog server both take it (each reads its own of ID and Version).
type creation struct {
	ID      string         `json:"id"`      // Cog's
	Version string         `json:"version"` // Replicate's
	Input   map[string]any `json:"input"`
	Webhook string         `json:"webhook"`
	Filter  []string       `json:"webhook_events_filter"`
}

// readCreation reads a creation's body; false when it is not a JSON object
// with an input.
func readCreation(req *http.Request) (creation, bool) {
	var c creation
	err := decodeJSON(req, &c)
	return c, err == nil && c.Input != nil
}

// decodeJSON reads a request's JSON body into v, numbers as written (the
// providers pass inputs on to the model as they came).
func decodeJSON(req *http.Request, v any) error {
	dec := json.NewDecoder(req.Body)
	dec.UseNumber()
	return dec.Decode(v)
}
