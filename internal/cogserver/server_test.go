package cogserver_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"image"
	"image/color"
	"image/gif"
	"image/png"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"genjobs/internal/catalog"
	"genjobs/internal/cogserver"
	"genjobs/internal/engine"
	"genjobs/internal/engine/generate"
	"genjobs/internal/engine/reference"
	"genjobs/internal/fetch"
	"genjobs/internal/netguard"
)

const token = "webhook-token-for-tests"

// wait bounds every wait of these tests: a hang fails, it never blocks the run.
const wait = 60 * time.Second

// harness is a model server on 127.0.0.1 and a webhook receiver.
type harness struct {
	t    testing.TB
	base string // the server's URL
	hook *receiver
	logs chan string // the messages the server logs
}

func newHarness(t testing.TB, engines engine.Registry, change func(o *cogserver.Options, base string)) *harness {
	t.Helper()
	cat, err := catalog.New()
	if err != nil {
		t.Fatal(err)
	}
	// Every address of these tests is 127.0.0.1.
	guard := &netguard.Guard{AllowPrivate: true}
	opt := cogserver.Options{
		Catalog:      cat,
		Engines:      engines,
		Inputs:       fetch.New(guard),
		Webhooks:     &http.Client{Transport: guard.Transport(), Timeout: wait},
		WebhookToken: token,
		TempDir:      t.TempDir(),
		RetryBase:    time.Millisecond,
	}
	logs := make(chan string, 10000)
	opt.Log = slog.New(messages(logs))
	hs := httptest.NewUnstartedServer(nil)
	base := "http://" + hs.Listener.Addr().String()
	if change != nil {
		change(&opt, base)
	}
	srv, err := cogserver.New(opt)
	if err != nil {
		t.Fatal(err)
	}
	hs.Config.Handler = srv
	hs.Start()
	t.Cleanup(hs.Close)
	t.Cleanup(srv.Close) // first: it ends what runs, so that hs.Close has nothing to wait for
	return &harness{t: t, base: hs.URL, hook: newReceiver(t), logs: logs}
}

// messages is a slog.Handler that passes each message on.
type messages chan string

func (m messages) Enabled(context.Context, slog.Level) bool { return true }
func (m messages) WithAttrs([]slog.Attr) slog.Handler       { return m }
func (m messages) WithGroup(string) slog.Handler            { return m }
func (m messages) Handle(_ context.Context, r slog.Record) error {
	select {
	case m <- r.Message:
	default:
	}
	return nil
}

// waitLog waits until the server logs a message starting with prefix.
func (h *harness) waitLog(prefix string) string {
	h.t.Helper()
	timeout := time.After(wait)
	for {
		select {
		case m := <-h.logs:
			if strings.HasPrefix(m, prefix) {
				return m
			}
		case <-timeout:
			h.t.Fatalf("the server never logged %q", prefix)
			return ""
		}
	}
}

// call sends one request and decodes the JSON answer.
func (h *harness) call(method, path string, body any, header ...string) (int, map[string]any) {
	h.t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			h.t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, h.base+path, r)
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		h.t.Fatalf("%s %s: the answer (%d) is not a JSON object: %v", method, path, resp.StatusCode, err)
	}
	return resp.StatusCode, out
}

// putAsync is PUT {base}/predictions/{id} with Prefer: respond-async.
func (h *harness) putAsync(model, id string, body map[string]any) (int, map[string]any) {
	return h.call(http.MethodPut, "/"+model+"/predictions/"+id, body, "Prefer", "respond-async")
}

// receiver records the webhook requests it gets.
type receiver struct {
	t   testing.TB
	url string
	got chan delivery
	// refuse answers the first completed deliveries with these statuses.
	mu     sync.Mutex
	refuse []int
}

type delivery struct {
	auth string
	body map[string]any
}

func newReceiver(t testing.TB) *receiver {
	rc := &receiver{t: t, got: make(chan delivery, 1000)}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			t.Errorf("a webhook body is not JSON: %v", err)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		status := http.StatusOK
		rc.mu.Lock()
		if body["status"] == "succeeded" || body["status"] == "failed" || body["status"] == "canceled" {
			if len(rc.refuse) > 0 {
				status, rc.refuse = rc.refuse[0], rc.refuse[1:]
			}
		}
		rc.mu.Unlock()
		rc.got <- delivery{auth: r.Header.Get("Authorization"), body: body}
		w.WriteHeader(status)
	}))
	t.Cleanup(hs.Close)
	rc.url = hs.URL + "/hook"
	return rc
}

// next returns the next webhook request.
func (rc *receiver) next() delivery {
	rc.t.Helper()
	select {
	case d := <-rc.got:
		return d
	case <-time.After(wait):
		rc.t.Fatal("no webhook came")
		return delivery{}
	}
}

// until returns the webhook requests up to the first whose status is one
// of statuses.
func (rc *receiver) until(statuses ...string) []delivery {
	rc.t.Helper()
	var seen []delivery
	for {
		d := rc.next()
		seen = append(seen, d)
		for _, s := range statuses {
			if d.body["status"] == s {
				return seen
			}
		}
	}
}

// none fails if a webhook request is waiting.
func (rc *receiver) none() {
	rc.t.Helper()
	select {
	case d := <-rc.got:
		rc.t.Fatalf("unexpected webhook: %v", d.body)
	default:
	}
}

// dataURI decodes a data: URI output.
func dataURI(t testing.TB, v any) (string, []byte) {
	t.Helper()
	s, ok := v.(string)
	if !ok {
		t.Fatalf("output is %T %v, not a data: URI", v, v)
	}
	meta, payload, ok := strings.Cut(strings.TrimPrefix(s, "data:"), ";base64,")
	if !ok || !strings.HasPrefix(s, "data:") {
		t.Fatalf("output %.60q is not a base64 data: URI", s)
	}
	b, err := base64.StdEncoding.DecodeString(payload)
	if err != nil {
		t.Fatalf("output's base64: %v", err)
	}
	return meta, b
}

// testCatalog is compiled once: compiling is the expensive part.
var testCatalog = sync.OnceValues(catalog.New)

// engineOutput runs an engine directly on a request, as the worker would.
func engineOutput(t testing.TB, eng engine.Engine, endpoint string, body map[string]any) []byte {
	t.Helper()
	cat, err := testCatalog()
	if err != nil {
		t.Fatal(err)
	}
	ep, _ := cat.ByPath(endpoint)
	raw, _ := json.Marshal(body)
	req, err := ep.Decode(raw, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	files, err := eng.Run(context.Background(), engine.Job{Model: ep.Model, Request: req.JSON()}, func(engine.Update) error { return nil })
	if err != nil || len(files) != 1 {
		t.Fatalf("engine: %d files, %v", len(files), err)
	}
	return files[0].Data
}

var progressLine = regexp.MustCompile(`(?m)^\s*(\d+)%\s*\|.+?\|\s*(\d+)/(\d+)`)

// An asynchronous prediction: 202 starting, a start webhook (processing)
// and a completed one (succeeded) with the bearer token, the output the
// engine's own PNG of the asked size.
func TestAsyncPredictionDeliversTheEngineOutputByWebhook(t *testing.T) {
	h := newHarness(t, reference.Engines(), nil)
	input := map[string]any{"prompt": "a lighthouse at dusk", "width": 200, "height": 120}
	status, body := h.putAsync("image/vendor-b/model-e-4", "pred-1", map[string]any{
		"input": input, "webhook": h.hook.url, "webhook_events_filter": []string{"start", "completed"},
	})
	if status != http.StatusAccepted || body["id"] != "pred-1" || body["status"] != "starting" {
		t.Fatalf("PUT answered %d %v, want 202 {id: pred-1, status: starting}", status, body)
	}

	hooks := h.hook.until("succeeded", "failed", "canceled")
	if len(hooks) != 2 || hooks[0].body["status"] != "processing" {
		t.Fatalf("webhooks %v: want start (processing) then completed only", statuses(hooks))
	}
	for _, d := range hooks {
		if d.auth != "Bearer "+token {
			t.Errorf("webhook Authorization %q, want the bearer token", d.auth)
		}
	}
	done := hooks[1].body
	if done["status"] != "succeeded" || done["id"] != "pred-1" {
		t.Fatalf("completed webhook: %v", done)
	}
	meta, data := dataURI(t, done["output"])
	if meta != "image/png" {
		t.Errorf("output type %q, want image/png", meta)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != 200 || b.Dy() != 120 {
		t.Errorf("output is %dx%d, want 200x120", b.Dx(), b.Dy())
	}
	if want := engineOutput(t, generate.Image{}, "/generate/image/vendor-b/model-e-4", input); !bytes.Equal(data, want) {
		t.Error("the output is not the reference engine's output for this request")
	}
	if !progressLine.MatchString(done["logs"].(string)) {
		t.Errorf("logs have no progress line: %q", done["logs"])
	}
	if m, _ := done["metrics"].(map[string]any); m["predict_time"] == nil {
		t.Errorf("metrics %v lack predict_time", done["metrics"])
	}
}

func statuses(ds []delivery) []any {
	var s []any
	for _, d := range ds {
		s = append(s, d.body["status"])
	}
	return s
}

// An enhance prediction fetches its image_url from a server on
// 127.0.0.1; with the default filter every event comes: start, logs with
// progress, output (still processing, the outputs so far as a list) and
// completed with the one output.
func TestEnhanceFetchesItsInputAndSendsEveryEvent(t *testing.T) {
	h := newHarness(t, reference.Engines(), nil)
	src := image.NewRGBA(image.Rect(0, 0, 64, 48))
	for y := range 48 {
		for x := range 64 {
			src.Set(x, y, color.RGBA{uint8(x * 4), uint8(y * 5), 90, 255})
		}
	}
	var pngBytes bytes.Buffer
	if err := png.Encode(&pngBytes, src); err != nil {
		t.Fatal(err)
	}
	files := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Write(pngBytes.Bytes())
	}))
	defer files.Close()

	status, _ := h.putAsync("enhance/vendor-a/standard-enhance", "enh-1", map[string]any{
		"input": map[string]any{
			"image_url": files.URL + "/photo.png", "model": "Standard V2",
			"width": 320, "height": 240, "output_format": "png",
		},
		"webhook": h.hook.url,
	})
	if status != http.StatusAccepted {
		t.Fatalf("PUT answered %d", status)
	}
	hooks := h.hook.until("succeeded", "failed", "canceled")
	var sawOutput bool
	for _, d := range hooks[:len(hooks)-1] {
		if d.body["status"] != "processing" {
			t.Errorf("a webhook before the completed one has status %v", d.body["status"])
		}
		if list, ok := d.body["output"].([]any); ok && len(list) == 1 {
			sawOutput = true
		}
	}
	if !sawOutput {
		t.Error("no output webhook with the output list came before completed")
	}
	done := hooks[len(hooks)-1].body
	if done["status"] != "succeeded" {
		t.Fatalf("completed: %v", done)
	}
	if logs := done["logs"].(string); !strings.Contains(logs, "fetched image_url: image/png") || !progressLine.MatchString(logs) {
		t.Errorf("logs %q lack the fetch or progress", logs)
	}
	_, data := dataURI(t, done["output"])
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != 320 || b.Dy() != 240 {
		t.Errorf("output is %dx%d, want 320x240", b.Dx(), b.Dy())
	}
}

// A video model answers its animation as one data: URI of the GIF.
func TestSynchronousVideoPrediction(t *testing.T) {
	h := newHarness(t, reference.Engines(), nil)
	status, body := h.call(http.MethodPut, "/video/vendor-f/model-f-2.2/predictions/vid-1", map[string]any{
		"input": map[string]any{"prompt": "waves", "width": 160, "height": 90, "duration": 2},
	})
	if status != http.StatusOK || body["status"] != "succeeded" {
		t.Fatalf("PUT answered %d %v", status, body)
	}
	meta, data := dataURI(t, body["output"])
	if meta != "image/gif" {
		t.Errorf("output type %q", meta)
	}
	anim, err := gif.DecodeAll(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(anim.Image) != 2*generate.VideoFPS || anim.Config.Width != 160 || anim.Config.Height != 90 {
		t.Errorf("GIF of %d frames %dx%d, want %d frames 160x90", len(anim.Image), anim.Config.Width, anim.Config.Height, 2*generate.VideoFPS)
	}
}

// gate is an engine that, at its first progress report, waits until its
// context ends: a prediction that is running for as long as a test needs.
type gate struct {
	engine.Engine
	runs    atomic.Int32
	started chan struct{}
	stopped chan error // what Run returned
}

func newGate(e engine.Engine) *gate {
	return &gate{Engine: e, started: make(chan struct{}, 10), stopped: make(chan error, 10)}
}

func (g *gate) Run(ctx context.Context, j engine.Job, report engine.Report) ([]engine.File, error) {
	g.runs.Add(1)
	held := false
	files, err := g.Engine.Run(ctx, j, func(u engine.Update) error {
		if err := report(u); err != nil {
			return err
		}
		if !held {
			held = true
			g.started <- struct{}{}
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	})
	g.stopped <- err
	return files, err
}

func (g *gate) waitStarted(t *testing.T) {
	t.Helper()
	select {
	case <-g.started:
	case <-time.After(wait):
		t.Fatal("the engine did not start")
	}
}

func gated(model string, g *gate) engine.Registry {
	r := reference.Engines()
	r[model] = g
	return r
}

// Cancel mid-run ends the engine's context and the prediction canceled;
// the server forgets it (a second cancel is 404).
func TestCancelStopsTheEngine(t *testing.T) {
	g := newGate(generate.Video{})
	h := newHarness(t, gated("model-c", g), nil)
	const model = "video/vendor-c/model-c"
	status, _ := h.putAsync(model, "vid-cancel", map[string]any{
		"input": map[string]any{"prompt": "a storm"}, "webhook": h.hook.url,
		"webhook_events_filter": []string{"start", "completed"},
	})
	if status != http.StatusAccepted {
		t.Fatalf("PUT answered %d", status)
	}
	g.waitStarted(t)
	if d := h.hook.next(); d.body["status"] != "processing" {
		t.Fatalf("first webhook %v, want start (processing)", d.body)
	}

	if status, body := h.call(http.MethodPost, "/"+model+"/predictions/vid-cancel/cancel", nil); status != http.StatusOK || len(body) != 0 {
		t.Fatalf("cancel answered %d %v, want 200 {}", status, body)
	}
	select {
	case err := <-g.stopped:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the engine returned %v, want its context's cancellation", err)
		}
	case <-time.After(wait):
		t.Fatal("the engine did not stop")
	}
	done := h.hook.next().body
	if done["status"] != "canceled" || done["output"] != nil {
		t.Fatalf("completed webhook %v, want canceled without output", done)
	}
	if status, _ := h.call(http.MethodPost, "/"+model+"/predictions/vid-cancel/cancel", nil); status != http.StatusNotFound {
		t.Errorf("cancel of an ended prediction answered %d, want 404", status)
	}
}

// While a prediction runs, a PUT with its id (same input or not) answers
// its state and starts nothing; another id gets 409 (one slot); the body's
// id must match the URL's.
func TestIdempotentPutWhileRunning(t *testing.T) {
	g := newGate(generate.Video{})
	h := newHarness(t, gated("model-c", g), nil)
	const model = "video/vendor-c/model-c"
	first := map[string]any{"input": map[string]any{"prompt": "a storm", "duration": 3}, "webhook": h.hook.url, "webhook_events_filter": []string{"completed"}}
	if status, _ := h.putAsync(model, "same", first); status != http.StatusAccepted {
		t.Fatalf("PUT answered %d", status)
	}
	g.waitStarted(t)

	for _, in := range []map[string]any{
		first["input"].(map[string]any),
		{"prompt": "something else entirely", "duration": 9},
	} {
		status, body := h.putAsync(model, "same", map[string]any{"input": in, "webhook": h.hook.url})
		if status != http.StatusAccepted || body["id"] != "same" || body["status"] != "processing" {
			t.Fatalf("repeated PUT answered %d %v, want 202 with the running prediction", status, body)
		}
		if got := body["input"].(map[string]any); got["prompt"] != "a storm" {
			t.Errorf("repeated PUT shows input %v, want the running prediction's", got)
		}
	}
	if status, body := h.putAsync(model, "other", first); status != http.StatusConflict || body["status"] != "failed" {
		t.Errorf("a second id while the slot is taken answered %d %v, want 409", status, body)
	}
	if _, body := h.call(http.MethodGet, "/"+model+"/health-check", nil); body["status"] != "BUSY" {
		t.Errorf("health-check %v, want BUSY", body)
	}
	if status, body := h.putAsync(model, "same", map[string]any{"id": "not-same", "input": first["input"]}); status != http.StatusUnprocessableEntity {
		t.Errorf("a body id that differs from the URL's answered %d %v, want 422", status, body)
	}
	if n := g.runs.Load(); n != 1 {
		t.Errorf("the engine ran %d times, want once", n)
	}

	h.call(http.MethodPost, "/"+model+"/predictions/same/cancel", nil)
	if d := h.hook.next(); d.body["status"] != "canceled" {
		t.Fatalf("completed webhook %v", d.body)
	}
	h.hook.none() // one prediction, one completed webhook
	// Ended, the prediction is forgotten: the same id runs again.
	if status, body := h.putAsync(model, "same", first); status != http.StatusAccepted || body["status"] != "starting" {
		t.Errorf("PUT after the end answered %d %v, want a new prediction", status, body)
	}
	g.waitStarted(t)
	if n := g.runs.Load(); n != 2 {
		t.Errorf("the engine ran %d times, want twice", n)
	}
}

// Input the schema refuses: 422 with Cog's detail list naming the rule;
// nothing runs and no webhook is sent.
func TestBadInputIsRefusedWith422(t *testing.T) {
	h := newHarness(t, reference.Engines(), nil)
	const model = "image/vendor-b/model-e-4"
	for _, tc := range []struct {
		name string
		body map[string]any
		msg  string
	}{
		{"missing field", map[string]any{"input": map[string]any{"prompt": "x", "width": 100}}, "height"},
		{"wrong type", map[string]any{"input": map[string]any{"prompt": "x", "width": "wide", "height": 100}}, "width"},
		{"out of range", map[string]any{"input": map[string]any{"prompt": "x", "width": 100000, "height": 100}}, "width"},
		{"unknown event", map[string]any{"input": map[string]any{"prompt": "x", "width": 100, "height": 100}, "webhook_events_filter": []string{"done"}}, "done"},
		{"webhook not http", map[string]any{"input": map[string]any{"prompt": "x", "width": 100, "height": 100}, "webhook": "ftp://127.0.0.1/x"}, "webhook"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, ok := tc.body["webhook"]; !ok {
				tc.body["webhook"] = h.hook.url
			}
			status, body := h.putAsync(model, "bad", tc.body)
			if status != http.StatusUnprocessableEntity {
				t.Fatalf("answered %d %v, want 422", status, body)
			}
			list, _ := body["detail"].([]any)
			if len(list) != 1 {
				t.Fatalf("detail %v, want one entry", body["detail"])
			}
			d := list[0].(map[string]any)
			if msg, _ := d["msg"].(string); !strings.Contains(msg, tc.msg) || d["loc"] == nil || d["type"] != "value_error" {
				t.Errorf("detail %v, want loc, type value_error and a msg naming %q", d, tc.msg)
			}
		})
	}
	if _, body := h.call(http.MethodGet, "/"+model+"/health-check", nil); body["status"] != "READY" {
		t.Errorf("health-check %v, want READY: nothing runs", body)
	}
	h.hook.none()
	if status, _ := h.call(http.MethodPut, "/"+model+"/predictions/sse", map[string]any{}, "Accept", "text/event-stream"); status != http.StatusNotAcceptable {
		t.Errorf("a stream request answered %d, want 406", status)
	}
	if status, _ := h.call(http.MethodPut, "/image/vendor-x/nothing/predictions/a", map[string]any{}); status != http.StatusNotFound {
		t.Errorf("an unknown model answered %d, want 404", status)
	}
}

// An input the fetch cannot use fails the prediction with the reason.
func TestUnusableInputFailsThePrediction(t *testing.T) {
	h := newHarness(t, reference.Engines(), nil)
	missing := httptest.NewServer(http.NotFoundHandler())
	defer missing.Close()
	h.putAsync("enhance/vendor-a/standard-enhance", "enh-404", map[string]any{
		"input":   map[string]any{"image_url": missing.URL + "/gone.png", "model": "Standard V2", "width": 100, "height": 100},
		"webhook": h.hook.url, "webhook_events_filter": []string{"completed"},
	})
	done := h.hook.next().body
	if done["status"] != "failed" || done["error"] != "image_url: the server answered 404" {
		t.Errorf("completed webhook %v, want failed naming the 404", done)
	}
}

// The completed webhook is retried on 503 until accepted, and not after a
// 400; the other events are sent once.
func TestCompletedWebhookRetries(t *testing.T) {
	for _, tc := range []struct {
		refuse []int
		want   int    // completed deliveries
		end    string // what the server logs after the last
	}{
		{[]int{503, 503}, 3, "completed webhook delivered"},
		{[]int{429, 500, 502, 504}, 5, "completed webhook delivered"},
		{[]int{400}, 1, "the completed webhook was refused"},
	} {
		h := newHarness(t, reference.Engines(), nil)
		h.hook.refuse = tc.refuse
		h.putAsync("image/vendor-b/model-e-4", "retry", map[string]any{
			"input":   map[string]any{"prompt": "x", "width": 64, "height": 64},
			"webhook": h.hook.url, "webhook_events_filter": []string{"completed"},
		})
		for i := range tc.want {
			if d := h.hook.next(); d.body["status"] != "succeeded" || d.body["output"] == nil {
				t.Fatalf("refusing %v: delivery %d is %v", tc.refuse, i, d.body["status"])
			}
		}
		// The sender logs its outcome after its last request, which the
		// receiver records before it answers: nothing more was sent.
		h.waitLog(tc.end)
		h.hook.none()
	}
}

// POST /predictions makes up an id (Cog's recommended form) when the body
// has none, and GET /openapi.json shows the endpoint's schema as Input.
func TestPostPredictionAndOpenAPI(t *testing.T) {
	h := newHarness(t, reference.Engines(), nil)
	const model = "3d/vendor-g/model-g-3.1-rapid"
	status, body := h.call(http.MethodPost, "/"+model+"/predictions", map[string]any{
		"input": map[string]any{"prompt": "a teapot"}, "webhook": h.hook.url, "webhook_events_filter": []string{"completed"},
	}, "Prefer", "respond-async")
	id, _ := body["id"].(string)
	if status != http.StatusAccepted || !regexp.MustCompile(`^[a-z2-7]{26}$`).MatchString(id) {
		t.Fatalf("POST answered %d %v, want 202 with a 26-character base32 id", status, body)
	}
	done := h.hook.next().body
	meta, data := dataURI(t, done["output"])
	if done["id"] != id || meta != "model/gltf-binary" || !bytes.HasPrefix(data, []byte("glTF")) {
		t.Errorf("completed %v with %s output starting %q, want the id and a binary glTF", done["id"], meta, data[:min(4, len(data))])
	}

	_, doc := h.call(http.MethodGet, "/"+model+"/openapi.json", nil)
	schemas, _ := doc["components"].(map[string]any)["schemas"].(map[string]any)
	input, _ := schemas["Input"].(map[string]any)
	if props, _ := input["properties"].(map[string]any); props["prompt"] == nil || props["mode"] == nil {
		t.Errorf("openapi.json Input is %v, want the endpoint's request schema", input)
	}
	if _, conditional := input["allOf"]; conditional || doc["openapi"] != "3.0.2" {
		t.Errorf("openapi.json (OpenAPI %v) Input carries the schema's if/then conditions, which OpenAPI 3.0 has no keywords for", doc["openapi"])
	}
	if _, paths := doc["paths"].(map[string]any)["/"+model+"/predictions/{prediction_id}"]; !paths {
		t.Errorf("openapi.json paths lack the idempotent PUT under the model's prefix")
	}
}

// A synchronous client that goes away cancels its prediction, as Cog does.
func TestSynchronousClientDisconnectCancels(t *testing.T) {
	g := newGate(generate.Video{})
	h := newHarness(t, gated("model-c", g), nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	body, _ := json.Marshal(map[string]any{
		"input": map[string]any{"prompt": "rain"}, "webhook": h.hook.url, "webhook_events_filter": []string{"completed"},
	})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPut, h.base+"/video/vendor-c/model-c/predictions/sync-1", bytes.NewReader(body))
	answered := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		answered <- err
	}()
	g.waitStarted(t)
	cancel()
	if err := <-answered; !errors.Is(err, context.Canceled) {
		t.Fatalf("the client's request ended with %v", err)
	}
	if d := h.hook.next(); d.body["status"] != "canceled" {
		t.Errorf("completed webhook %v, want canceled", d.body)
	}
	if err := <-g.stopped; !errors.Is(err, context.Canceled) {
		t.Errorf("the engine returned %v, want its context's cancellation", err)
	}
}

// With an upload URL (Cog's --upload-url) the output is the URL the file
// was uploaded to; the server's own /uploads/ serves it, so a webhook stays
// small however large the output.
func TestOutputsUploadedToTheServerItself(t *testing.T) {
	h := newHarness(t, reference.Engines(), func(o *cogserver.Options, base string) { o.UploadURL = base + "/uploads/" })
	input := map[string]any{"prompt": "a lighthouse at dusk", "width": 300, "height": 200}
	h.putAsync("image/vendor-b/model-e-4", "up-1", map[string]any{
		"input": input, "webhook": h.hook.url, "webhook_events_filter": []string{"completed"},
	})
	done := h.hook.next().body
	u, _ := done["output"].(string)
	if done["status"] != "succeeded" || !strings.HasPrefix(u, h.base+"/uploads/") {
		t.Fatalf("completed %v with output %q, want a URL under %s/uploads/", done["status"], u, h.base)
	}
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "image/png" {
		t.Fatalf("GET %s: %d %s", u, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if want := engineOutput(t, generate.Image{}, "/generate/image/vendor-b/model-e-4", input); !bytes.Equal(data, want) {
		t.Error("the uploaded file is not the engine's output")
	}

	for _, name := range []string{"..", ".hidden", "a%2Fb"} {
		req, _ := http.NewRequest(http.MethodPut, h.base+"/uploads/"+name, strings.NewReader("x"))
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode/100 == 2 {
				t.Errorf("PUT /uploads/%s answered %d", name, resp.StatusCode)
			}
		}
	}
}

// An upload that fails fails the prediction, as Cog does.
func TestFailedUploadFailsThePrediction(t *testing.T) {
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer broken.Close()
	h := newHarness(t, reference.Engines(), func(o *cogserver.Options, _ string) { o.UploadURL = broken.URL + "/up" })
	h.putAsync("image/vendor-b/model-e-4", "up-2", map[string]any{
		"input":   map[string]any{"prompt": "x", "width": 64, "height": 64},
		"webhook": h.hook.url, "webhook_events_filter": []string{"completed"},
	})
	if done := h.hook.next().body; done["status"] != "failed" || done["error"] != "The output could not be uploaded." || done["output"] != nil {
		t.Errorf("completed webhook %v, want failed without output", done)
	}
}

// An empty webhook_events_filter asks for no webhook at all.
func TestEmptyEventFilterSendsNothing(t *testing.T) {
	h := newHarness(t, reference.Engines(), nil)
	status, _ := h.putAsync("image/vendor-b/model-e-4", "quiet", map[string]any{
		"input":   map[string]any{"prompt": "x", "width": 64, "height": 64},
		"webhook": h.hook.url, "webhook_events_filter": []string{},
	})
	if status != http.StatusAccepted {
		t.Fatalf("PUT answered %d", status)
	}
	h.waitLog("prediction done") // logged once every webhook has been sent
	h.hook.none()
}

// An image input given as a data: URI is decoded, not fetched.
func TestDataURIInput(t *testing.T) {
	h := newHarness(t, reference.Engines(), nil)
	src := image.NewRGBA(image.Rect(0, 0, 16, 9))
	for i := range src.Pix {
		src.Pix[i] = uint8(i * 7)
	}
	var b bytes.Buffer
	if err := png.Encode(&b, src); err != nil {
		t.Fatal(err)
	}
	status, body := h.call(http.MethodPut, "/video/vendor-f/model-f-2.2/predictions/data-1", map[string]any{
		"input": map[string]any{
			"prompt": "pan", "width": 128, "height": 72, "duration": 2,
			"start_image": "data:image/png;base64," + base64.StdEncoding.EncodeToString(b.Bytes()),
		},
	})
	if status != http.StatusOK || body["status"] != "succeeded" {
		t.Fatalf("PUT answered %d %v", status, body)
	}
	if logs := body["logs"].(string); !strings.Contains(logs, "fetched start_image: image/png") {
		t.Errorf("logs %q do not show the input", logs)
	}
	if meta, _ := dataURI(t, body["output"]); meta != "image/gif" {
		t.Errorf("output type %q", meta)
	}
}

// Each upload carries the prediction's id in X-Prediction-ID, as Cog's
// Python server sends it, and the output is the Location the upload store
// answered, its query removed.
func TestUploadNamesThePredictionAndReportsLocation(t *testing.T) {
	got := make(chan http.Header, 4)
	store := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Location", "http://store.invalid/kept/"+r.Header.Get("X-Prediction-ID")+"?sig=secret")
		w.WriteHeader(http.StatusCreated)
	}))
	defer store.Close()
	h := newHarness(t, reference.Engines(), func(o *cogserver.Options, _ string) { o.UploadURL = store.URL + "/up/" })
	h.putAsync("image/vendor-b/model-e-4", "pred-up-3", map[string]any{
		"input":   map[string]any{"prompt": "x", "width": 64, "height": 64},
		"webhook": h.hook.url, "webhook_events_filter": []string{"completed"},
	})
	done := h.hook.next().body
	if done["status"] != "succeeded" || done["output"] != "http://store.invalid/kept/pred-up-3" {
		t.Fatalf("completed %v with output %v; want the Location without its query", done["status"], done["output"])
	}
	hdr := <-got
	if hdr.Get("X-Prediction-ID") != "pred-up-3" || hdr.Get("Content-Type") != "image/png" {
		t.Errorf("upload headers %v; want X-Prediction-ID and the file's type", hdr)
	}
}

// With ReportPaths and no upload URL the output is the file's path on the
// server's disk, as Cog's Python server reports it without --upload-url.
func TestReportPathsGivesTheFilesPath(t *testing.T) {
	h := newHarness(t, reference.Engines(), func(o *cogserver.Options, _ string) { o.ReportPaths = true })
	h.putAsync("image/vendor-b/model-e-4", "pred-path", map[string]any{
		"input":   map[string]any{"prompt": "x", "width": 64, "height": 64},
		"webhook": h.hook.url, "webhook_events_filter": []string{"completed"},
	})
	done := h.hook.next().body
	p, _ := done["output"].(string)
	if done["status"] != "succeeded" || !strings.HasPrefix(p, "/") || !strings.HasSuffix(p, ".png") {
		t.Fatalf("completed %v with output %q; want a path on the server's disk", done["status"], p)
	}
}
