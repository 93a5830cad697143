package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"genjobs/infra/local/sam"
	"genjobs/internal/app"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// startTimeout bounds each wait of a cold start (first next, response): a
// healthy binary takes milliseconds.
const startTimeout = 10 * time.Second

// probe is the event of a start's invocation round trip and the status the
// function must answer it with.
type probe struct {
	event string // file under the repository root
	want  int
}

// probes are answered without any network: the Authorization header is
// removed from each event, and no credentials means no table lookup, so the
// dummy AWS configuration of lambdaEnv is enough. A function missing here is
// measured to its first next only.
var probes = map[string]probe{
	"generate": {"events/generate-unauthenticated.json", http.StatusUnauthorized},
	"jobs":     {"events/jobs-list.json", http.StatusUnauthorized},
	"styles":   {"events/styles-list.json", http.StatusUnauthorized},
	"mcp":      {"events/mcp-tools-list.json", http.StatusUnauthorized},
	"console":  {"events/console-sign-in.json", http.StatusOK},
	// Refused before its keys are read: no Stripe-Signature.
	"stripewebhook": {"events/stripewebhook-unsigned.json", http.StatusBadRequest},
	"openapi":       {"events/openapi.json", http.StatusOK},
	"notfound":      {"events/notfound.json", http.StatusNotFound},
	bareName:        {"events/notfound.json", http.StatusOK},
}

// loadEvent reads a sample event and removes its credentials.
func loadEvent(root, file string) ([]byte, error) {
	raw, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		return nil, err
	}
	var ev events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(raw, &ev); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	for k := range ev.Headers {
		if strings.EqualFold(k, "authorization") {
			delete(ev.Headers, k)
		}
	}
	return json.Marshal(ev)
}

// lambdaEnv is the environment Lambda gives a provided.al2023 function:
// its own variables, and template.yaml's for the function (Globals
// applied) with every reference resolved to a dummy (templateDummies).
// Only these: nothing of this machine (HOME, AWS_CA_BUNDLE, profiles) leaks
// into the init being measured. Init does no network I/O. bare gets the
// Globals (those of the notfound function, which adds none).
func lambdaEnv(tpl *sam.Template, name, taskRoot string) ([]string, error) {
	env := []string{
		"AWS_LAMBDA_FUNCTION_NAME=genjobs-" + name,
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE=256",
		"AWS_LAMBDA_FUNCTION_VERSION=$LATEST",
		"AWS_LAMBDA_INITIALIZATION_TYPE=on-demand",
		"AWS_LAMBDA_LOG_GROUP_NAME=/aws/lambda/genjobs-" + name,
		"AWS_EXECUTION_ENV=AWS_Lambda_provided.al2023",
		"AWS_REGION=us-east-1",
		"AWS_DEFAULT_REGION=us-east-1",
		"AWS_ACCESS_KEY_ID=AKIABENCHBENCHBENCH0",
		"AWS_SECRET_ACCESS_KEY=benchbenchbenchbenchbenchbenchbenchbench",
		"AWS_SESSION_TOKEN=benchtoken",
		"_HANDLER=bootstrap",
		"LAMBDA_TASK_ROOT=" + taskRoot,
		"TZ=:UTC",
		"LANG=en_US.UTF-8",
		"PATH=/usr/local/bin:/usr/bin:/bin",
	}
	if name == bareName {
		name = "notfound"
	}
	id := ""
	for _, f := range tpl.Functions() {
		if app.FunctionName(f.LogicalID) == name {
			id = f.LogicalID
		}
	}
	if id == "" {
		return nil, fmt.Errorf("template.yaml has no function for functions/%s", name)
	}
	vars, err := tpl.Env(id, templateDummies(tpl))
	if err != nil {
		return nil, err
	}
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	return env, nil
}

// templateDummies resolves every reference of the template to a value of
// the right shape (a queue's URL, a bucket's name, a key's ARN), none of
// which init may call.
func templateDummies(tpl *sam.Template) map[string]string {
	const account, region = "000000000000", "us-east-1"
	out := map[string]string{"AWS::StackName": "genjobs", "AWS::Region": region, "AWS::AccountId": account, "AWS::Partition": "aws", "AWS::URLSuffix": "amazonaws.com"}
	// The one parameter without a default: every deployment names its own.
	out["AppUrl"] = "https://app.example.com"
	for id, r := range tpl.Resources {
		arn := fmt.Sprintf("arn:aws:%s:%s:%s:%s", strings.ToLower(strings.Split(r.Type, "::")[1]), region, account, id)
		switch r.Type {
		case "AWS::SQS::Queue":
			out[id] = fmt.Sprintf("https://sqs.%s.amazonaws.com/%s/genjobs-%s", region, account, id)
		case "AWS::S3::Bucket":
			out[id] = "genjobs-" + strings.ToLower(id)
		case "AWS::KMS::Key":
			arn = fmt.Sprintf("arn:aws:kms:%s:%s:key/00000000-0000-0000-0000-000000000000", region, account)
			out[id] = arn
		default:
			out[id] = "genjobs-" + id
		}
		out[id+".Arn"] = arn
	}
	return out
}

// fakeRuntime plays the Lambda Runtime API for one process: it notes when the
// first GET .../invocation/next arrives, answers it with the event (if any),
// takes the function's response, and holds every later next open, as Lambda
// does between invocations, until the start is over.
type fakeRuntime struct {
	fn    string
	event []byte

	nexts      atomic.Int32
	firstNext  chan time.Time // when the first next arrived
	dispatched chan time.Time // when the event was handed over
	result     chan invokeResult
	done       chan struct{} // closed at the end of the start: held nexts return
}

// invokeResult is what the function posted back.
type invokeResult struct {
	at     time.Time
	body   []byte
	failed bool // posted to .../error or .../init/error
}

func newFakeRuntime(fn string, event []byte) *fakeRuntime {
	return &fakeRuntime{
		fn: fn, event: event,
		firstNext:  make(chan time.Time, 1),
		dispatched: make(chan time.Time, 1),
		result:     make(chan invokeResult, 1),
		done:       make(chan struct{}),
	}
}

func (f *fakeRuntime) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /2018-06-01/runtime/invocation/next", f.next)
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/{id}/response", f.report(false))
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/{id}/error", f.report(true))
	mux.HandleFunc("POST /2018-06-01/runtime/init/error", f.report(true))
	return mux
}

func (f *fakeRuntime) next(w http.ResponseWriter, r *http.Request) {
	arrived := time.Now()
	if f.nexts.Add(1) == 1 {
		f.firstNext <- arrived
		if f.event != nil {
			h := w.Header()
			h.Set("Lambda-Runtime-Aws-Request-Id", "bench-"+f.fn)
			h.Set("Lambda-Runtime-Deadline-Ms", strconv.FormatInt(time.Now().Add(startTimeout).UnixMilli(), 10))
			h.Set("Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:us-east-1:000000000000:function:genjobs-"+f.fn)
			h.Set("Lambda-Runtime-Trace-Id", "Root=1-00000000-000000000000000000000000;Sampled=0")
			h.Set("Content-Type", "application/json")
			f.dispatched <- time.Now()
			_, _ = w.Write(f.event)
			return
		}
	}
	select {
	case <-r.Context().Done(): // the process was killed
	case <-f.done:
	}
}

func (f *fakeRuntime) report(failed bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		var body bytes.Buffer
		_, _ = body.ReadFrom(r.Body)
		w.WriteHeader(http.StatusAccepted)
		select {
		case f.result <- invokeResult{at: at, body: body.Bytes(), failed: failed}:
		default: // only the first report counts
		}
	}
}

// proc is a started function process.
type proc struct {
	cmd    *exec.Cmd
	out    bytes.Buffer  // its stdout and stderr, readable once exited is closed
	exited chan struct{} // closed once it is reaped
	err    error         // its exit status, set before exited is closed
}

// launch starts bin and returns the time just before the exec.
func launch(bin string, env []string) (*proc, time.Time, error) {
	p := &proc{cmd: exec.Command(bin), exited: make(chan struct{})}
	p.cmd.Env = env
	p.cmd.Dir = filepath.Dir(bin)
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	t0 := time.Now()
	if err := p.cmd.Start(); err != nil {
		return nil, t0, err
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	return p, t0, nil
}

// kill ends the process (it is blocked on a held next) and reaps it.
func (p *proc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// await waits for a value from ch, failing if the process exits first or
// takes too long.
func await[T any](p *proc, ch <-chan T, what string) (T, error) {
	var zero T
	select {
	case v := <-ch:
		return v, nil
	case <-p.exited:
		return zero, fmt.Errorf("exited (%v) before %s; output:\n%s", p.err, what, p.out.String())
	case <-time.After(startTimeout):
		return zero, fmt.Errorf("no %s within %s", what, startTimeout)
	}
}

// startSample is one cold start.
type startSample struct {
	cold   time.Duration // exec to the first next
	invoke time.Duration // event handed over to response received (0: no event)
	status int           // the response's statusCode
}

// coldStart runs bin once under a fresh fake Runtime API.
func coldStart(fn, bin string, env []string, event []byte) (startSample, error) {
	f := newFakeRuntime(fn, event)
	srv := httptest.NewServer(f.handler())
	defer srv.Close()
	defer close(f.done)

	env = append(slices.Clip(env), "AWS_LAMBDA_RUNTIME_API="+srv.Listener.Addr().String())
	p, t0, err := launch(bin, env)
	if err != nil {
		return startSample{}, err
	}
	defer p.kill()

	first, err := await(p, f.firstNext, "first next")
	if err != nil {
		return startSample{}, err
	}
	s := startSample{cold: first.Sub(t0)}
	if event == nil {
		return s, nil
	}
	sent, err := await(p, f.dispatched, "event dispatch")
	if err != nil {
		return s, err
	}
	res, err := await(p, f.result, "response")
	if err != nil {
		return s, err
	}
	if res.failed {
		return s, fmt.Errorf("invocation failed: %s", res.body)
	}
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(res.body, &resp); err != nil {
		return s, fmt.Errorf("response is not an API Gateway response: %w: %s", err, res.body)
	}
	s.invoke, s.status = res.at.Sub(sent), resp.StatusCode
	return s, nil
}

// coldStats is one binary's cold starts.
type coldStats struct {
	cold, invoke []time.Duration
	want         int         // the probe's expected status (0: no probe)
	statuses     map[int]int // statuses answered, with counts
	errs         []string
}

// measureColdStarts starts every binary runs times, after one discarded
// start each that warms the page cache. Binaries take turns, so that noise
// on the machine spreads over all of them alike.
func measureColdStarts(root string, ts []target, bins map[string]string, runs int) (map[string]*coldStats, error) {
	tpl, err := sam.Load(filepath.Join(root, "template.yaml"))
	if err != nil {
		return nil, err
	}
	evs := map[string][]byte{}
	envs := map[string][]string{}
	out := map[string]*coldStats{}
	for _, t := range ts {
		out[t.name] = &coldStats{statuses: map[int]int{}}
		if envs[t.name], err = lambdaEnv(tpl, t.name, filepath.Dir(bins[t.name])); err != nil {
			return nil, err
		}
		if pr, ok := probes[t.name]; ok {
			ev, err := loadEvent(root, pr.event)
			if err != nil {
				return nil, err
			}
			evs[t.name], out[t.name].want = ev, pr.want
		}
	}
	for round := -1; round < runs; round++ {
		for _, t := range ts {
			s, err := coldStart(t.name, bins[t.name], envs[t.name], evs[t.name])
			if round < 0 && err == nil {
				continue // warm-up
			}
			st := out[t.name]
			if err != nil {
				st.errs = append(st.errs, err.Error())
				continue
			}
			st.cold = append(st.cold, s.cold)
			if s.invoke > 0 {
				st.invoke = append(st.invoke, s.invoke)
				st.statuses[s.status]++
			}
		}
	}
	return out, nil
}
