package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"genjobs/internal/app/workerfn"
	"genjobs/internal/asset"
	"genjobs/internal/auth"
	"genjobs/internal/blob"
	"genjobs/internal/catalog"
	"genjobs/internal/clock"
	"genjobs/internal/engine"
	"genjobs/internal/engine/enhance"
	"genjobs/internal/fetch"
	"genjobs/internal/job"
	"genjobs/internal/lifecycle"
	"genjobs/internal/netguard"
	"genjobs/internal/queue"
	"genjobs/internal/store"
	"genjobs/internal/store/accountsdb"
	"genjobs/internal/store/assetsdb"
	"genjobs/internal/store/schema"
	"genjobs/internal/store/slotsdb"
	"genjobs/internal/testenv"
	"genjobs/internal/worker"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// steps is a test engine: it reports progress in small steps, at the pace
// the test sets, and writes one PNG. The real engines have their own tests;
// these are about what the worker does around any engine.
type steps struct {
	n       int
	pace    time.Duration
	fail    error          // returned instead of output
	gate    chan struct{}  // when set, closed by the test before the engine finishes
	ran     atomic.Int32   // how many times Run was entered
	seen    []engine.Input // inputs of the last run
	mu      sync.Mutex
	preview bool
}

func (s *steps) Run(ctx context.Context, j engine.Job, report engine.Report) ([]engine.File, error) {
	s.ran.Add(1)
	s.mu.Lock()
	s.seen = j.Inputs
	s.mu.Unlock()
	for i := 1; i <= s.n; i++ {
		u := engine.Update{Progress: float64(i) / float64(s.n+1)}
		if s.preview && i == s.n/2 {
			u.Preview = &engine.File{ContentType: "image/png", Ext: "png", Data: tinyPNG()}
		}
		if err := report(u); err != nil {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(s.pace):
		}
	}
	if s.gate != nil {
		<-s.gate
	}
	if s.fail != nil {
		return nil, s.fail
	}
	return []engine.File{{ContentType: "image/png", Ext: "png", Data: tinyPNG()}}, nil
}

func tinyPNG() []byte {
	img := image.NewRGBA(image.Rect(0, 0, 2, 2))
	img.Set(0, 0, color.RGBA{255, 0, 0, 255})
	var b bytes.Buffer
	_ = png.Encode(&b, img)
	return b.Bytes()
}

type env struct {
	t       *testing.T
	ctx     context.Context
	store   *store.Store
	blobs   *blob.Store
	s3      *s3.Client      // the blobs' client
	wire    *testenv.S3Wire // its requests
	results string          // the results bucket
	eng     *steps
	w       *worker.Worker
	life    *lifecycle.Ender
	logs    *bytes.Buffer
	guard   *netguard.Guard
}

func newEnv(t *testing.T) *env {
	t.Helper()
	ctx := context.Background()
	db := testenv.DynamoDB(t)
	table := testenv.UniqueName(t, "worker")
	if err := schema.CreateTable(ctx, db, table); err != nil {
		t.Fatal(err)
	}
	s := store.New(db, table)
	if err := accountsdb.New(s).CreateWorkspace(ctx, auth.Workspace{ID: "ws_a", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	sq := testenv.SQS(t)
	url, _, err := queue.Create(ctx, sq, testenv.UniqueName(t, "jobs"))
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.New()
	if err != nil {
		t.Fatal(err)
	}
	client, wire := testenv.S3Recorded(t)
	results := testenv.NewBucket(t) // its clean-up fails the test if an upload was left in it
	e := &env{t: t, ctx: ctx, store: s, logs: &bytes.Buffer{}, eng: &steps{n: 6, pace: 50 * time.Millisecond},
		blobs: blob.New(client, results, testenv.NewBucket(t)), s3: client, wire: wire, results: results,
		guard: &netguard.Guard{AllowPrivate: true, Connect: testenv.LoopbackOnly(t).Connect}}
	log := slog.New(slog.NewJSONHandler(e.logs, nil))
	e.life = &lifecycle.Ender{Store: s, Queue: queue.NewJobSender(sq, url), Clock: clock.System{}, Log: log}
	e.w = &worker.Worker{
		Store: s, Ender: e.life, Catalog: cat,
		Engines:  engine.Registry{"model-g-3.1-rapid": e.eng, "model-e-4": e.eng},
		Inputs:   fetch.New(e.guard),
		Blobs:    workerfn.Blobs{Store: e.blobs},
		Assets:   assetsdb.New(s),
		Clock:    clock.System{},
		Log:      log,
		LeaseFor: 2 * time.Second, Heartbeat: 100 * time.Millisecond,
	}
	return e
}

// create stores a queued job of the given endpoint and request.
func (e *env) create(endpoint, request string) *job.Job {
	e.t.Helper()
	now := time.Now()
	j := &job.Job{ID: job.NewID(now), WorkspaceID: "ws_a", CreatedAt: now, Endpoint: endpoint, Request: []byte(request)}
	if err := e.store.CreateJob(e.ctx, j); err != nil {
		e.t.Fatal(err)
	}
	return j
}

func (e *env) job(id string) *job.Job {
	e.t.Helper()
	j, err := e.store.Job(e.ctx, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return j
}

const mesh = "/generate/3d/vendor-g/model-g-3.1-rapid"

func TestJobRunsToCompletedWithDownloadableOutput(t *testing.T) {
	e := newEnv(t)
	e.eng.preview = true
	e.eng.n = 12 // 300 ms of sampling before the preview, 300 ms after
	j := e.create(mesh, `{"mode":"text","prompt":"","image_urls":[]}`)

	// Watch the job from outside while it runs, as a polling client would.
	var seen []string
	var progress []float64
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			cur := e.job(j.ID)
			if len(seen) == 0 || seen[len(seen)-1] != string(cur.Status) {
				seen = append(seen, string(cur.Status))
			}
			if cur.Progress != nil {
				progress = append(progress, *cur.Progress)
			}
		}
	}()
	if err := e.w.Run(e.ctx, j.ID); err != nil {
		t.Fatal(err)
	}
	close(stop)
	<-watched

	got := e.job(j.ID)
	if got.Status != job.Completed || got.CompletedAt == nil || got.Progress == nil || *got.Progress != 1 || len(got.Outputs) != 1 {
		t.Fatalf("job after the run: %+v", got)
	}
	for _, want := range []string{"sampling", "intermediate-complete"} {
		if !contains(seen, want) {
			t.Errorf("statuses seen while running %v; want %s among them", seen, want)
		}
	}
	for i := 1; i < len(progress); i++ {
		if progress[i] < progress[i-1] {
			t.Fatalf("progress went down: %v", progress)
		}
	}
	if len(progress) < 3 {
		t.Errorf("progress seen %v; want it rising while the engine works", progress)
	}
	u, err := e.blobs.ResultURL(e.ctx, got.Outputs[0])
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Equal(body, tinyPNG()) {
		t.Errorf("download of the result: %d, %d bytes; want the engine's PNG", resp.StatusCode, len(body))
	}
	if n, _ := slotsdb.New(e.store).StoredSlots(e.ctx, "ws_a"); n != (slotsdb.Slots{}) {
		t.Errorf("slots after completion: %+v; want none", n)
	}
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func TestTheSameMessageTwiceCompletesOnce(t *testing.T) {
	e := newEnv(t)
	j := e.create(mesh, `{"mode":"text","prompt":"","image_urls":[]}`)
	// Two deliveries at once, then a late third.
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := e.w.Run(e.ctx, j.ID); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if err := e.w.Run(e.ctx, j.ID); err != nil {
		t.Fatal(err)
	}
	got := e.job(j.ID)
	if got.Status != job.Completed || got.Attempts != 1 || e.eng.ran.Load() != 1 {
		t.Errorf("status %s, %d claims, engine ran %d times; want completed once", got.Status, got.Attempts, e.eng.ran.Load())
	}
}

func TestAWorkerThatDiedLeavesTheJobToTheNextDelivery(t *testing.T) {
	e := newEnv(t)
	j := e.create(mesh, `{"mode":"text","prompt":"","image_urls":[]}`)
	// A worker claimed the job and was killed: its lease lapses on its own.
	dead := job.Lease{ID: "dead", Until: time.Now().Add(time.Second)}
	if _, err := e.store.Transition(e.ctx, j, job.Change{To: job.Processing, Lease: &dead}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := e.w.Run(e.ctx, j.ID); err != nil || e.eng.ran.Load() != 0 {
		t.Fatalf("a delivery while the lease holds: %v, engine ran %d times; want it dropped", err, e.eng.ran.Load())
	}
	e.w.Clock = ahead(2 * time.Second) // the dead worker's lease has lapsed
	if err := e.w.Run(e.ctx, j.ID); err != nil {
		t.Fatal(err)
	}
	if got := e.job(j.ID); got.Status != job.Completed || got.Attempts != 2 {
		t.Errorf("after the take-over: %s, %d claims; want completed on the second", got.Status, got.Attempts)
	}
}

// flakyBlobs fails the first n result writes, as S3 might.
type flakyBlobs struct {
	worker.Blobs
	failures atomic.Int32
}

func (f *flakyBlobs) PutResult(ctx context.Context, key, contentType string, data []byte) error {
	if f.failures.Add(-1) >= 0 {
		return errors.New("S3 is unavailable")
	}
	return f.Blobs.PutResult(ctx, key, contentType, data)
}

func TestAFailedAttemptIsRetriedAndCompletesOnce(t *testing.T) {
	e := newEnv(t)
	flaky := &flakyBlobs{Blobs: e.w.Blobs}
	flaky.failures.Store(1)
	e.w.Blobs = flaky
	j := e.create(mesh, `{"mode":"text","prompt":"","image_urls":[]}`)
	resp, err := e.w.HandleSQS(e.ctx, sqsEvent(j.ID, "m1"))
	if err != nil || len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "m1" {
		t.Fatalf("first attempt: %+v, %v; want m1 reported for retry", resp, err)
	}
	if got := e.job(j.ID); got.Status.Terminal() {
		t.Fatalf("a failed attempt ended the job: %s", got.Status)
	}
	// The retry comes at once: the failed attempt gave its lease back.
	resp, err = e.w.HandleSQS(e.ctx, sqsEvent(j.ID, "m1"))
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("retry: %+v, %v", resp, err)
	}
	if got := e.job(j.ID); got.Status != job.Completed || got.Attempts != 2 {
		t.Errorf("after the retry: %s, %d claims; want completed", got.Status, got.Attempts)
	}
}

func sqsEvent(jobID, messageID string) events.SQSEvent {
	body, _ := json.Marshal(queue.Message{JobID: jobID})
	return events.SQSEvent{Records: []events.SQSMessage{{MessageId: messageID, Body: string(body)}}}
}

func TestMessagesForEndedUnknownOrUnreadableJobsAreDropped(t *testing.T) {
	e := newEnv(t)
	j := e.create(mesh, `{}`)
	if _, err := e.life.Cancel(e.ctx, j); err != nil {
		t.Fatal(err)
	}
	ev := sqsEvent(j.ID, "ended")
	ev.Records = append(ev.Records, sqsEvent(job.NewID(time.Now()), "unknown").Records[0],
		events.SQSMessage{MessageId: "garbage", Body: "{not json"})
	resp, err := e.w.HandleSQS(e.ctx, ev)
	if err != nil || len(resp.BatchItemFailures) != 0 || e.eng.ran.Load() != 0 {
		t.Errorf("%+v, %v, engine ran %d times; want every message acknowledged and nothing run", resp, err, e.eng.ran.Load())
	}
	if got := e.job(j.ID); got.Status != job.Cancelled {
		t.Errorf("the cancelled job became %s", got.Status)
	}
}

func TestCancellationStopsTheEngineWithinASecond(t *testing.T) {
	e := newEnv(t)
	e.eng.n, e.eng.pace = 1000, 20*time.Millisecond // 20 s of work
	j := e.create(mesh, `{}`)
	done := make(chan error, 1)
	go func() { done <- e.w.Run(e.ctx, j.ID) }()
	for e.job(j.ID).Status != job.Sampling {
		time.Sleep(20 * time.Millisecond)
	}
	cur := e.job(j.ID)
	ended, err := e.life.Cancel(e.ctx, cur)
	if err != nil {
		t.Fatal(err)
	}
	cancelled := time.Now()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("the stopped attempt asked for a retry: %v", err)
		}
		// Generous bound: the contract is "within a second".
		if d := time.Since(cancelled); d > 3*time.Second {
			t.Errorf("the engine stopped %s after the cancellation", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the engine did not stop after the job was cancelled")
	}
	got := e.job(j.ID)
	if got.Status != job.Cancelled || len(got.Outputs) != 0 {
		t.Errorf("after the cancel: %s with outputs %v", got.Status, got.Outputs)
	}
	// The job stands exactly as the cancellation left it: any later write
	// (a heartbeat, the end) would have moved updated_at or the record.
	if !got.UpdatedAt.Equal(ended.UpdatedAt) || !reflect.DeepEqual(got.Record(nil), ended.Record(nil)) {
		t.Errorf("written after the cancellation: %+v (updated %s); the cancellation left %+v (updated %s)",
			got.Record(nil), got.UpdatedAt, ended.Record(nil), ended.UpdatedAt)
	}
}

func TestACancelAsTheEngineFinishesWinsAndLeavesNoOutput(t *testing.T) {
	e := newEnv(t)
	e.eng.n, e.eng.gate = 1, make(chan struct{})
	j := e.create(mesh, `{}`)
	done := make(chan error, 1)
	go func() { done <- e.w.Run(e.ctx, j.ID) }()
	for e.job(j.ID).Status == job.Queued || e.job(j.ID).Status == job.Scheduled {
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := e.life.Cancel(e.ctx, e.job(j.ID)); err != nil {
		t.Fatal(err)
	}
	close(e.eng.gate) // the engine returns its output right after the cancel
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got := e.job(j.ID)
	if got.Status != job.Cancelled || got.Progress != nil && *got.Progress == 1 {
		t.Errorf("job %s, progress %v; want cancelled", got.Status, got.Progress)
	}
	u, err := e.blobs.ResultURL(e.ctx, fmt.Sprintf("results/%s/0.png", j.ID))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("the cancelled job's output is stored: GET answered %d", resp.StatusCode)
	}
}

func TestInputFailuresFailTheJobWithTheirCode(t *testing.T) {
	e := newEnv(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ok.png" {
			_, _ = w.Write(tinyPNG())
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	const image = "/generate/image/vendor-b/model-e-4"
	ok := e.create(image, `{"prompt":"p","width":64,"height":64,"seed":1,"style_images":["`+srv.URL+`/ok.png"]}`)
	missing := e.create(image, `{"prompt":"p","width":64,"height":64,"seed":1,"style_images":["`+srv.URL+`/gone.png"]}`)
	for _, j := range []*job.Job{ok, missing} {
		if err := e.w.Run(e.ctx, j.ID); err != nil {
			t.Fatal(err)
		}
	}
	if got := e.job(ok.ID); got.Status != job.Completed {
		t.Errorf("job with a reachable input: %s %+v", got.Status, got.Error)
	}
	e.eng.mu.Lock()
	if len(e.eng.seen) != 1 || e.eng.seen[0].Field != "style_images" || !bytes.Equal(e.eng.seen[0].Data, tinyPNG()) {
		t.Errorf("the engine got inputs %+v; want the fetched style image", e.eng.seen)
	}
	e.eng.mu.Unlock()
	if got := e.job(missing.ID); got.Status != job.Failed || got.Error.Code != "invalid_input" || got.Error.Message != "style_images[0]: the server answered 404" {
		t.Errorf("job with a missing input: %s %+v", got.Status, got.Error)
	}

	e.guard.AllowPrivate = false // as in AWS
	blocked := e.create(image, `{"prompt":"p","width":64,"height":64,"seed":1,"style_images":["`+srv.URL+`/ok.png"]}`)
	if err := e.w.Run(e.ctx, blocked.ID); err != nil {
		t.Fatal(err)
	}
	if got := e.job(blocked.ID); got.Status != job.Failed || got.Error.Code != "input_blocked" {
		t.Errorf("job with a loopback input: %s %+v; want input_blocked", got.Status, got.Error)
	}

	e.eng.fail = engine.InvalidInput("style_images[0] is not a decodable PNG, JPEG or WebP image")
	corrupt := e.create(mesh, `{}`)
	if err := e.w.Run(e.ctx, corrupt.ID); err != nil {
		t.Fatal(err)
	}
	if got := e.job(corrupt.ID); got.Status != job.Failed || got.Error.Code != "invalid_input" {
		t.Errorf("job whose engine refused the input: %s %+v", got.Status, got.Error)
	}
	e.eng.fail = errors.New("out of GPU")
	broken := e.create(mesh, `{}`)
	if err := e.w.Run(e.ctx, broken.ID); err != nil {
		t.Fatal(err)
	}
	if got := e.job(broken.ID); got.Status != job.Failed || got.Error.Code != "engine_error" || got.Error.Message != "The engine failed to produce the output." {
		t.Errorf("job whose engine failed: %s %+v", got.Status, got.Error)
	}
	if n, _ := slotsdb.New(e.store).StoredSlots(e.ctx, "ws_a"); n != (slotsdb.Slots{}) {
		t.Errorf("slots after every job ended: %+v", n)
	}
}

func TestAssetInputsAreReadFromTheJobsOwnWorkspace(t *testing.T) {
	e := newEnv(t)
	const base = "https://api.example.com"
	upload := func(ws string) string {
		a := asset.Asset{ID: asset.NewID(), WorkspaceID: ws, ContentType: asset.PNG, Size: int64(len(tinyPNG())), CreatedAt: time.Now()}
		a.Key = asset.Key(ws, a.ID)
		if err := e.blobs.PutAsset(e.ctx, a.Key, a.ContentType, tinyPNG()); err != nil {
			t.Fatal(err)
		}
		if err := assetsdb.New(e.store).CreateAsset(e.ctx, a); err != nil {
			t.Fatal(err)
		}
		return asset.URL(base, a.ID)
	}
	create := func(ref string) *job.Job {
		now := time.Now()
		j := &job.Job{ID: job.NewID(now), WorkspaceID: "ws_a", CreatedAt: now, BaseURL: base,
			Endpoint: "/generate/image/vendor-b/model-e-4", Request: []byte(`{"prompt":"p","width":64,"height":64,"seed":1,"style_images":["` + ref + `"]}`)}
		if err := e.store.CreateJob(e.ctx, j); err != nil {
			t.Fatal(err)
		}
		return j
	}
	own, other := create(upload("ws_a")), create(upload("ws_b"))
	for _, j := range []*job.Job{own, other} {
		if err := e.w.Run(e.ctx, j.ID); err != nil {
			t.Fatal(err)
		}
	}
	if got := e.job(own.ID); got.Status != job.Completed {
		t.Errorf("job with its own asset: %s %+v", got.Status, got.Error)
	}
	if got := e.job(other.ID); got.Status != job.Failed || got.Error.Code != "invalid_input" || got.Error.Message != "style_images[0]: the asset was not found" {
		t.Errorf("job with another workspace's asset: %s %+v", got.Status, got.Error)
	}
}

// An asset whose presigned upload never came has a record and no file: its
// job fails with invalid_input, as the client's mistake it is, rather than
// being retried.
func TestAnAssetWhoseFileNeverCameFailsTheJob(t *testing.T) {
	e := newEnv(t)
	const base = "https://api.example.com"
	a := asset.Asset{ID: asset.NewID(), WorkspaceID: "ws_a", ContentType: asset.PNG, Size: 100, CreatedAt: time.Now()}
	a.Key = asset.Key("ws_a", a.ID)
	if err := assetsdb.New(e.store).CreateAsset(e.ctx, a); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	j := &job.Job{ID: job.NewID(now), WorkspaceID: "ws_a", CreatedAt: now, BaseURL: base,
		Endpoint: "/generate/image/vendor-b/model-e-4", Request: []byte(`{"prompt":"p","width":64,"height":64,"seed":1,"style_images":["` + asset.URL(base, a.ID) + `"]}`)}
	if err := e.store.CreateJob(e.ctx, j); err != nil {
		t.Fatal(err)
	}
	if err := e.w.Run(e.ctx, j.ID); err != nil {
		t.Fatalf("the attempt asked for a retry: %v", err)
	}
	if got := e.job(j.ID); got.Status != job.Failed || got.Error == nil || got.Error.Code != "invalid_input" ||
		got.Error.Message != "style_images[0]: the asset's file has not been uploaded" {
		t.Errorf("job with an asset never uploaded: %s %+v; want failed with invalid_input", got.Status, got.Error)
	}
}

func TestACorruptImageFailsTheJobWithInvalidInput(t *testing.T) {
	e := newEnv(t)
	e.w.Engines["standard-enhance"] = enhance.Engine{}
	full := tinyPNG()
	for name, data := range map[string][]byte{"truncated": full[:len(full)/2], "corrupt": append([]byte{0x89, 'P', 'N', 'G', 0, 0, 0, 0}, full[8:]...)} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "image/png")
			_, _ = w.Write(data)
		}))
		j := e.create("/generate/enhance/vendor-a/standard-enhance",
			`{"width":8,"height":8,"image_url":"`+srv.URL+`/x.png","model":"Standard V2","output_format":"png","crop_to_fill":false,`+
				`"upscaling_activated":false,"image_scaling_factor":1,"sharpen":0.5,"denoise":0.5,"fix_compression":0.5,"strength":0.5,"seed":1}`)
		if err := e.w.Run(e.ctx, j.ID); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		srv.Close()
		if got := e.job(j.ID); got.Status != job.Failed || got.Error == nil || got.Error.Code != "invalid_input" {
			t.Errorf("%s PNG: %s %+v; want failed with invalid_input", name, got.Status, got.Error)
		}
	}
}

type panics struct{}

func (panics) Run(context.Context, engine.Job, engine.Report) ([]engine.File, error) {
	panic("engine bug")
}

func TestAPanicFailsOnlyItsMessage(t *testing.T) {
	e := newEnv(t)
	e.w.Engines["model-e-4"] = panics{}
	bad := e.create("/generate/image/vendor-b/model-e-4", `{"prompt":"p","width":64,"height":64,"seed":1}`)
	good := e.create(mesh, `{}`)
	ev := sqsEvent(bad.ID, "bad")
	ev.Records = append(ev.Records, sqsEvent(good.ID, "good").Records[0])
	resp, err := e.w.HandleSQS(e.ctx, ev)
	if err != nil || len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "bad" {
		t.Errorf("%+v, %v; want only the panicking job's message retried", resp, err)
	}
	if got := e.job(good.ID); got.Status != job.Completed {
		t.Errorf("the other job of the batch: %s", got.Status)
	}
}

// ahead is the system clock d ahead: a lease's lapse without waiting for it.
type ahead time.Duration

func (a ahead) Now() time.Time { return time.Now().UTC().Add(time.Duration(a)) }

// seenAtSend records, for each job sent, the job as stored at that moment;
// err, when set, fails the sends instead.
type seenAtSend struct {
	next  worker.Enqueuer
	store *store.Store
	err   error
	mu    sync.Mutex
	seen  []*job.Job
}

func (s *seenAtSend) Enqueue(ctx context.Context, j *job.Job) error {
	if s.err != nil {
		return s.err
	}
	stored, err := s.store.Job(ctx, j.ID)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.seen = append(s.seen, stored)
	s.mu.Unlock()
	return s.next.Enqueue(ctx, j)
}

// lightEnv is env with a light worker (sources over 3 pixels handed over)
// in front of a heavy queue, and a source server counting its fetches.
func lightEnv(t *testing.T) (e *env, handover *seenAtSend, sq *sqs.Client, heavy, light string, fetches *atomic.Int32, src string) {
	e = newEnv(t)
	fetches = &atomic.Int32{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		_, _ = w.Write(tinyPNG()) // 2 x 2 pixels
	}))
	t.Cleanup(srv.Close)
	sq = testenv.SQS(t)
	var err error
	if heavy, _, err = queue.Create(e.ctx, sq, testenv.UniqueName(t, "heavy")); err != nil {
		t.Fatal(err)
	}
	if light, _, err = queue.Create(e.ctx, sq, testenv.UniqueName(t, "light")); err != nil {
		t.Fatal(err)
	}
	handover = &seenAtSend{next: queue.NewJobSender(sq, heavy).WithLane(lifecycle.LaneLight, light), store: e.store}
	e.w.MaxSourcePixels = 3 // fewer than the source's 4
	e.w.Handover = handover
	return e, handover, sq, heavy, light, fetches, srv.URL + "/a.png"
}

func (e *env) createLight(src string) *job.Job {
	e.t.Helper()
	now := time.Now()
	j := &job.Job{ID: job.NewID(now), WorkspaceID: "ws_a", CreatedAt: now, Lane: lifecycle.LaneLight,
		Endpoint: "/generate/image/vendor-b/model-e-4",
		Request:  []byte(`{"prompt":"p","width":64,"height":64,"seed":1,"style_images":["` + src + `"]}`)}
	if err := e.store.CreateJob(e.ctx, j); err != nil {
		e.t.Fatal(err)
	}
	return j
}

func received(t *testing.T, sq *sqs.Client, url string) []string {
	t.Helper()
	out, err := sq.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range out.Messages {
		var msg queue.Message
		_ = json.Unmarshal([]byte(aws.ToString(m.Body)), &msg)
		ids = append(ids, msg.JobID)
	}
	return ids
}

// The light worker is sized for sources up to its MaxSourcePixels; a
// larger one (known only once fetched) goes to the heavy worker's queue.
// The job records its new lane, and its lease is given up before the
// message is sent, so that the heavy worker finds it free: sent first, the
// heavy worker could read it still held, drop its only message, and leave
// it running for the sweeper to find minutes later. Nothing of the engine
// runs here.
func TestALightWorkerHandsALargeSourceToTheHeavyLane(t *testing.T) {
	e, handover, sq, heavy, light, _, src := lightEnv(t)
	j := e.createLight(src)
	if err := e.w.Run(e.ctx, j.ID); err != nil {
		t.Fatal(err)
	}
	e.eng.mu.Lock()
	ran := len(e.eng.seen)
	e.eng.mu.Unlock()
	if ran != 0 {
		t.Errorf("the engine ran on a source too large for this worker")
	}
	if len(handover.seen) != 1 {
		t.Fatalf("%d hand-overs sent; want 1", len(handover.seen))
	}
	if at := handover.seen[0]; at.Lane != lifecycle.LaneHeavy || at.Lease.Held(time.Now()) || at.Status.Terminal() {
		t.Errorf("as the heavy message was sent the job was %s on lane %q, lease held %v; want it unended on the heavy lane and free",
			at.Status, at.Lane, at.Lease.Held(time.Now()))
	}
	if got := received(t, sq, heavy); len(got) != 1 || got[0] != j.ID {
		t.Errorf("heavy queue holds %v; want the job's message", got)
	}
	if got := received(t, sq, light); len(got) != 0 {
		t.Errorf("light queue holds %v; want nothing", got)
	}
	// And the heavy worker (no limit) runs it.
	e.w.MaxSourcePixels, e.w.Handover = 0, nil
	if err := e.w.Run(e.ctx, j.ID); err != nil {
		t.Fatal(err)
	}
	if got := e.job(j.ID); got.Status != job.Completed || got.Lane != lifecycle.LaneHeavy {
		t.Errorf("after the hand-over: %s on lane %q %+v; want completed on the heavy lane", got.Status, got.Lane, got.Error)
	}
}

// A hand-over whose send fails leaves the light message for a retry, and
// the retry sends the job on to the lane it now lives in, without claiming
// or fetching it again.
func TestARetriedHandOverSendsTheJobOn(t *testing.T) {
	e, handover, sq, heavy, _, fetches, src := lightEnv(t)
	j := e.createLight(src)
	handover.err = errors.New("SQS is unavailable")
	if err := e.w.Run(e.ctx, j.ID); err == nil {
		t.Fatal("a hand-over whose send failed reported its message done")
	}
	if got := e.job(j.ID); got.Lane != lifecycle.LaneHeavy || got.Lease.Held(time.Now()) {
		t.Fatalf("after the failed send: lane %q, lease held %v; want the heavy lane, free", got.Lane, got.Lease.Held(time.Now()))
	}
	handover.err = nil
	if err := e.w.Run(e.ctx, j.ID); err != nil {
		t.Fatal(err)
	}
	if got := received(t, sq, heavy); len(got) != 1 || got[0] != j.ID {
		t.Errorf("heavy queue holds %v; want the job's message", got)
	}
	if got := e.job(j.ID); got.Attempts != 1 || fetches.Load() != 1 {
		t.Errorf("the retry claimed the job (%d claims) or fetched its source (%d fetches) again; want 1 and 1", got.Attempts, fetches.Load())
	}
}

// recordedRetry is the real redeliverer, noting each wait asked for.
type recordedRetry struct {
	*queue.Redeliverer
	mu     sync.Mutex
	afters []time.Duration
}

func (r *recordedRetry) Redeliver(ctx context.Context, arn, receipt string, after time.Duration) error {
	r.mu.Lock()
	r.afters = append(r.afters, after)
	r.mu.Unlock()
	return r.Redeliverer.Redeliver(ctx, arn, receipt, after)
}

// receiveOne sends the job's message to a fresh jobs queue (visibility
// timeout 720 s, as deployed) as the service sends it (queue.JobSender, so
// that the worker reads what the adapter writes) and receives it as
// Lambda's poller would.
func receiveOne(t *testing.T, sq *sqs.Client, url, jobID string) events.SQSEvent {
	t.Helper()
	ctx := context.Background()
	if err := queue.NewJobSender(sq, url).Enqueue(ctx, &job.Job{ID: jobID}); err != nil {
		t.Fatal(err)
	}
	out, err := sq.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 5,
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll}})
	if err != nil || len(out.Messages) != 1 {
		t.Fatalf("receive: %v, %d messages", err, len(out.Messages))
	}
	arn, err := sq.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatal(err)
	}
	m := out.Messages[0]
	return events.SQSEvent{Records: []events.SQSMessage{{MessageId: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle),
		Body: aws.ToString(m.Body), Attributes: m.Attributes, EventSourceARN: arn.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]}}}
}

// Lambda leaves a failed message invisible for the queue's visibility
// timeout, 12 minutes: a failed attempt asks for its message back after
// RetryDelay instead, and the next attempt completes the job.
func TestAFailedAttemptsMessageComesBackSoon(t *testing.T) {
	e := newEnv(t)
	sq := testenv.SQS(t)
	url, _, err := queue.Create(e.ctx, sq, testenv.UniqueName(t, "jobs"))
	if err != nil {
		t.Fatal(err)
	}
	retry := &recordedRetry{Redeliverer: queue.NewRedeliverer(sq, url)}
	e.w.Retry = retry
	flaky := &flakyBlobs{Blobs: e.w.Blobs}
	flaky.failures.Store(1)
	e.w.Blobs = flaky
	j := e.create(mesh, `{"mode":"text","prompt":"","image_urls":[]}`)
	ev := receiveOne(t, sq, url, j.ID)
	resp, err := e.w.HandleSQS(e.ctx, ev)
	if err != nil || len(resp.BatchItemFailures) != 1 {
		t.Fatalf("first attempt: %+v, %v; want its message reported for retry", resp, err)
	}
	if len(retry.afters) != 1 || retry.afters[0] != worker.RetryDelay(1) {
		t.Errorf("waits asked for: %v; want [%s]", retry.afters, worker.RetryDelay(1))
	}
	out, err := sq.ReceiveMessage(e.ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 10})
	if err != nil || len(out.Messages) != 1 {
		t.Fatalf("the failed message did not come back: %v, %d messages", err, len(out.Messages))
	}
	if _, err := e.w.HandleSQS(e.ctx, sqsEvent(j.ID, aws.ToString(out.Messages[0].MessageId))); err != nil {
		t.Fatal(err)
	}
	if got := e.job(j.ID); got.Status != job.Completed || got.Attempts != 2 {
		t.Errorf("after the retry: %s, %d claims; want completed on the second", got.Status, got.Attempts)
	}
}

// noRelease fails the write that gives a lease up, as a DynamoDB outage
// would.
type noRelease struct {
	worker.Store
}

func (n noRelease) Transition(ctx context.Context, j *job.Job, c job.Change, now time.Time) (*job.Job, error) {
	if c.Holder != "" && c.Lease != nil && !c.Lease.Until.After(now) {
		return nil, errors.New("DynamoDB is unavailable")
	}
	return n.Store.Transition(ctx, j, c, now)
}

// An attempt that fails and cannot give its lease up asks for its message
// back only once the lease has lapsed: sooner, the retry would find the
// job held, drop its message and leave the job to the sweeper.
func TestAFailedAttemptThatKeptItsLeaseIsRetriedWhenTheLeaseLapses(t *testing.T) {
	e := newEnv(t)
	sq := testenv.SQS(t)
	url, _, err := queue.Create(e.ctx, sq, testenv.UniqueName(t, "jobs"))
	if err != nil {
		t.Fatal(err)
	}
	retry := &recordedRetry{Redeliverer: queue.NewRedeliverer(sq, url)}
	e.w.Retry, e.w.LeaseFor = retry, 30*time.Second
	e.w.Store = noRelease{Store: e.store}
	flaky := &flakyBlobs{Blobs: e.w.Blobs}
	flaky.failures.Store(1)
	e.w.Blobs = flaky
	j := e.create(mesh, `{"mode":"text","prompt":"","image_urls":[]}`)
	resp, err := e.w.HandleSQS(e.ctx, receiveOne(t, sq, url, j.ID))
	if err != nil || len(resp.BatchItemFailures) != 1 {
		t.Fatalf("attempt: %+v, %v; want its message reported for retry", resp, err)
	}
	held := e.job(j.ID).Lease
	if !held.Held(time.Now()) {
		t.Fatal("the lease was given up; the test needs it kept")
	}
	if len(retry.afters) != 1 || time.Now().Add(retry.afters[0]).Before(held.Until) {
		t.Errorf("waits asked for: %v; want one reaching past the lease's lapse at %s", retry.afters, held.Until.Format(time.RFC3339Nano))
	}
}

// lostBeat plays a write of the attempt's that went through while its
// answer was cut off by the attempt's failure: just before the attempt gives
// its lease up, the job moves on under that lease, and the attempt's view of
// the job is left behind.
type lostBeat struct {
	worker.Store
	once sync.Once
}

func (l *lostBeat) Transition(ctx context.Context, j *job.Job, c job.Change, now time.Time) (*job.Job, error) {
	if c.Holder != "" && c.Lease != nil && !c.Lease.Until.After(now) && j.Status.CanMoveTo(job.IntermediateComplete) {
		var err error
		l.once.Do(func() {
			kept := job.Lease{ID: c.Holder, Until: now.Add(time.Minute)}
			_, err = l.Store.Transition(ctx, j, job.Change{To: job.IntermediateComplete, Holder: c.Holder, Lease: &kept}, now)
		})
		if err != nil {
			return nil, err
		}
	}
	return l.Store.Transition(ctx, j, c, now)
}

// A failed attempt gives its lease up even when a write of its own whose
// answer it never read moved the job on: the retry claims the job at once
// rather than dropping its message as another worker's.
func TestAFailedAttemptReleasesItsLeaseAfterALostWrite(t *testing.T) {
	e := newEnv(t)
	e.w.Store = &lostBeat{Store: e.store}
	flaky := &flakyBlobs{Blobs: e.w.Blobs}
	flaky.failures.Store(1)
	e.w.Blobs = flaky
	j := e.create(mesh, `{"mode":"text","prompt":"","image_urls":[]}`)
	resp, err := e.w.HandleSQS(e.ctx, sqsEvent(j.ID, "m1"))
	if err != nil || len(resp.BatchItemFailures) != 1 {
		t.Fatalf("attempt: %+v, %v; want its message reported for retry", resp, err)
	}
	if got := e.job(j.ID); got.Status != job.IntermediateComplete || got.Lease.Held(time.Now()) {
		t.Fatalf("after the failed attempt: %s, lease until %s; want the lease given up", got.Status, got.Lease.Until.Format(time.RFC3339Nano))
	}
	resp, err = e.w.HandleSQS(e.ctx, sqsEvent(j.ID, "m1"))
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("retry: %+v, %v", resp, err)
	}
	if got := e.job(j.ID); got.Status != job.Completed {
		t.Fatalf("after the retry: %s; want completed\n%s", got.Status, e.logs)
	}
}

// writesOf wraps the worker's real store and asset records, noting the
// status of every write of the job and every read of an asset's record.
type writesOf struct {
	worker.Store
	assets   worker.AssetRecords
	mu       sync.Mutex
	statuses []job.Status
	records  int
}

func (w *writesOf) Transition(ctx context.Context, j *job.Job, c job.Change, now time.Time) (*job.Job, error) {
	w.mu.Lock()
	w.statuses = append(w.statuses, c.To)
	w.mu.Unlock()
	return w.Store.Transition(ctx, j, c, now)
}

func (w *writesOf) Asset(ctx context.Context, id string) (asset.Asset, error) {
	w.mu.Lock()
	w.records++
	w.mu.Unlock()
	return w.assets.Asset(ctx, id)
}

// TestTheClaimStartsTheJob: a job the worker runs goes from queued to
// processing in the one write that claims it (never stored as
// scheduled), and its uploaded asset is read from the bucket with no read
// of the asset's record: what a polling client sees and what a job costs.
func TestTheClaimStartsTheJob(t *testing.T) {
	e := newEnv(t)
	const base = "https://api.example.com"
	a := asset.Asset{ID: asset.NewID(), WorkspaceID: "ws_a", ContentType: asset.PNG, Size: int64(len(tinyPNG())), CreatedAt: time.Now()}
	a.Key = asset.Key("ws_a", a.ID)
	if err := e.blobs.PutAsset(e.ctx, a.Key, a.ContentType, tinyPNG()); err != nil {
		t.Fatal(err)
	}
	if err := assetsdb.New(e.store).CreateAsset(e.ctx, a); err != nil {
		t.Fatal(err)
	}
	rec := &writesOf{Store: e.w.Store, assets: e.w.Assets}
	e.w.Store, e.w.Assets = rec, rec
	now := time.Now()
	j := &job.Job{ID: job.NewID(now), WorkspaceID: "ws_a", CreatedAt: now, BaseURL: base,
		Endpoint: "/generate/image/vendor-b/model-e-4", Request: []byte(`{"prompt":"p","width":64,"height":64,"seed":1,"style_images":["` + asset.URL(base, a.ID) + `"]}`)}
	if err := e.store.CreateJob(e.ctx, j); err != nil {
		t.Fatal(err)
	}
	if err := e.w.Run(e.ctx, j.ID); err != nil {
		t.Fatal(err)
	}
	if got := e.job(j.ID); got.Status != job.Completed || len(e.eng.seen) != 1 || !bytes.Equal(e.eng.seen[0].Data, tinyPNG()) {
		t.Fatalf("job %s, the engine given %d inputs; want completed from the asset", got.Status, len(e.eng.seen))
	}
	if len(rec.statuses) == 0 || rec.statuses[0] != job.Processing || slices.Contains(rec.statuses, job.Scheduled) {
		t.Errorf("the worker wrote the statuses %v; want processing first, in its claim, and never scheduled", rec.statuses)
	}
	if rec.records != 0 {
		t.Errorf("the asset's record was read %d times; want its file read where the job's workspace keeps it", rec.records)
	}
}
