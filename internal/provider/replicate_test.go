package provider_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"genjobs/internal/asset"
	"genjobs/internal/job"
	"genjobs/internal/provider/providertest"
	"genjobs/internal/store/assetsdb"
)

const imageEndpoint = "/generate/image/vendor-b/model-e-4"

func replicateRoutes(e *env) string {
	return fmt.Sprintf(`{%q: {"provider": "replicate", "base_url": %q, "model": "acme/photo-e",
		"input": {"prompt": "prompt", "width": "width", "height": "height", "seed": "seed", "style_images": "image_prompts"},
		"constants": {"num_outputs": 1, "output_format": "png"}, "secret": "replicate", "deadline_minutes": 5}}`, imageEndpoint, e.rep.URL)
}

var pngBytes = []byte("\x89PNG\r\n\x1a\n" + strings.Repeat("pixels", 50))

// TestReplicateJobCompletes: the whole path with a Replicate fake configured
// as a user would: the mapped input exactly (types kept, constants added,
// an uploaded asset sent as a URL readable without our token), the webhook
// filter with "completed", scheduled -> sampling by polling, a signed
// completion callback verified, the output copied byte for byte, one charge.
func TestReplicateJobCompletes(t *testing.T) {
	e := newEnv(t, replicateRoutes)
	// An uploaded asset of the workspace.
	id := asset.NewID()
	key := asset.Key(ws, id)
	if err := e.blobs.PutAsset(e.ctx, key, "image/png", pngBytes); err != nil {
		t.Fatal(err)
	}
	if err := assetsdb.New(e.store.Store).CreateAsset(e.ctx, asset.Asset{ID: id, WorkspaceID: ws, Key: key, ContentType: "image/png", Size: int64(len(pngBytes)), CreatedAt: e.clock.Now()}); err != nil {
		t.Fatal(err)
	}
	dataURI := "data:image/png;base64," + base64.StdEncoding.EncodeToString(pngBytes)
	j := e.create(imageEndpoint, fmt.Sprintf(`{"prompt": "a red fox", "width": 512, "height": 768, "style_images": [%q, %q]}`,
		asset.URL(e.baseURL, id), dataURI))

	if got := e.steps(j.ID, 1); got.Status != job.Scheduled {
		t.Fatalf("after submission the job is %s; want scheduled", got.Status)
	}
	p := e.rep.Only(t)
	if p.Model != "acme/photo-e" {
		t.Errorf("created on model %q", p.Model)
	}
	in, _ := json.Marshal(p.Input)
	// Only mapped fields, under their names, numbers as numbers, the
	// default seed applied, then the constants.
	var got map[string]any
	_ = json.Unmarshal(in, &got)
	for k, want := range map[string]any{"prompt": "a red fox", "width": 512.0, "height": 768.0, "seed": 1337.0, "num_outputs": 1.0, "output_format": "png"} {
		if got[k] != want {
			t.Errorf("input %s = %#v; want %#v (all: %s)", k, got[k], want, in)
		}
	}
	if len(got) != 7 {
		t.Errorf("input has %d fields; want the 5 mapped and 2 constants: %s", len(got), in)
	}
	imgs, _ := got["image_prompts"].([]any)
	if len(imgs) != 2 || imgs[1] != dataURI {
		t.Fatalf("image_prompts = %v", got["image_prompts"])
	}
	// The asset is readable by the provider without our token.
	shared := imgs[0].(string)
	if strings.HasPrefix(shared, e.baseURL) {
		t.Fatalf("the asset was sent as our URL %s, which needs our token", shared)
	}
	resp, err := http.Get(shared)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Equal(b, pngBytes) {
		t.Fatalf("the shared asset URL answered %d with %d bytes", resp.StatusCode, len(b))
	}
	if !strings.Contains(strings.Join(p.Filter, ","), "completed") || !strings.Contains(p.Webhook, "/callbacks/replicate/"+j.ID+"/") {
		t.Errorf("webhook %q with filter %v", p.Webhook, p.Filter)
	}

	// Running: the next read shows progress from the logs.
	e.rep.Set(p.ID, "processing", "loading\n 40%|####      | 20/50\n", nil, "")
	if got := e.steps(j.ID, 1); got.Status != job.Sampling || got.Progress == nil || *got.Progress != 0.4 {
		t.Fatalf("while running the job is %s with progress %v; want sampling 0.4", got.Status, got.Progress)
	}

	// Done: the signed completion callback completes the job.
	out := e.files.Put("/out/fox.png", providertest.File{ContentType: "image/png", Data: pngBytes, ClaimLength: true})
	e.rep.Set(p.ID, "succeeded", "done", []string{out}, "")
	if code := e.rep.Callback(t, p.ID); code != http.StatusNoContent {
		t.Fatalf("callback answered %d", code)
	}
	done := e.steps(j.ID, 3)
	if done.Status != job.Completed || done.Progress == nil || *done.Progress != 1 {
		t.Fatalf("job %s progress %v; want completed\n%s", done.Status, done.Progress, e.logs.String())
	}
	files := e.result(done)
	if len(files) != 1 || !bytes.Equal(files[0], pngBytes) || !strings.HasSuffix(done.Outputs[0], ".png") {
		t.Fatalf("result %v: not the provider's bytes", done.Outputs)
	}
	if n := e.charges(j.ID); n != 1 {
		t.Errorf("%d charges for the job; want 1", n)
	}
	if e.rep.Creates() != 1 {
		t.Errorf("%d predictions; want 1", e.rep.Creates())
	}
	e.drain()
	if len(e.rep.Cancels()) != 0 {
		t.Errorf("a completed job's prediction was cancelled: %v", e.rep.Cancels())
	}
	if left := e.objects("callbacks/"); len(left) != 0 {
		t.Errorf("callback bodies left: %v", left)
	}
	e.audit()
}

// TestCallbacksThatFailVerification: forged, stale, wrong-job and unknown
// callbacks are answered 401 and change nothing; a replay of a valid one
// after the job ended is answered 2xx and changes nothing; a callback for a
// cancelled job is 2xx, the job stays cancelled and nothing is charged.
func TestCallbacksThatFailVerification(t *testing.T) {
	e := newEnv(t, replicateRoutes)
	rep := e.rep
	a := e.create(imageEndpoint, `{"prompt": "a", "width": 64, "height": 64}`)
	b := e.create(imageEndpoint, `{"prompt": "b", "width": 64, "height": 64}`)
	e.steps(a.ID, 1)
	e.steps(b.ID, 1)
	var pa, pb providertest.RPrediction
	pa.ID, _ = rep.ForJob(a.ID)
	pb.ID, _ = rep.ForJob(b.ID)
	out := e.files.Put("/out/a.png", providertest.File{ContentType: "image/png", Data: pngBytes})
	rep.Set(pa.ID, "succeeded", "", []string{out}, "")
	before := e.job(a.ID)

	url, body, h := rep.Webhook(pa.ID, time.Now())
	forged := h.Clone()
	forged.Set("webhook-signature", "v1,"+base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32)))
	staleURL, staleBody, stale := rep.Webhook(pa.ID, time.Now().Add(-6*time.Minute))
	tampered := bytes.Replace(body, []byte(`"succeeded"`), []byte(`"failed"`), 1)
	wrongJob := strings.Replace(url, a.ID, b.ID, 1) // a's token on b's URL
	unknownToken := url[:strings.LastIndex(url, "/")+1] + "not-the-token"
	for name, c := range map[string]struct {
		url  string
		body []byte
		h    http.Header
	}{
		"forged signature":  {url, body, forged},
		"stale timestamp":   {staleURL, staleBody, stale},
		"tampered body":     {url, tampered, h},
		"wrong job":         {wrongJob, body, h},
		"unknown token":     {unknownToken, body, h},
		"wrong provider":    {strings.Replace(url, "/replicate/", "/cog/", 1), body, h},
		"missing signature": {url, body, http.Header{"Content-Type": {"application/json"}}},
	} {
		if code := providertest.Send(t, c.url, c.body, c.h); code != http.StatusUnauthorized {
			t.Errorf("%s: answered %d; want 401", name, code)
		}
	}
	if now := e.job(a.ID); now.Status != before.Status || now.UpdatedAt != before.UpdatedAt {
		t.Fatalf("refused callbacks changed the job: %s -> %s", before.Status, now.Status)
	}
	if left := e.objects("callbacks/"); len(left) != 0 {
		t.Fatalf("refused callbacks stored bodies: %v", left)
	}

	// The valid one completes; its replay changes nothing.
	if code := providertest.Send(t, url, body, h); code != http.StatusNoContent {
		t.Fatalf("valid callback answered %d", code)
	}
	done := e.steps(a.ID, 3)
	if done.Status != job.Completed {
		t.Fatalf("job a is %s; want completed", done.Status)
	}
	if code := providertest.Send(t, url, body, h); code != http.StatusNoContent {
		t.Fatalf("replayed callback answered %d; want 2xx", code)
	}
	if again := e.job(a.ID); again.UpdatedAt != done.UpdatedAt || e.charges(a.ID) != 1 {
		t.Fatalf("the replay changed the job or its charges")
	}

	// b is cancelled; its completion callback then changes nothing.
	if _, err := e.life.Cancel(e.ctx, e.job(b.ID)); err != nil {
		t.Fatal(err)
	}
	outB := e.files.Put("/out/b.png", providertest.File{ContentType: "image/png", Data: pngBytes})
	rep.Set(pb.ID, "succeeded", "", []string{outB}, "")
	if code := rep.Callback(t, pb.ID); code != http.StatusNoContent {
		t.Fatalf("callback for a cancelled job answered %d; want 2xx", code)
	}
	e.drain()
	if got := e.job(b.ID); got.Status != job.Cancelled || e.charges(b.ID) != 0 || len(got.Outputs) != 0 {
		t.Fatalf("cancelled job is %s with %d charges, outputs %v", got.Status, e.charges(b.ID), got.Outputs)
	}
	e.audit()
}

// TestReplicateCallbacksThroughTheLambdaAdapter: Replicate's callbacks,
// signed as Standard Webhooks says ("webhook-signature: v1,<base64>", here
// with a second, rotated-out signature beside it) and received through API
// Gateway's event and the Lambda adapter as in AWS, are accepted: the
// start callback shows the job's progress and the completion callback
// completes it, with no read of the prediction (no polling).
func TestReplicateCallbacksThroughTheLambdaAdapter(t *testing.T) {
	e := newEnv(t, replicateRoutes)
	j := e.create(imageEndpoint, `{"prompt": "a red fox", "width": 64, "height": 64}`)
	if got := e.steps(j.ID, 1); got.Status != job.Scheduled {
		t.Fatalf("after submission the job is %s; want scheduled", got.Status)
	}
	p := e.rep.Only(t)
	reads := e.rep.Reads()

	e.rep.Set(p.ID, "processing", "loading\n 40%|####      | 20/50\n", nil, "")
	url, body, h := e.rep.Webhook(p.ID, time.Now())
	rotated := "v1," + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 32))
	h.Set("webhook-signature", rotated+" "+h.Get("webhook-signature"))
	if code := providertest.Send(t, url, body, h); code != http.StatusNoContent {
		t.Fatalf("the start callback answered %d; want 204\n%s", code, e.logs.String())
	}
	if got := e.job(j.ID); got.Status != job.Sampling || got.Progress == nil || *got.Progress != 0.4 {
		t.Fatalf("after the start callback the job is %s with progress %v; want sampling 0.4", got.Status, got.Progress)
	}

	out := e.files.Put("/out/fox.png", providertest.File{ContentType: "image/png", Data: pngBytes})
	e.rep.Set(p.ID, "succeeded", "done", []string{out}, "")
	if code := e.rep.Callback(t, p.ID); code != http.StatusNoContent {
		t.Fatalf("the completion callback answered %d; want 204\n%s", code, e.logs.String())
	}
	if done := e.steps(j.ID, 3); done.Status != job.Completed {
		t.Fatalf("the job is %s; want completed\n%s", done.Status, e.logs.String())
	}
	if n := e.rep.Reads() - reads; n != 0 {
		t.Errorf("the prediction was read %d times after submission; want none: the callbacks carry it", n)
	}
	e.audit()
}
