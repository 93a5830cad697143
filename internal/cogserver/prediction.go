package cogserver

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"genjobs/internal/catalog"
	"genjobs/internal/engine"
	"genjobs/internal/fetch"
)

// Cog's statuses.
const (
	statusStarting   = "starting"
	statusProcessing = "processing"
	statusSucceeded  = "succeeded"
	statusFailed     = "failed"
	statusCanceled   = "canceled"
)

// engineFailed is the error of a prediction whose engine failed for a reason
// of ours; the cause is logged, not shown.
const engineFailed = "The engine failed to produce the output."

// prediction is one run of a model, from admission until the server
// forgets it.
type prediction struct {
	s     *Server
	m     *model
	id    string
	input json.RawMessage // as the client gave it, unknown fields stripped
	req   *catalog.Request
	log   *slog.Logger
	dir   string // the outputs' files; removed once nobody reads them

	ctx    context.Context // ends on cancel: the engine stops
	cancel context.CancelFunc
	done   chan struct{} // closed once the prediction has ended
	hooks  *hooks        // nil without a webhook
	// users are the readers of the output files besides the prediction:
	// the webhook sender and a synchronous request's answer.
	users sync.WaitGroup

	mu        sync.Mutex
	status    string
	logs      strings.Builder
	errMsg    string
	outputs   []output
	percent   int // the last progress written to the logs
	created   time.Time
	started   time.Time
	completed time.Time
}

// output is one output file of a prediction, and its URL once uploaded.
type output struct {
	path        string
	contentType string
	url         string
}

func (s *Server) newPrediction(m *model, id string, input json.RawMessage, req *catalog.Request, hook *url.URL, events map[string]bool, log *slog.Logger) (*prediction, error) {
	dir, err := os.MkdirTemp(s.opt.TempDir, "cogserver-")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(s.closing) // Close cancels it too
	p := &prediction{
		s: s, m: m, id: id, input: input, req: req, log: log, dir: dir,
		ctx: ctx, cancel: cancel, done: make(chan struct{}),
		status: statusStarting, created: s.opt.Clock.Now(),
	}
	if hook != nil && len(events) > 0 {
		p.hooks = &hooks{p: p, url: hook.String(), events: events, queue: make(chan delivery, 64)}
	}
	return p, nil
}

// discard drops a prediction that was never admitted.
func (p *prediction) discard() {
	p.cancel()
	if err := os.RemoveAll(p.dir); err != nil {
		p.log.Warn("could not remove a prediction's directory", "dir", p.dir, "error", err.Error())
	}
}

// hold keeps the outputs until release, for an answer that reads them.
func (p *prediction) hold()    { p.users.Add(1) }
func (p *prediction) release() { p.users.Done() }

// run works on an admitted prediction until it ends, then sends the
// completed webhook and forgets it.
func (s *Server) run(p *prediction) {
	if p.hooks != nil {
		p.users.Add(1)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer p.users.Done()
			p.hooks.send()
		}()
	}
	status, msg := p.work()
	p.end(status, msg)
	p.m.forget(p)
	close(p.done)
	p.users.Wait()
	if err := os.RemoveAll(p.dir); err != nil {
		p.log.Warn("could not remove a prediction's directory", "dir", p.dir, "error", err.Error())
	}
	p.log.Debug("prediction done: its webhooks are sent and its files removed")
}

// work fetches the inputs and runs the engine; it returns the status the
// prediction ends with and, when it failed, the error shown.
func (p *prediction) work() (status, msg string) {
	defer func() {
		if v := recover(); v != nil { // a bug of ours fails the prediction, not the server
			p.log.Error("panic in a prediction", "panic", fmt.Sprint(v))
			status, msg = statusFailed, engineFailed
		}
	}()
	p.mu.Lock()
	p.status = statusProcessing
	p.started = p.s.opt.Clock.Now()
	p.mu.Unlock()
	p.emit(eventStart)
	p.log.Info("prediction started")

	var inputs []engine.Input
	for _, ref := range p.m.ep.ImageRefs(p.req.Params) {
		img, err := p.s.opt.Inputs.Fetch(p.ctx, ref.Name(), ref.Ref)
		switch {
		case p.ctx.Err() != nil:
			return statusCanceled, ""
		case errors.Is(err, fetch.ErrInvalid), errors.Is(err, fetch.ErrBlocked):
			return statusFailed, err.Error()
		case err != nil:
			p.log.Error("fetching an input failed", "field", ref.Name(), "error", err.Error())
			return statusFailed, ref.Name() + ": the input could not be fetched"
		}
		inputs = append(inputs, engine.Input{Field: ref.Field, Index: ref.Index, ContentType: img.ContentType, Data: img.Data})
		p.appendLog(fmt.Sprintf("fetched %s: %s, %d bytes\n", ref.Name(), img.ContentType, len(img.Data)))
	}

	out := &sink{dir: p.dir}
	files, err := p.m.eng.Run(p.ctx, engine.Job{Model: p.m.ep.Model, Request: p.req.JSON(), Inputs: inputs, Outputs: out}, p.report)
	switch {
	case p.ctx.Err() != nil:
		return statusCanceled, ""
	case errors.Is(err, engine.ErrInvalidInput):
		return statusFailed, err.Error()
	case err != nil:
		p.log.Error("the engine failed", "error", err.Error())
		return statusFailed, engineFailed
	}
	outs := out.complete()
	for _, f := range files { // returned whole: after the streamed ones
		o, err := out.write(f)
		if err != nil {
			p.log.Error("could not keep an output", "error", err.Error())
			return statusFailed, engineFailed
		}
		outs = append(outs, o)
	}
	for i, o := range outs {
		if p.s.opt.UploadURL != "" {
			u, err := p.upload(p.ctx, o)
			switch {
			case p.ctx.Err() != nil:
				return statusCanceled, ""
			case err != nil:
				p.log.Error("an output could not be uploaded", "error", err.Error())
				return statusFailed, "The output could not be uploaded."
			}
			o.url = u
		} else if p.s.opt.ReportPaths {
			o.url = o.path // written as the output as it stands
		}
		size := int64(-1)
		if fi, err := os.Stat(o.path); err == nil {
			size = fi.Size()
		}
		p.mu.Lock()
		p.outputs = append(p.outputs, o)
		p.mu.Unlock()
		if o.url != "" {
			p.appendLog(fmt.Sprintf("output %d: %s, %d bytes, at %s\n", i, o.contentType, size, o.url))
		} else {
			p.appendLog(fmt.Sprintf("output %d: %s, %d bytes\n", i, o.contentType, size))
		}
		p.emit(eventOutput)
	}
	return statusSucceeded, ""
}

// report is the engine's Report: progress goes to the logs as tqdm lines.
func (p *prediction) report(u engine.Update) error {
	if err := p.ctx.Err(); err != nil {
		return err
	}
	pct := min(max(int(u.Progress*100), 0), 100)
	p.mu.Lock()
	if pct <= p.percent {
		p.mu.Unlock()
		return nil
	}
	p.percent = pct
	p.logs.WriteString(progressLine(pct))
	p.mu.Unlock()
	p.emit(eventLogs)
	return nil
}

// progressLine is a progress bar as tqdm prints it: " 45%|#########
// | 45/100". Replicate's clients read the percentage from the last such
// line of the logs.
func progressLine(pct int) string {
	const width = 20
	done := pct * width / 100
	return fmt.Sprintf("%3d%%|%s%s| %d/100\n", pct, strings.Repeat("#", done), strings.Repeat(" ", width-done), pct)
}

func (p *prediction) appendLog(line string) {
	p.mu.Lock()
	p.logs.WriteString(line)
	p.mu.Unlock()
	p.emit(eventLogs)
}

// end records the final status and queues the completed webhook.
func (p *prediction) end(status, msg string) {
	p.mu.Lock()
	p.status, p.errMsg = status, msg
	p.completed = p.s.opt.Clock.Now()
	if p.started.IsZero() {
		p.started = p.completed
	}
	p.mu.Unlock()
	if msg != "" {
		p.log.Info("prediction ended", "status", status, "error", msg)
	} else {
		p.log.Info("prediction ended", "status", status)
	}
	if p.hooks != nil {
		p.hooks.finish(p.snapshot(false))
	}
}

// state is a prediction as Cog writes it, its output aside.
type state struct {
	ID          string          `json:"id"`
	Status      string          `json:"status"`
	Input       json.RawMessage `json:"input,omitempty"`
	Logs        string          `json:"logs"`
	Error       string          `json:"error,omitempty"`
	Metrics     map[string]any  `json:"metrics"`
	CreatedAt   string          `json:"created_at"`
	StartedAt   string          `json:"started_at,omitempty"`
	CompletedAt string          `json:"completed_at,omitempty"`
}

// snapshot is a prediction's state at one moment, with its outputs so far.
type snapshot struct {
	state
	outputs []output
	single  bool // the output is one value, not a list
}

func (p *prediction) snapshot(withInput bool) snapshot {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := snapshot{
		state: state{
			ID: p.id, Status: p.status, Logs: p.logs.String(), Error: p.errMsg,
			Metrics:   map[string]any{},
			CreatedAt: stamp(p.created), StartedAt: stamp(p.started), CompletedAt: stamp(p.completed),
		},
		outputs: append([]output(nil), p.outputs...),
	}
	if withInput {
		st.Input = p.input
	}
	if !p.completed.IsZero() {
		st.Metrics["predict_time"] = p.completed.Sub(p.started).Seconds()
		// A finished prediction's output is its one file, or the list of
		// them; while it runs, the outputs so far are a list.
		st.single = len(p.outputs) == 1
	}
	return st
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// write writes the snapshot as JSON, each output a data: URI streamed from
// its file, so that a large output is never whole in memory.
func (st snapshot) write(w io.Writer) error {
	head, err := json.Marshal(st.state)
	if err != nil {
		return err
	}
	if len(st.outputs) == 0 {
		_, err := w.Write(head)
		return err
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.Write(head[:len(head)-1]) // without its closing brace
	bw.WriteString(`,"output":`)
	if !st.single {
		bw.WriteByte('[')
	}
	for i, o := range st.outputs {
		if i > 0 {
			bw.WriteByte(',')
		}
		if err := writeOutput(bw, o); err != nil {
			return err
		}
	}
	if !st.single {
		bw.WriteByte(']')
	}
	bw.WriteByte('}')
	return bw.Flush()
}

// size is how many bytes write writes.
func (st snapshot) size() (int64, error) {
	head, err := json.Marshal(st.state)
	if err != nil {
		return 0, err
	}
	n := int64(len(head))
	if len(st.outputs) == 0 {
		return n, nil
	}
	n += int64(len(`,"output":`))
	if !st.single {
		n += 2 // the brackets
	}
	n += int64(len(st.outputs) - 1) // the commas
	for _, o := range st.outputs {
		if o.url != "" {
			b, err := json.Marshal(o.url)
			if err != nil {
				return 0, err
			}
			n += int64(len(b))
			continue
		}
		fi, err := os.Stat(o.path)
		if err != nil {
			return 0, err
		}
		n += int64(len(`"data:`+o.contentType+`;base64,"`)) + int64(base64.StdEncoding.EncodedLen(int(fi.Size())))
	}
	return n, nil // the closing brace replaced head's
}

// writeOutput writes o as a JSON string "data:{type};base64,{bytes}", or
// its URL once uploaded.
func writeOutput(w *bufio.Writer, o output) error {
	if o.url != "" {
		b, err := json.Marshal(o.url)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	f, err := os.Open(o.path)
	if err != nil {
		return err
	}
	defer f.Close()
	w.WriteString(`"data:` + o.contentType + `;base64,`)
	enc := base64.NewEncoder(base64.StdEncoding, w)
	if _, err := io.Copy(enc, f); err != nil {
		return err
	}
	if err := enc.Close(); err != nil {
		return err
	}
	return w.WriteByte('"')
}

// sink is the engine.Sink of a prediction: each file goes to the
// prediction's directory as the engine writes it.
type sink struct {
	dir   string
	mu    sync.Mutex
	files []*sinkFile
}

type sinkFile struct {
	f        *os.File
	ct       string
	complete bool
}

// Create implements engine.Sink.
func (k *sink) Create(contentType, ext string) (io.WriteCloser, error) {
	f, err := os.CreateTemp(k.dir, "output-*."+ext)
	if err != nil {
		return nil, err
	}
	sf := &sinkFile{f: f, ct: contentType}
	k.mu.Lock()
	k.files = append(k.files, sf)
	k.mu.Unlock()
	return &sinkWriter{k: k, sf: sf}, nil
}

type sinkWriter struct {
	k  *sink
	sf *sinkFile
}

func (w *sinkWriter) Write(b []byte) (int, error) { return w.sf.f.Write(b) }

func (w *sinkWriter) Close() error {
	err := w.sf.f.Close()
	if err == nil {
		w.k.mu.Lock()
		w.sf.complete = true
		w.k.mu.Unlock()
	}
	return err
}

// complete lists the files the engine closed, in the order it created them.
func (k *sink) complete() []output {
	k.mu.Lock()
	defer k.mu.Unlock()
	var outs []output
	for _, sf := range k.files {
		if sf.complete {
			outs = append(outs, output{path: sf.f.Name(), contentType: sf.ct})
		}
	}
	return outs
}

// write keeps a file the engine returned whole.
func (k *sink) write(f engine.File) (output, error) {
	tf, err := os.CreateTemp(k.dir, "output-*."+f.Ext)
	if err != nil {
		return output{}, err
	}
	if _, err := tf.Write(f.Data); err != nil {
		tf.Close()
		return output{}, err
	}
	if err := tf.Close(); err != nil {
		return output{}, err
	}
	return output{path: tf.Name(), contentType: f.ContentType}, nil
}

// newID makes a prediction id as Cog's documentation recommends: 16 random
// bytes in lower-case base32 without padding (26 characters).
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}
