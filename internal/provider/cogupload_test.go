package provider_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"

	"genjobs/internal/job"
	"genjobs/internal/provider"
	"genjobs/internal/provider/providertest"
)

var png2 = append(bytes.Clone(pngBytes), "another image"...)

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
		e.cog.Mode, e.cog.UploadURL = c.mode, e.baseURL+"/callbacks/cog/uploads/"
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
// this job's key, with a wrong bearer token, or over the size bound is
// refused, and nothing is stored.
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
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, c := range []struct {
		name, id, auth string
		body           []byte
		want           int
	}{
		{"no prediction id", "", "", pngBytes, http.StatusUnauthorized},
		{"the job id alone", provider.PredictionID(j.ID, ""), "", pngBytes, http.StatusUnauthorized},
		{"a job that ended", provider.PredictionID(ended.ID, e.sub(ended.ID).Key), "", pngBytes, http.StatusUnauthorized},
		{"another job's id with this job's key", mixed, "", pngBytes, http.StatusUnauthorized},
		{"a wrong bearer token", own, "Bearer nope", pngBytes, http.StatusUnauthorized},
		{"over the size bound", own, "", bytes.Repeat([]byte{1}, provider.MaxUploadBytes+1), http.StatusRequestEntityTooLarge},
	} {
		if code := put(c.id, c.auth, c.body); code != c.want {
			t.Errorf("%s: answered %d; want %d", c.name, code, c.want)
		}
	}
	for _, x := range []*job.Job{j, k, ended} {
		if keys := e.objects("results/" + x.ID + "/"); len(keys) != 0 {
			t.Errorf("job %s holds %v after refused uploads", x.ID, keys)
		}
	}
	// The job's own prediction id, and the callbacks' bearer token where
	// the server sends it: stored.
	if code := put(own, "Bearer cog-webhook-token", pngBytes); code != http.StatusCreated {
		t.Fatalf("a genuine upload answered %d", code)
	}
	if keys := e.objects("results/" + j.ID + "/"); len(keys) != 1 {
		t.Fatalf("the job holds %v; want the one upload", keys)
	}
}

// TestCogUploadSurvivesRacingCopies: two steps copy one prediction's
// outputs at once (a completed webhook sent again, or a fast model whose
// submission answer already says succeeded, as Cog 0.13.6's does); the
// one that loses the race to end the job must not delete the uploaded file
// the winner completed the job with.
func TestCogUploadSurvivesRacingCopies(t *testing.T) {
	e := newEnv(t, cogRoutes)
	e.cog.Mode, e.cog.UploadURL = providertest.CogUpload, e.baseURL+"/callbacks/cog/uploads/"
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
