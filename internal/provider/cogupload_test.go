package provider_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"genjobs/internal/app/providerwire"
	"genjobs/internal/blob"
	"genjobs/internal/job"
	"genjobs/internal/provider"
	"genjobs/internal/provider/providertest"
	"genjobs/internal/testenv"
)

var png2 = append(bytes.Clone(pngBytes), "another image"...)

// uploadURL is the --upload-url a Cog server of the route is started with:
// the upload store, the route's webhook_token as the URL's password (Cog's
// uploader sends no header of its own).
func (e *env) uploadURL() string {
	return strings.Replace(e.baseURL, "http://", "http://cog:cog-webhook-token@", 1) + "/callbacks/cog/uploads/"
}

// TestCogOutputModes: a Cog server reports its files as Cog's releases do:
// data: URIs complete the job; with --upload-url pointing at the upload
// store, both files PUT there become the job's outputs, byte for byte; a
// file path on the server's own disk fails the job with a message naming
// the path and the fix.
func TestCogOutputModes(t *testing.T) {
	e := newEnv(t, cogRoutes)
	files := []providertest.CogFile{{Name: "out-0.png", ContentType: "image/png", Data: pngBytes}, {Name: "out-1.png", ContentType: "image/png", Data: png2}}
	for _, c := range []struct {
		name string
		mode providertest.CogMode
	}{{"data: URIs", providertest.CogDataURI}, {"--upload-url", providertest.CogUpload}, {"paths", providertest.CogPath}} {
		e.drain() // the steps left by the job before
		e.cog.Mode, e.cog.UploadURL = c.mode, e.uploadURL()
		j := e.create(imageEndpoint, fox)
		if got := e.steps(j.ID, 1); got.Status != job.Scheduled {
			t.Fatalf("%s: job %s; want scheduled\n%s", c.name, got.Status, e.logs.String())
		}
		id := provider.PredictionID(j.ID, e.sub(j.ID).Key)
		if code := e.cog.Complete(t, id, false, files...); code != http.StatusNoContent {
			t.Fatalf("%s: the completed webhook answered %d", c.name, code)
		}
		got := e.steps(j.ID, 3)
		if c.mode == providertest.CogPath {
			want := "--upload-url " + e.baseURL + "/callbacks/cog/uploads/"
			if got.Status != job.Failed || got.Error.Code != job.CodeProvider || !strings.Contains(got.Error.Message, "/tmp/tmp") || !strings.Contains(got.Error.Message, want) {
				t.Fatalf("%s: job %s %+v; want failed naming the path and %q", c.name, got.Status, got.Error, want)
			}
			if e.charges(j.ID) != 0 {
				t.Errorf("%s: charged", c.name)
			}
			continue
		}
		if got.Status != job.Completed {
			t.Fatalf("%s: job %s %+v; want completed\n%s", c.name, got.Status, got.Error, e.logs.String())
		}
		res := e.result(got)
		if len(res) != 2 || !bytes.Equal(res[0], pngBytes) || !bytes.Equal(res[1], png2) {
			t.Fatalf("%s: %d results; want both files, byte for byte, in order", c.name, len(res))
		}
	}
	if up := e.cog.Uploads(); len(up) != 2 || up[0] != http.StatusCreated || up[1] != http.StatusCreated {
		t.Errorf("the upload store answered %v; want 201 twice", up)
	}
	e.audit()
}

// TestCogUploadStoreRefuses: a PUT without a prediction id, with one this
// service never chose, for a job that has ended, with another job's id and
// this job's key, without the route's webhook token (its secret has one),
// with a wrong one (Bearer or Basic), or over the size bound is refused,
// and nothing is stored.
func TestCogUploadStoreRefuses(t *testing.T) {
	e := newEnv(t, cogRoutes)
	j := e.create(imageEndpoint, fox)
	k := e.create(imageEndpoint, fox)
	ended := e.create(imageEndpoint, fox)
	for _, x := range []*job.Job{j, k, ended} {
		e.steps(x.ID, 1)
	}
	if _, err := e.life.Cancel(e.ctx, e.job(ended.ID)); err != nil {
		t.Fatal(err)
	}
	own := provider.PredictionID(j.ID, e.sub(j.ID).Key)
	mixed := provider.PredictionID(k.ID, e.sub(j.ID).Key)
	url := e.baseURL + "/callbacks/cog/uploads/out.png"
	const token = "Bearer cog-webhook-token"
	var lastBody string
	put := func(predictionID, auth string, body []byte) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPut, url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "image/png")
		if predictionID != "" {
			req.Header.Set("X-Prediction-ID", predictionID)
		}
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		lastBody = string(b)
		return resp.StatusCode
	}
	basic := func(password string) string {
		return "Basic " + base64.StdEncoding.EncodeToString([]byte("cog:"+password))
	}
	for _, c := range []struct {
		name, id, auth string
		body           []byte
		want           int
	}{
		{"no prediction id", "", token, pngBytes, http.StatusUnauthorized},
		{"the job id alone", provider.PredictionID(j.ID, ""), token, pngBytes, http.StatusUnauthorized},
		{"a job that ended", provider.PredictionID(ended.ID, e.sub(ended.ID).Key), token, pngBytes, http.StatusUnauthorized},
		{"another job's id with this job's key", mixed, token, pngBytes, http.StatusUnauthorized},
		{"no webhook token", own, "", pngBytes, http.StatusUnauthorized},
		{"a wrong bearer token", own, "Bearer nope", pngBytes, http.StatusUnauthorized},
		{"a wrong password", own, basic("nope"), pngBytes, http.StatusUnauthorized},
		{"over the size bound", own, token, bytes.Repeat([]byte{1}, provider.MaxUploadBytes+1), http.StatusRequestEntityTooLarge},
	} {
		if code := put(c.id, c.auth, c.body); code != c.want {
			t.Errorf("%s: answered %d; want %d", c.name, code, c.want)
		}
		if c.name == "no webhook token" && !strings.Contains(lastBody, "webhook token is required") {
			t.Errorf("an upload without the token was answered %s; want the error naming the token", lastBody)
		}
	}
	for _, x := range []*job.Job{j, k, ended} {
		if keys := e.objects("results/" + x.ID + "/"); len(keys) != 0 {
			t.Errorf("job %s holds %v after refused uploads", x.ID, keys)
		}
	}
	// The job's own prediction id, and the route's webhook token as a
	// bearer token or as Basic credentials' password: stored.
	for i, auth := range []string{token, basic("cog-webhook-token")} {
		if code := put(own, auth, pngBytes); code != http.StatusCreated {
			t.Fatalf("a genuine upload (%s) answered %d", strings.Fields(auth)[0], code)
		}
		if keys := e.objects("results/" + j.ID + "/"); len(keys) != i+1 {
			t.Fatalf("the job holds %v; want %d uploads", keys, i+1)
		}
	}
}

// TestCogUploadSurvivesRacingCopies: two steps copy one prediction's
// outputs at once (a completed webhook sent again, or a fast model whose
// submission answer already says succeeded, as Cog 0.13.6's does); the
// one that loses the race to end the job must not delete the uploaded file
// the winner completed the job with.
func TestCogUploadSurvivesRacingCopies(t *testing.T) {
	e := newEnv(t, cogRoutes)
	e.cog.Mode, e.cog.UploadURL = providertest.CogUpload, e.uploadURL()
	j := e.create(imageEndpoint, fox)
	if got := e.steps(j.ID, 1); got.Status != job.Scheduled {
		t.Fatalf("job %s; want scheduled\n%s", got.Status, e.logs.String())
	}
	id := provider.PredictionID(j.ID, e.sub(j.ID).Key)
	if code := e.cog.Complete(t, id, false, providertest.CogFile{Name: "out.png", ContentType: "image/png", Data: pngBytes}); code != http.StatusNoContent {
		t.Fatalf("the completed webhook answered %d", code)
	}
	if code := e.cog.Resend(t, id); code != http.StatusNoContent {
		t.Fatalf("the completed webhook sent again answered %d", code)
	}
	// The first copy step ends the job only after the second has run whole.
	e.runner.Ender = &racingEnder{Ender: e.runner.Ender, first: func() {
		if !e.stepQuick() {
			t.Fatal("no second copy step was queued")
		}
	}}
	if !e.stepQuick() {
		t.Fatal("no copy step was queued")
	}
	got := e.job(j.ID)
	if got.Status != job.Completed {
		t.Fatalf("job %s %+v; want completed\n%s", got.Status, got.Error, e.logs.String())
	}
	if res := e.result(got); len(res) != 1 || !bytes.Equal(res[0], pngBytes) {
		t.Fatalf("%d results; want the uploaded file, byte for byte", len(res))
	}
	e.drain()
	e.audit()
}

// racingEnder runs first once, before the first End it is asked for.
type racingEnder struct {
	provider.Ender
	first func()
}

func (r *racingEnder) End(ctx context.Context, j *job.Job, c job.Change) (*job.Job, error) {
	if f := r.first; f != nil {
		r.first = nil
		f()
	}
	return r.Ender.End(ctx, j, c)
}

// TestCogUploadsAreKeptAsTheirBytesShow: the upload store keeps a file as
// the media type its bytes show, whatever the uploader declared: an HTML
// page declared text/html is kept as application/octet-stream with
// Content-Disposition: attachment (a browser saves it, never renders it
// as a page of the service's); a PNG, an MP4, a WebM and a glTF binary
// declared text/html are kept as what they are. The result's download URL
// serves the kept type.
func TestCogUploadsAreKeptAsTheirBytesShow(t *testing.T) {
	e := newEnv(t, cogRoutes)
	// The callbacks' S3 requests, as sent to the emulator: fauxqs keeps no
	// Content-Disposition, S3 does and serves it.
	sent := &sentHeaders{h: map[string]string{}}
	s3c := s3.New(e.s3.Options(), func(o *s3.Options) { o.HTTPClient = sent })
	e.cb.Blobs = providerwire.Blobs{Store: blob.New(s3c, e.results, testenv.NewBucket(t))}
	j := e.create(imageEndpoint, fox)
	e.steps(j.ID, 1)
	own := provider.PredictionID(j.ID, e.sub(j.ID).Key)
	for _, c := range []struct {
		name, want, disposition string
		data                    []byte
	}{
		{"page.html", "application/octet-stream", "attachment", []byte("<!doctype html><html><script>alert(document.cookie)</script></html>")},
		{"image.png", "image/png", "", pngBytes},
		{"clip.mp4", "video/mp4", "", []byte("\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom")},
		{"clip.webm", "video/webm", "", []byte("\x1a\x45\xdf\xa3\x9f\x42\x86\x81\x01webm")},
		{"mesh.glb", "model/gltf-binary", "", append([]byte("glTF\x02\x00\x00\x00\x14\x00\x00\x00"), make([]byte, 8)...)},
	} {
		req, _ := http.NewRequest(http.MethodPut, e.baseURL+"/callbacks/cog/uploads/"+c.name, bytes.NewReader(c.data))
		req.Header.Set("Content-Type", "text/html")
		req.Header.Set("X-Prediction-ID", own)
		req.Header.Set("Authorization", "Bearer cog-webhook-token")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("%s: answered %d", c.name, resp.StatusCode)
		}
		var key string
		for _, k := range e.objects("results/" + j.ID + "/") {
			if strings.HasSuffix(k, "-"+c.name) {
				key = k
			}
		}
		head, err := e.s3.HeadObject(e.ctx, &s3.HeadObjectInput{Bucket: aws.String(e.results), Key: aws.String(key)})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := aws.ToString(head.ContentType); got != c.want {
			t.Errorf("%s declared text/html is kept as %q; want %q", c.name, got, c.want)
		}
		if got := sent.get(key); got != c.disposition {
			t.Errorf("%s is kept with Content-Disposition %q; want %q", c.name, got, c.disposition)
		}
		u, err := e.blobs.ResultURL(e.ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		got, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		got.Body.Close()
		if ct := got.Header.Get("Content-Type"); ct != c.want {
			t.Errorf("%s is served as %q; want %q", c.name, ct, c.want)
		}
	}
}

// sentHeaders is an S3 client's HTTP client that records the
// Content-Disposition of each PUT, by key.
type sentHeaders struct {
	mu sync.Mutex
	h  map[string]string
}

func (s *sentHeaders) Do(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPut {
		s.mu.Lock()
		s.h[strings.TrimPrefix(r.URL.Path, "/")] = r.Header.Get("Content-Disposition")
		s.mu.Unlock()
	}
	return http.DefaultClient.Do(r)
}

func (s *sentHeaders) get(key string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for path, d := range s.h {
		if strings.HasSuffix(path, "/"+key) {
			return d
		}
	}
	return "<no PUT>"
}

// TestCogUploadsGoWithAJobThatDidNotComplete: the files a Cog server
// uploaded for a job that is then cancelled, or whose prediction fails,
// are deleted from the results bucket (fauxqs' S3) with the job's end,
// not kept until the bucket's 30-day rule; a completed job keeps its
// uploaded outputs.
func TestCogUploadsGoWithAJobThatDidNotComplete(t *testing.T) {
	e := newEnv(t, cogRoutes)
	e.cog.Mode, e.cog.UploadURL = providertest.CogUpload, e.uploadURL()
	upload := func(j *job.Job) string {
		t.Helper()
		id := provider.PredictionID(j.ID, e.sub(j.ID).Key)
		req, _ := http.NewRequest(http.MethodPut, e.baseURL+"/callbacks/cog/uploads/partial.png", bytes.NewReader(pngBytes))
		req.Header.Set("X-Prediction-ID", id)
		req.Header.Set("Authorization", "Bearer cog-webhook-token")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated || len(e.objects("results/"+j.ID+"/")) != 1 {
			t.Fatalf("the upload answered %d; the job holds %v", resp.StatusCode, e.objects("results/"+j.ID+"/"))
		}
		return id
	}
	cancelled, failed, completed := e.create(imageEndpoint, fox), e.create(imageEndpoint, fox), e.create(imageEndpoint, fox)
	for _, j := range []*job.Job{cancelled, failed, completed} {
		e.steps(j.ID, 1)
	}
	e.drain()

	upload(cancelled)
	if _, err := e.life.Cancel(e.ctx, e.job(cancelled.ID)); err != nil {
		t.Fatal(err)
	}
	id := upload(failed)
	if code := e.cog.Finish(t, id, nil, "CUDA out of memory", false); code != http.StatusNoContent {
		t.Fatalf("the failed webhook answered %d", code)
	}
	id = provider.PredictionID(completed.ID, e.sub(completed.ID).Key)
	if code := e.cog.Complete(t, id, false, providertest.CogFile{Name: "out.png", ContentType: "image/png", Data: pngBytes}); code != http.StatusNoContent {
		t.Fatalf("the completed webhook answered %d", code)
	}
	e.drain()

	for _, c := range []struct {
		j    *job.Job
		want job.Status
		kept int
	}{{cancelled, job.Cancelled, 0}, {failed, job.Failed, 0}, {completed, job.Completed, 1}} {
		if got := e.job(c.j.ID); got.Status != c.want {
			t.Fatalf("job %s; want %s\n%s", got.Status, c.want, e.logs.String())
		}
		if keys := e.objects("results/" + c.j.ID + "/"); len(keys) != c.kept {
			t.Errorf("the %s job holds %v after its end; want %d files", c.want, keys, c.kept)
		}
	}
	e.audit()
}

// TestCogDataURIStoredByTheCallback: a Cog server's data: URI output is in
// the results bucket, decoded, by the time its callback is answered, and
// the stashed callback is a reference to it rather than the base64 again;
// the step that completes the job takes that file as it is, byte for byte.
// A job cancelled after such a callback, before its step, keeps none of
// it. A callback stashed whole by the version before (the provider's body)
// is still acted on.
func TestCogDataURIStoredByTheCallback(t *testing.T) {
	e := newEnv(t, cogRoutes)
	big := bytes.Repeat(pngBytes, 64) // large enough that a copy of its base64 shows
	results := func(j *job.Job) []string { return e.objects("results/" + j.ID + "/") }

	j := e.create(imageEndpoint, fox)
	e.steps(j.ID, 1)
	if code := e.cog.Finish(t, provider.PredictionID(j.ID, e.sub(j.ID).Key), "data:image/png;base64,"+b64(big), "", false); code != http.StatusNoContent {
		t.Fatalf("the completed webhook answered %d", code)
	}
	stored := results(j)
	if len(stored) != 1 || !strings.HasPrefix(stored[0], "results/"+j.ID+"/upload-") || !strings.HasSuffix(stored[0], ".png") {
		t.Fatalf("results after the callback was answered: %v; want its output stored, a .png of the job's uploads", stored)
	}
	stash := e.sub(j.ID).Callback
	head, err := e.s3.HeadObject(e.ctx, &s3.HeadObjectInput{Bucket: aws.String(e.results), Key: aws.String(stash)})
	if err != nil {
		t.Fatal(err)
	}
	if n := aws.ToInt64(head.ContentLength); n > 1024 {
		t.Errorf("the stashed callback is %d bytes; want a reference to the stored output (the output's base64 is %d)", n, len(b64(big)))
	}
	got := e.steps(j.ID, 3)
	if got.Status != job.Completed || len(got.Outputs) != 1 || got.Outputs[0] != stored[0] {
		t.Fatalf("job %s with outputs %v; want completed with %s", got.Status, got.Outputs, stored[0])
	}
	if res := e.result(got); !bytes.Equal(res[0], big) {
		t.Fatalf("the output is %d bytes; want the server's %d, byte for byte", len(res[0]), len(big))
	}
	if after := results(got); len(after) != 1 {
		t.Errorf("results after the step: %v; want the one file, not a copy of it", after)
	}

	// Cancelled between the callback and its step: the cancellation's step
	// deletes the stored file with the server's own uploads.
	e.drain()
	k := e.create(imageEndpoint, fox)
	e.steps(k.ID, 1)
	e.cog.Finish(t, provider.PredictionID(k.ID, e.sub(k.ID).Key), "data:image/png;base64,"+b64(big), "", false)
	if len(results(k)) != 1 {
		t.Fatalf("results after the callback: %v; want its output", results(k))
	}
	if _, err := e.life.Cancel(e.ctx, e.job(k.ID)); err != nil {
		t.Fatal(err)
	}
	e.drain()
	if got := e.job(k.ID); got.Status != job.Cancelled || len(results(got)) != 0 {
		t.Fatalf("job %s with results %v; want cancelled with none", got.Status, results(got))
	}

	// A stash of the provider's body as it came, under a key of before.
	e.drain()
	m := e.create(imageEndpoint, fox)
	e.steps(m.ID, 1)
	body := fmt.Sprintf(`{"id": %q, "status": "succeeded", "output": "data:image/png;base64,%s"}`, provider.PredictionID(m.ID, e.sub(m.ID).Key), b64(pngBytes))
	key := "callbacks/" + m.ID + "/0123456789abcdef01234567.json"
	if err := e.blobs.PutResult(e.ctx, key, "application/json", []byte(body)); err != nil {
		t.Fatal(err)
	}
	if err := e.store.StashCallback(e.ctx, m.ID, key); err != nil {
		t.Fatal(err)
	}
	if err := e.runner.Step(e.ctx, provider.Message{Kind: provider.StepCopy, JobID: m.ID}); err != nil {
		t.Fatal(err)
	}
	if got := e.job(m.ID); got.Status != job.Completed || !bytes.Equal(e.result(got)[0], pngBytes) {
		t.Fatalf("job %s; want completed with the stashed body's output\n%s", got.Status, e.logs.String())
	}
	e.audit()
}
