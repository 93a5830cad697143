package devstack_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/image/webp"

	"genjobs/infra/local/devstack"
	"genjobs/internal/store/ledgerdb"
)

// TestEveryModelRunsToCompletedThroughTheLocalStack plays what `make run`
// plays: the API routed from template.yaml, the worker on the jobs queue and
// the sweeper on its schedule, each built with the template's Environment.
// One job per model reaches completed, and its output downloads and decodes.
func TestEveryModelRunsToCompletedThroughTheLocalStack(t *testing.T) {
	_, srv, st, token := servedStack(t, true)

	call := func(method, path, contentType string, body []byte) (int, []byte) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}

	// An input image, uploaded as an asset of the demo workspace.
	src := image.NewRGBA(image.Rect(0, 0, 96, 64))
	for y := 0; y < 64; y++ {
		for x := 0; x < 96; x++ {
			src.Set(x, y, color.RGBA{uint8(x * 2), uint8(y * 3), 90, 255})
		}
	}
	var pngBytes bytes.Buffer
	_ = png.Encode(&pngBytes, src)
	status, body := call("POST", "/assets", "image/png", pngBytes.Bytes())
	if status != 201 {
		t.Fatalf("POST /assets: %d %s", status, body)
	}
	var up struct {
		AssetURL string `json:"asset_url"`
	}
	_ = json.Unmarshal(body, &up)
	// Locally the API's address is BASE_URL, http://127.0.0.1:3000 in this stack.
	asset := up.AssetURL

	cases := []struct {
		path, body string
		check      func(t *testing.T, contentType string, b []byte)
	}{
		{"/generate/enhance/vendor-a/standard-enhance",
			`{"width":192,"height":128,"image_url":"` + asset + `","model":"Standard V2","output_format":"png"}`,
			decodesTo(192, 128, "image/png")},
		{"/generate/enhance/vendor-a/standard-enhance",
			`{"width":150,"height":100,"image_url":"` + asset + `","model":"Standard V2","output_format":"webp","crop_to_fill":true}`,
			decodesTo(150, 100, "image/webp")},
		{"/generate/image/vendor-b/model-e-4", `{"prompt":"a lighthouse","width":128,"height":96,"seed":7}`,
			decodesTo(128, 96, "image/png")},
		{"/generate/video/vendor-b/model-b-fast", `{"prompt":"waves","duration":4,"resolution":"480p","start_image":"` + asset + `"}`, animated},
		{"/generate/video/vendor-c/model-c", `{"prompt":"waves","duration":2}`, animated},
		{"/generate/video/vendor-d/model-d-flash-1.1", `{"prompt":"waves","duration":3,"aspect_ratio":"9:16"}`, animated},
		{"/generate/video/vendor-f/model-f-2.2", `{"prompt":"waves","width":256,"height":144,"duration":2}`, animated},
		{"/generate/3d/vendor-g/model-g-3.1-rapid", `{"prompt":"a teapot"}`, glb},
	}
	ids := make([]string, len(cases))
	for i, c := range cases {
		status, body := call("POST", c.path, "application/json", []byte(c.body))
		if status != 200 {
			t.Fatalf("POST %s: %d %s", c.path, status, body)
		}
		var rec struct {
			ID string `json:"job_id"`
		}
		_ = json.Unmarshal(body, &rec)
		ids[i] = rec.ID
	}
	for i, c := range cases {
		t.Run(c.path[strings.LastIndex(c.path, "/")+1:], func(t *testing.T) {
			var rec struct {
				Status string `json:"status"`
				Result *struct {
					URLs []string `json:"urls"`
				} `json:"result"`
				Error *struct{ Code, Message string } `json:"error"`
			}
			deadline := time.Now().Add(2 * time.Minute)
			for {
				_, body := call("GET", "/jobs/"+ids[i], "", nil)
				rec.Result, rec.Error = nil, nil
				if err := json.Unmarshal(body, &rec); err != nil {
					t.Fatal(err)
				}
				if rec.Status == "completed" || rec.Status == "failed" || rec.Status == "cancelled" || time.Now().After(deadline) {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			if rec.Status != "completed" || rec.Result == nil || len(rec.Result.URLs) != 1 {
				t.Fatalf("job %s: %s, error %+v, result %+v", ids[i], rec.Status, rec.Error, rec.Result)
			}
			resp, err := http.Get(rec.Result.URLs[0])
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 {
				t.Fatalf("download: %d", resp.StatusCode)
			}
			c.check(t, resp.Header.Get("Content-Type"), b)
		})
	}

	// Each job was charged its price once: 0.02 + 0.02 (enhance up to 16 MP)
	// + 0.03 (model-e-4) + 4 x 0.1075 (model-b-fast, 480p) + 2 x 0.05
	// (model-c) + 3 x 0.07 (model-d) + 2 x 0.02 (model-f) + 0.10 (model-g).
	const spent = "0.950000"
	audit, err := ledgerdb.New(st).AuditLedger(context.Background(), devstack.DemoWorkspace)
	if err != nil {
		t.Fatal(err)
	}
	if audit.Stored.Spent.String() != spent || audit.Stored.Reserved != 0 || len(audit.Differences) > 0 {
		t.Errorf("demo balance %+v, ledger differences %v; want %s spent, nothing reserved", audit.Stored, audit.Differences, spent)
	}
	status, body = call("GET", "/usage?days=1", "", nil)
	var usage struct {
		Total   string `json:"total_usd"`
		ByModel []any  `json:"by_model"`
	}
	if err := json.Unmarshal(body, &usage); status != 200 || err != nil || usage.Total != spent || len(usage.ByModel) != 7 {
		t.Errorf("GET /usage?days=1: %d %s; want %s over the 7 models", status, body, spent)
	}
}

func decodesTo(w, h int, contentType string) func(*testing.T, string, []byte) {
	return func(t *testing.T, ct string, b []byte) {
		var img image.Image
		var err error
		switch contentType {
		case "image/png":
			img, err = png.Decode(bytes.NewReader(b))
		case "image/jpeg":
			img, err = jpeg.Decode(bytes.NewReader(b))
		case "image/webp":
			img, err = webp.Decode(bytes.NewReader(b))
		}
		if err != nil || ct != contentType {
			t.Fatalf("output (%s) does not decode as %s: %v", ct, contentType, err)
		}
		if got := img.Bounds().Size(); got.X != w || got.Y != h {
			t.Errorf("output is %dx%d; want %dx%d", got.X, got.Y, w, h)
		}
	}
}

func animated(t *testing.T, ct string, b []byte) {
	g, err := gif.DecodeAll(bytes.NewReader(b))
	if err != nil || ct != "image/gif" {
		t.Fatalf("output (%s) does not decode as a GIF: %v", ct, err)
	}
	if len(g.Image) < 2 {
		t.Errorf("the video has %d frames", len(g.Image))
	}
}

// glb checks a binary glTF's container: magic, version 2, the declared
// length, and a JSON chunk that parses with asset.version 2.0 (the engine's
// own tests run Khronos' validator over its output).
func glb(t *testing.T, ct string, b []byte) {
	if ct != "model/gltf-binary" || len(b) < 20 || string(b[:4]) != "glTF" ||
		binary.LittleEndian.Uint32(b[4:]) != 2 || int(binary.LittleEndian.Uint32(b[8:])) != len(b) {
		t.Fatalf("output (%s, %d bytes) is not a binary glTF 2.0", ct, len(b))
	}
	n := binary.LittleEndian.Uint32(b[12:])
	if string(b[16:20]) != "JSON" || int(20+n) > len(b) {
		t.Fatal("the first chunk is not JSON")
	}
	var doc struct {
		Asset struct {
			Version string `json:"version"`
		} `json:"asset"`
		Meshes []any `json:"meshes"`
	}
	if err := json.Unmarshal(b[20:20+n], &doc); err != nil || doc.Asset.Version != "2.0" || len(doc.Meshes) == 0 {
		t.Errorf("glTF JSON: %v, %+v", err, doc)
	}
}
