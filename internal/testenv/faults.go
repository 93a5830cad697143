package testenv

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
)

// Fault is how Faults fails a call: the ways a dependency fails in an
// outage, as the SDK sees them on the wire.
type Fault int

const (
	// Pass sends the call on to the emulator.
	Pass Fault = iota
	// Freeze reads the request and never answers, as a process stopped
	// with SIGSTOP does (the kernel still accepts its connections): the
	// call ends only when the client gives up on it.
	Freeze
	// Throttle answers the service's throttling error: 400
	// ThrottlingException (JSON protocols), 503 SlowDown (S3).
	Throttle
	// Unavailable answers 503 ServiceUnavailable.
	Unavailable
	// Drop closes the connection without an answer: a network failure.
	Drop
	// refusal answers a service's refusal: a 400 with the code Refuse
	// named (JSON protocols).
	refusal
)

// Faults is an HTTP proxy in front of an emulator (or any endpoint of a
// test) that fails the calls a test chooses and passes the rest, so a test
// can make one dependency fail the way an outage does without harming the
// emulators other tests share. Point a client's BaseEndpoint at URL.
type Faults struct {
	URL string

	mu     sync.Mutex
	rules  []rule         // the latest first
	failed map[string]int // calls failed, by operation name
	done   chan struct{}  // closed when the test ends: frozen calls return
}

// rule fails the calls of op ("*": any) whose body contains contains.
type rule struct {
	op, contains string
	fault        Fault
	code         string // a refusal's error code
}

// NewFaults starts a proxy to upstream (http://host:port), stopped when
// the test ends. Every call passes until Set says otherwise.
func NewFaults(t testing.TB, upstream string) *Faults {
	t.Helper()
	target, err := url.Parse(upstream)
	if err != nil {
		t.Fatalf("testenv: upstream %q: %v", upstream, err)
	}
	f := &Faults{failed: map[string]int{}, done: make(chan struct{})}
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		op := Operation(r)
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		fault, code := f.fault(op, body)
		switch fault {
		case refusal:
			w.Header().Set("Content-Type", r.Header.Get("Content-Type"))
			w.Header().Set("X-Amzn-Query-Error", code+";Sender")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"__type":"` + code + `","message":"refused by the test (` + code + `)"}`))
		case Pass:
			proxy.ServeHTTP(w, r)
		case Freeze:
			// The request was read whole, so the server notices when the
			// client closes the connection.
			select {
			case <-r.Context().Done():
			case <-f.done:
			}
		case Drop:
			if hj, ok := w.(http.Hijacker); ok {
				if conn, _, err := hj.Hijack(); err == nil {
					_ = conn.Close()
				}
			}
		default:
			writeFault(w, r, fault)
		}
	}))
	f.URL = srv.URL
	t.Cleanup(func() {
		close(f.done)
		srv.Close()
	})
	return f
}

// Set makes every later call of operation op (an API name such as
// TransactWriteItems, SendMessage, GetPublicKey or PutObject; "*" for all)
// fail with fault; Pass lifts it.
func (f *Faults) Set(op string, fault Fault) { f.SetIf(op, "", fault) }

// SetIf is Set for the calls of op whose body contains the text contains
// (a key prefix such as "JOB#" tells apart the GetItem calls of a request).
// The rule set last decides when several match.
func (f *Faults) SetIf(op, contains string, fault Fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules = slices.DeleteFunc(f.rules, func(r rule) bool { return r.op == op && r.contains == contains })
	if fault != Pass {
		f.rules = slices.Insert(f.rules, 0, rule{op: op, contains: contains, fault: fault})
	}
}

// Refuse makes every later call of op whose body contains contains answer
// the service's refusal code (a 400 with that error type, as a JSON
// protocol service answers: Cognito's CodeMismatchException,
// InvalidParameterException, ...): the errors an emulator cannot be made to
// give. The rule set last decides when several match.
func (f *Faults) Refuse(op, contains, code string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules = slices.DeleteFunc(f.rules, func(r rule) bool { return r.op == op && r.contains == contains })
	f.rules = slices.Insert(f.rules, 0, rule{op: op, contains: contains, fault: refusal, code: code})
}

// Clear lets every call pass again.
func (f *Faults) Clear() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules = nil
}

// Failed is how many calls of op (attempts, retries included) were failed.
func (f *Faults) Failed(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failed[op]
}

func (f *Faults) fault(op string, body []byte) (Fault, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.rules {
		if (r.op == op || r.op == "*") && bytes.Contains(body, []byte(r.contains)) {
			f.failed[op]++
			return r.fault, r.code
		}
	}
	return Pass, ""
}

// Operation names the API call r makes: the action of X-Amz-Target for the
// JSON protocols (DynamoDB, SQS, KMS), and for S3 the object operation of
// its method (PutObject, GetObject, HeadObject, DeleteObject) or the method
// and "Bucket" on a bucket.
func Operation(r *http.Request) string {
	if target := r.Header.Get("X-Amz-Target"); target != "" {
		return target[strings.LastIndex(target, ".")+1:]
	}
	method := strings.ToUpper(r.Method[:1]) + strings.ToLower(r.Method[1:])
	if strings.Count(strings.Trim(r.URL.Path, "/"), "/") == 0 {
		return method + "Bucket"
	}
	return method + "Object"
}

// writeFault answers the error of fault in the protocol of r.
func writeFault(w http.ResponseWriter, r *http.Request, fault Fault) {
	code, message, status := "ServiceUnavailable", "Service is unavailable; try again later.", http.StatusServiceUnavailable
	if fault == Throttle {
		code, message, status = "ThrottlingException", "Rate of requests exceeds the allowed throughput.", http.StatusBadRequest
	}
	if r.Header.Get("X-Amz-Target") == "" { // S3: XML
		if fault == Throttle {
			code, message, status = "SlowDown", "Please reduce your request rate.", http.StatusServiceUnavailable
		}
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>` + code + `</Code><Message>` + message + `</Message></Error>`))
		return
	}
	w.Header().Set("Content-Type", r.Header.Get("Content-Type"))
	w.Header().Set("X-Amzn-Query-Error", code+";Sender") // SQS's JSON protocol reads the code here too
	w.WriteHeader(status)
	_, _ = w.Write([]byte(`{"__type":"` + code + `","message":"` + message + `"}`))
}

// ClosedEndpoint returns the address of a local port nothing listens on:
// a dependency that is down.
func ClosedEndpoint(t testing.TB) string {
	t.Helper()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	return url
}
