package providertest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// CogPrediction is a prediction the Cog fake runs.
type CogPrediction struct {
	ID      string         `json:"id"`
	Status  string         `json:"status"`
	Input   map[string]any `json:"input"`
	Output  any            `json:"output,omitempty"`
	Error   any            `json:"error,omitempty"`
	Logs    string         `json:"logs"`
	Webhook string         `json:"-"`
	Filter  []string       `json:"-"`
}

// Cog fakes a Cog model server under a path prefix (as the repository's
// model server serves one model per prefix): PUT {prefix}/predictions/{id}
// with Prefer: respond-async, idempotent while the prediction runs and
// forgotten once it has ended; POST {prefix}/predictions/{id}/cancel;
// webhooks with Authorization: Bearer WebhookToken when it is set.
type Cog struct {
	URL          string // the base_url of a route: server address and prefix
	WebhookToken string
	// Mode is how Complete reports output files; UploadURL is the
	// server's --upload-url for CogUpload.
	Mode      CogMode
	UploadURL string

	record
	running map[string]*CogPrediction
	puts    int
	uploads []int
	sent    map[string]CogPrediction // the last webhook of each prediction
}

// NewCog starts a fake on 127.0.0.1 serving under prefix (e.g.
// /image/vendor-b/model-e-4).
func NewCog(t testing.TB, prefix string) *Cog {
	c := &Cog{running: map[string]*CogPrediction{}, sent: map[string]CogPrediction{}, WebhookToken: "cog-webhook-token"}
	mux := http.NewServeMux()
	mux.HandleFunc("PUT "+prefix+"/predictions/{id}", c.put)
	mux.HandleFunc("POST "+prefix+"/predictions/{id}/cancel", c.cancel)
	c.URL = Listen(t, c.keep(mux)).URL + prefix
	return c
}

// Puts is how many PUTs were answered (a PUT of a running id starts no
// prediction: Creates).
func (c *Cog) Puts() int { c.mu.Lock(); defer c.mu.Unlock(); return c.puts }

// Running returns the running prediction of id.
func (c *Cog) Running(id string) (CogPrediction, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.running[id]
	if !ok {
		return CogPrediction{}, false
	}
	return *p, true
}

func (c *Cog) put(w http.ResponseWriter, req *http.Request) {
	body, ok := readCreation(req)
	if !ok {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"detail": []map[string]any{{"loc": []string{"body", "input"}, "msg": "field required"}}})
		return
	}
	id := req.PathValue("id")
	c.mu.Lock()
	c.puts++
	if f := c.nextFault(); f != nil {
		c.mu.Unlock()
		f.headers(w)
		w.WriteHeader(f.Status)
		_, _ = w.Write([]byte(f.Body))
		return
	}
	p, ok := c.running[id]
	if !ok {
		p = &CogPrediction{ID: id, Status: "starting", Input: body.Input, Webhook: body.Webhook, Filter: body.Filter}
		c.running[id] = p
		c.creates++
	}
	out := *p
	c.mu.Unlock()
	if req.Header.Get("Prefer") != "respond-async" {
		writeJSON(w, http.StatusBadRequest, map[string]any{"detail": "this fake serves asynchronous predictions only"})
		return
	}
	writeJSON(w, http.StatusAccepted, out)
}

func (c *Cog) cancel(w http.ResponseWriter, req *http.Request) {
	id := req.PathValue("id")
	c.mu.Lock()
	c.cancels = append(c.cancels, id)
	p, ok := c.running[id]
	if ok {
		p.Status = "canceled"
		delete(c.running, id)
	}
	c.mu.Unlock()
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]any{"detail": "Not Found"})
		return
	}
	w.WriteHeader(http.StatusOK)
}

// Start moves a prediction to processing with logs and sends its webhook
// (as the output/logs events would), returning the answer's status code.
func (c *Cog) Start(t testing.TB, id, logs string) int {
	t.Helper()
	c.mu.Lock()
	p := c.running[id]
	p.Status, p.Logs = "processing", logs
	out := *p
	c.mu.Unlock()
	return c.send(t, out)
}

// Finish ends a prediction (succeeded with output, or failed with errMsg),
// forgets it as Cog does, and sends its completed webhook unless lose.
func (c *Cog) Finish(t testing.TB, id string, output any, errMsg string, lose bool) int {
	t.Helper()
	c.mu.Lock()
	p := c.running[id]
	if p == nil {
		c.mu.Unlock()
		t.Fatalf("cog fake: no running prediction %s", id)
	}
	p.Status, p.Output = "succeeded", output
	if errMsg != "" {
		p.Status, p.Error = "failed", errMsg
	}
	out := *p
	delete(c.running, id)
	c.mu.Unlock()
	if lose {
		return 0
	}
	return c.send(t, out)
}

// Resend sends the last webhook of prediction id again, as Cog's webhook
// sender retries a delivery whose answer it did not get.
func (c *Cog) Resend(t testing.TB, id string) int {
	t.Helper()
	c.mu.Lock()
	p, ok := c.sent[id]
	c.mu.Unlock()
	if !ok {
		t.Fatalf("cog fake: no webhook sent for %s", id)
	}
	return c.send(t, p)
}

func (c *Cog) send(t testing.TB, p CogPrediction) int {
	c.mu.Lock()
	c.sent[p.ID] = p
	c.mu.Unlock()
	body, _ := json.Marshal(p)
	h := http.Header{"Content-Type": {"application/json"}}
	if c.WebhookToken != "" {
		h.Set("Authorization", "Bearer "+c.WebhookToken)
	}
	return Send(t, p.Webhook, body, h)
}

// CogMode is how a Cog server reports an output file, by release and flags
// (replicate/cog: python/cog/files.py and server/runner.py of the Python
// server, crates/coglet of the Rust one).
type CogMode int

// Cog's ways of reporting an output file.
const (
	// CogDataURI: data:{type};base64,{bytes}, as the Rust server (0.17 and
	// later) and releases before 0.10 report a file without an upload store.
	CogDataURI CogMode = iota
	// CogUpload: started with --upload-url, the server PUTs the file to
	// {UploadURL}{file name} with its Content-Type and X-Prediction-ID (the
	// Python server, 0.10 to 0.16) and reports the Location answered, else
	// the URL, its query removed. A failed upload fails the prediction.
	CogUpload
	// CogPath: the Python server (0.10 to 0.16) without --upload-url reports
	// the file's path on its own disk.
	CogPath
)

// CogFile is an output file of a prediction.
type CogFile struct {
	Name        string
	ContentType string
	Data        []byte
}

// Complete ends prediction id as succeeded with files, reported the way
// the fake's Mode says (one file as a string, several as a list), forgets
// it, and sends its completed webhook unless lose; it returns the
// webhook's answer (0 when lost). An upload that fails fails the
// prediction, as Cog's Python server does.
func (c *Cog) Complete(t testing.TB, id string, lose bool, files ...CogFile) int {
	t.Helper()
	var outs []any
	errMsg := ""
	for _, f := range files {
		switch c.Mode {
		case CogDataURI:
			outs = append(outs, "data:"+f.ContentType+";base64,"+base64.StdEncoding.EncodeToString(f.Data))
		case CogPath:
			outs = append(outs, "/tmp/tmp"+id[:8]+"/"+f.Name)
		case CogUpload:
			u, err := c.upload(id, f)
			if err != nil {
				errMsg = "Got error trying to upload output files: " + err.Error()
				break
			}
			outs = append(outs, u)
		}
	}
	var output any = outs
	if len(outs) == 1 {
		output = outs[0]
	}
	if errMsg != "" {
		output = nil
	}
	return c.Finish(t, id, output, errMsg, lose)
}

// upload PUTs f as Cog's put_file_to_signed_endpoint does.
func (c *Cog) upload(id string, f CogFile) (string, error) {
	target := c.UploadURL
	if !strings.HasSuffix(target, "/") {
		target += "/"
	}
	target += f.Name
	req, err := http.NewRequest(http.MethodPut, target, bytes.NewReader(f.Data))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", f.ContentType)
	req.Header.Set("X-Prediction-ID", id)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	c.mu.Lock()
	c.uploads = append(c.uploads, resp.StatusCode)
	c.mu.Unlock()
	if resp.StatusCode/100 != 2 {
		return "", fmt.Errorf("%d %s for url: %s", resp.StatusCode, http.StatusText(resp.StatusCode), target)
	}
	final := resp.Request.URL
	if loc := resp.Header.Get("Location"); loc != "" {
		if u, err := final.Parse(loc); err == nil {
			final = u
		}
	}
	out := *final
	out.RawQuery, out.ForceQuery = "", false
	return out.String(), nil
}

// Uploads lists the status codes the upload store answered the fake's PUTs.
func (c *Cog) Uploads() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]int(nil), c.uploads...)
}

// Files serves output files on 127.0.0.1, each in a way a test chooses.
type Files struct {
	URL   string
	mu    sync.Mutex
	files map[string]File
	hits  map[string]int
}

// File is one served file.
type File struct {
	ContentType string
	Data        []byte
	Status      int    // answered instead of the file when set
	StopAfter   int    // when > 0: the connection drops after this many bytes
	ClaimLength bool   // send Content-Length of Data (with StopAfter: more than is sent)
	Redirect    string // when set: answered 302 to this URL instead
}

// NewFiles starts a file server on 127.0.0.1.
func NewFiles(t testing.TB) *Files {
	f := newFiles()
	f.URL = Listen(t, http.HandlerFunc(f.serve)).URL
	return f
}

func newFiles() *Files { return &Files{files: map[string]File{}, hits: map[string]int{}} }

// Hits counts the requests for path.
func (f *Files) Hits(path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hits[path]
}

// Put serves file at path and returns its URL.
func (f *Files) Put(path string, file File) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.files[path] = file
	return f.URL + path
}

func (f *Files) serve(w http.ResponseWriter, req *http.Request) {
	f.mu.Lock()
	file, ok := f.files[req.URL.Path]
	f.hits[req.URL.Path]++
	f.mu.Unlock()
	if !ok {
		http.NotFound(w, req)
		return
	}
	if file.Redirect != "" {
		http.Redirect(w, req, file.Redirect, http.StatusFound)
		return
	}
	if file.Status != 0 {
		w.WriteHeader(file.Status)
		return
	}
	w.Header().Set("Content-Type", file.ContentType)
	if file.ClaimLength || file.StopAfter > 0 {
		w.Header().Set("Content-Length", strconv.Itoa(len(file.Data)))
	}
	data := file.Data
	if file.StopAfter > 0 {
		data = data[:file.StopAfter]
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(data)
	if file.StopAfter > 0 {
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
		hijackClose(w)
	}
}
