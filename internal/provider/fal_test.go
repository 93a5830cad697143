package provider_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"genjobs/internal/job"
	"genjobs/internal/provider/fal"
	"genjobs/internal/provider/providertest"
)

// falRoutes routes the image endpoint to a model on the fal fake, as a
// user would (the fake's JWKS named by jwks_url).
func falRoutes(e *env) string {
	return fmt.Sprintf(`{%q: {"provider": "fal", "base_url": %q, "jwks_url": %q, "model": "fal-ai/flux/dev",
		"input": {"prompt": "prompt", "width": "width", "height": "height", "seed": "seed"},
		"constants": {"num_images": 2, "enable_safety_checker": true}, "secret": "fal", "deadline_minutes": 5}}`,
		imageEndpoint, e.fal.URL, e.fal.JWKSURL)
}

// falResult is a result of fal's shape, its members in this order: two
// images, then a video file nested deeper, and a url that is no file's (a
// string member, not an object's url).
func falResult(a, b, v string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"images": [
		{"url": %q, "width": 512, "height": 512, "content_type": "image/png"},
		{"url": %q, "width": 512, "height": 512, "content_type": "image/png"}],
		"extra": {"clip": {"url": %q, "content_type": "video/mp4", "file_name": "clip.mp4", "file_size": 12}},
		"seed": 42, "website": "https://fal.ai"}`, a, b, v))
}

// TestFalJobCompletes: the whole path with a fal fake configured as a user
// would: the mapped input, fal_webhook naming the job, the API key, the
// start deadline; IN_QUEUE -> scheduled and IN_PROGRESS with a progress
// bar -> sampling by polling; a signed webhook verified against the JWKS;
// every file object of the payload copied in document order, byte for
// byte; one charge.
func TestFalJobCompletes(t *testing.T) {
	e := newEnv(t, falRoutes)
	j := e.create(imageEndpoint, fox)
	if got := e.steps(j.ID, 1); got.Status != job.Scheduled {
		t.Fatalf("after submission the job is %s; want scheduled\n%s", got.Status, e.logs.String())
	}
	r := e.fal.Only(t)
	if r.Model != "fal-ai/flux/dev" {
		t.Errorf("submitted to %q", r.Model)
	}
	in, _ := json.Marshal(r.Input)
	var input map[string]any
	_ = json.Unmarshal(in, &input)
	if input["prompt"] != "a red fox" || input["width"] != 512.0 || input["num_images"] != 2.0 || input["enable_safety_checker"] != true || len(input) != 6 {
		t.Errorf("input %s", in)
	}
	if !strings.HasPrefix(r.Webhook, e.baseURL+"/callbacks/fal/"+j.ID+"/") {
		t.Errorf("fal_webhook %q does not name the job's callback", r.Webhook)
	}
	if secs, err := strconv.Atoi(r.StartTimeout); err != nil || secs < 290 || secs > 300 {
		t.Errorf("X-Fal-Request-Start-Timeout %q; want the 5 minutes left to the deadline", r.StartTimeout)
	}
	e.fal.Set(r.ID, fal.InProgress, []string{"loading", " 45%|####      | 45/100"}, nil, 0, "")
	got := e.steps(j.ID, 1)
	if got.Status != job.Sampling || got.Progress == nil || *got.Progress != 0.45 {
		t.Fatalf("job %s %v; want sampling at 0.45", got.Status, got.Progress)
	}
	png2 := append(bytes.Clone(pngBytes), "second"...)
	mp4 := []byte("\x00\x00\x00\x18ftypmp42")
	a := e.files.Put("/fal/a.png", providertest.File{ContentType: "image/png", Data: pngBytes})
	b := e.files.Put("/fal/b.png", providertest.File{ContentType: "image/png", Data: png2})
	v := e.files.Put("/fal/clip.mp4", providertest.File{ContentType: "video/mp4", Data: mp4})
	e.fal.Set(r.ID, fal.Completed, nil, falResult(a, b, v), 0, "")
	if code := e.fal.Callback(t, r.ID); code != http.StatusNoContent {
		t.Fatalf("the signed webhook was answered %d\n%s", code, e.logs.String())
	}
	done := e.steps(j.ID, 3)
	if done.Status != job.Completed {
		t.Fatalf("job %s %+v; want completed\n%s", done.Status, done.Error, e.logs.String())
	}
	res := e.result(done)
	if len(res) != 3 || !bytes.Equal(res[0], pngBytes) || !bytes.Equal(res[1], png2) || !bytes.Equal(res[2], mp4) {
		t.Fatalf("results %d files %q; want the payload's three files in its order (outputs %v)", len(res), res, done.Outputs)
	}
	if e.charges(j.ID) != 1 || e.fal.Creates() != 1 {
		t.Errorf("%d charges, %d requests", e.charges(j.ID), e.fal.Creates())
	}
	e.audit()
}

// TestFalCallbacksThatFailVerification: a forged signature, a key not in
// the JWKS, a stale timestamp, another job's request: 401 and nothing
// changes. The genuine webhook then completes the job; its replay is
// answered 204 and changes nothing.
func TestFalCallbacksThatFailVerification(t *testing.T) {
	e := newEnv(t, falRoutes)
	j := e.create(imageEndpoint, fox)
	other := e.create(imageEndpoint, fox)
	e.steps(j.ID, 1)
	e.steps(other.ID, 1)
	id, _ := e.fal.ForJob(j.ID)
	otherID, _ := e.fal.ForJob(other.ID)
	out := e.files.Put("/fal/v.png", providertest.File{ContentType: "image/png", Data: pngBytes})
	e.fal.Set(id, fal.Completed, nil, map[string]any{"images": []any{map[string]any{"url": out}}}, 0, "")
	e.fal.Set(otherID, fal.Completed, nil, map[string]any{"images": []any{map[string]any{"url": out}}}, 0, "")
	good := e.fal.Webhook(id, time.Now())

	forged := e.fal.Webhook(id, time.Now())
	forged.Body = bytes.Replace(forged.Body, []byte(`"OK"`), []byte(`"ok"`), 1)
	stranger := e.fal.Sign(good.URL, id, good.Body, time.Now(), providertest.StrangerKey())
	stale := e.fal.Webhook(id, time.Now().Add(-6*time.Minute))
	theirs := e.fal.Webhook(otherID, time.Now())
	theirs.URL = good.URL // another job's genuine webhook, sent to this job's callback
	hits := e.fal.JWKSHits()
	for name, w := range map[string]providertest.FalWebhook{"forged": forged, "a key not in the JWKS": stranger, "stale": stale, "another job's request": theirs} {
		if code := providertest.Send(t, w.URL, w.Body, w.Header); code != http.StatusUnauthorized {
			t.Errorf("%s: answered %d; want 401", name, code)
		}
	}
	if h := e.fal.JWKSHits() - hits; h > 2 {
		t.Errorf("the JWKS was fetched %d times for four bad webhooks; want it cached (once, and once again on an unknown key)", h)
	}
	if got := e.job(j.ID); got.Status != job.Scheduled {
		t.Fatalf("after refused webhooks the job is %s", got.Status)
	}
	if code := providertest.Send(t, good.URL, good.Body, good.Header); code != http.StatusNoContent {
		t.Fatalf("the genuine webhook: %d\n%s", code, e.logs.String())
	}
	if got := e.steps(j.ID, 3); got.Status != job.Completed {
		t.Fatalf("job %s; want completed\n%s", got.Status, e.logs.String())
	}
	if code := providertest.Send(t, good.URL, good.Body, good.Header); code != http.StatusNoContent {
		t.Errorf("the replay: %d; want 204", code)
	}
	e.drain()
	if e.charges(j.ID) != 1 {
		t.Errorf("%d charges after a replay", e.charges(j.ID))
	}
	e.audit()
}

// TestFalErrorWebhookFailsTheJob: status ERROR fails the job with
// provider_error and fal's words; nothing is charged.
func TestFalErrorWebhookFailsTheJob(t *testing.T) {
	e := newEnv(t, falRoutes)
	j := e.create(imageEndpoint, fox)
	e.steps(j.ID, 1)
	r := e.fal.Only(t)
	e.fal.Set(r.ID, fal.Completed, nil, nil, http.StatusUnprocessableEntity, `{"detail": [{"loc": ["body", "prompt"], "msg": "prompt flagged by the safety checker"}]}`)
	if code := e.fal.Callback(t, r.ID); code != http.StatusNoContent {
		t.Fatalf("webhook answered %d", code)
	}
	got := e.steps(j.ID, 3)
	if got.Status != job.Failed || got.Error == nil || got.Error.Code != job.CodeProvider || !strings.Contains(got.Error.Message, "safety checker") {
		t.Fatalf("job %s %+v; want failed provider_error with fal's words", got.Status, got.Error)
	}
	e.drain()
	if e.charges(j.ID) != 0 || len(e.fal.Cancels()) != 0 {
		t.Errorf("%d charges, cancels %v", e.charges(j.ID), e.fal.Cancels())
	}
	e.audit()
}

// TestFalJWKSUnavailable: the JWKS cannot be fetched: the webhook is
// refused, and the job completes by polling.
func TestFalJWKSUnavailable(t *testing.T) {
	e := newEnv(t, falRoutes)
	j := e.create(imageEndpoint, fox)
	e.steps(j.ID, 1)
	r := e.fal.Only(t)
	out := e.files.Put("/fal/p.png", providertest.File{ContentType: "image/png", Data: pngBytes})
	e.fal.Set(r.ID, fal.Completed, nil, map[string]any{"image": map[string]any{"url": out, "content_type": "image/png"}}, 0, "")
	e.fal.JWKSDown(true)
	if code := e.fal.Callback(t, r.ID); code != http.StatusUnauthorized {
		t.Fatalf("a webhook that cannot be verified was answered %d", code)
	}
	got := e.steps(j.ID, 3)
	if got.Status != job.Completed {
		t.Fatalf("job %s; want completed by polling\n%s", got.Status, e.logs.String())
	}
	if res := e.result(got); len(res) != 1 || !bytes.Equal(res[0], pngBytes) {
		t.Fatalf("result differs from the fake's output")
	}
	e.audit()
}

// TestFalKeyRotation: fal signs with a key the cached JWKS lacks: the JWKS
// is fetched again once and the webhook verified.
func TestFalKeyRotation(t *testing.T) {
	e := newEnv(t, falRoutes)
	j := e.create(imageEndpoint, fox)
	k := e.create(imageEndpoint, fox)
	e.steps(j.ID, 1)
	e.steps(k.ID, 1)
	out := e.files.Put("/fal/r.png", providertest.File{ContentType: "image/png", Data: pngBytes})
	for _, id := range []string{j.ID, k.ID} {
		rid, _ := e.fal.ForJob(id)
		e.fal.Set(rid, fal.Completed, nil, map[string]any{"images": []any{map[string]any{"url": out}}}, 0, "")
	}
	rj, _ := e.fal.ForJob(j.ID)
	if code := e.fal.Callback(t, rj); code != http.StatusNoContent {
		t.Fatalf("webhook: %d", code)
	}
	hits := e.fal.JWKSHits()
	e.fal.Rotate()
	e.clock.T = e.clock.T.Add(2 * time.Minute) // past the refetch cool-down
	rk, _ := e.fal.ForJob(k.ID)
	if code := e.fal.Callback(t, rk); code != http.StatusNoContent {
		t.Fatalf("a webhook signed with fal's new key: %d\n%s", code, e.logs.String())
	}
	if h := e.fal.JWKSHits() - hits; h != 1 {
		t.Errorf("the JWKS was fetched %d times for a new key; want once", h)
	}
}

// TestFalSubmissionRetriedAfter429And503: fal refuses the submission with
// 429 and 503 and Retry-After, then takes it: one request, and the job
// completes.
func TestFalSubmissionRetriedAfter429And503(t *testing.T) {
	e := newEnv(t, falRoutes)
	e.fal.FailNext(providertest.Fault{Status: http.StatusTooManyRequests, RetryAfter: "1", Body: "rate limited"},
		providertest.Fault{Status: http.StatusServiceUnavailable, RetryAfter: "1", Body: "busy"})
	j := e.create(imageEndpoint, fox)
	if got := e.steps(j.ID, 6); got.Status != job.Scheduled {
		t.Fatalf("job %s; want scheduled after the refusals\n%s", got.Status, e.logs.String())
	}
	if e.fal.Submits() != 3 || e.fal.Creates() != 1 {
		t.Fatalf("%d submissions, %d requests; want 3 and 1", e.fal.Submits(), e.fal.Creates())
	}
	r := e.fal.Only(t)
	out := e.files.Put("/fal/q.png", providertest.File{ContentType: "image/png", Data: pngBytes})
	e.fal.Set(r.ID, fal.Completed, nil, map[string]any{"images": []any{map[string]any{"url": out}}}, 0, "")
	if got := e.steps(j.ID, 3); got.Status != job.Completed {
		t.Fatalf("job %s; want completed", got.Status)
	}
	e.audit()
}

// TestFalLostSubmissionAnswer: fal queues the request but the answer is
// lost. fal lists no requests by anything of ours, so the job never
// submits again: the request's own webhook (its URL names the job and
// that submission's token) brings its id, and the job completes.
func TestFalLostSubmissionAnswer(t *testing.T) {
	e := newEnv(t, falRoutes)
	e.fal.FailNext(providertest.Fault{Lose: true})
	j := e.create(imageEndpoint, fox)
	e.step()
	for i := 0; i < 4; i++ {
		e.clock.T = e.clock.T.Add(40 * time.Second) // past the wait for an answer in flight
		e.step()
	}
	if e.fal.Creates() != 1 || e.fal.Submits() != 1 {
		t.Fatalf("%d submissions, %d requests; want the one whose answer was lost", e.fal.Submits(), e.fal.Creates())
	}
	if got := e.job(j.ID); got.Status.Terminal() {
		t.Fatalf("job %s before its request called back", got.Status)
	}
	r := e.fal.Only(t)
	out := e.files.Put("/fal/l.png", providertest.File{ContentType: "image/png", Data: pngBytes})
	e.fal.Set(r.ID, fal.Completed, nil, map[string]any{"images": []any{map[string]any{"url": out}}}, 0, "")
	if code := e.fal.Callback(t, r.ID); code != http.StatusNoContent {
		t.Fatalf("webhook: %d", code)
	}
	if got := e.steps(j.ID, 3); got.Status != job.Completed {
		t.Fatalf("job %s; want completed\n%s", got.Status, e.logs.String())
	}
	if e.fal.Creates() != 1 || e.charges(j.ID) != 1 {
		t.Fatalf("%d requests, %d charges", e.fal.Creates(), e.charges(j.ID))
	}
	e.audit()
}

// TestFalCancel: a job cancelled while its request is queued: fal is asked
// to cancel the request; a late webhook changes nothing.
func TestFalCancel(t *testing.T) {
	e := newEnv(t, falRoutes)
	j := e.create(imageEndpoint, fox)
	e.steps(j.ID, 1)
	r := e.fal.Only(t)
	if _, err := e.life.Cancel(e.ctx, e.job(j.ID)); err != nil {
		t.Fatal(err)
	}
	e.drain()
	if c := e.fal.Cancels(); len(c) != 1 || c[0] != r.ID {
		t.Fatalf("cancels %v; want %s", c, r.ID)
	}
	out := e.files.Put("/fal/c.png", providertest.File{ContentType: "image/png", Data: pngBytes})
	e.fal.Set(r.ID, fal.Completed, nil, map[string]any{"images": []any{map[string]any{"url": out}}}, 0, "")
	if code := e.fal.Callback(t, r.ID); code != http.StatusNoContent {
		t.Fatalf("late webhook: %d", code)
	}
	e.drain()
	if got := e.job(j.ID); got.Status != job.Cancelled || e.charges(j.ID) != 0 {
		t.Fatalf("job %s, %d charges", got.Status, e.charges(j.ID))
	}
	e.audit()
}

// TestFalFilesInDocumentOrder: every file object of a result, in the order
// of the document (not sorted keys), and nothing that is not one.
func TestFalFilesInDocumentOrder(t *testing.T) {
	got := fal.Files([]byte(`{"video": {"url": "https://x/v.mp4", "content_type": "video/mp4"},
		"images": [{"url": "https://x/b.png", "nested": {"url": "https://x/no.png"}}, {"width": 1}, {"url": "data:image/png;base64,AA=="}],
		"audio_file": {"file_name": "a.wav", "url": "https://x/a.wav"}, "site": {"href": "https://x/"}}`))
	want := []string{"https://x/v.mp4", "https://x/b.png", "data:image/png;base64,AA==", "https://x/a.wav"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("files %v; want %v", got, want)
	}
}
