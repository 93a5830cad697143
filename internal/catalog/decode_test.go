package catalog_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"genjobs/internal/catalog"
)

func TestEndpoints(t *testing.T) {
	c := newCatalog(t)
	want := []string{
		"/generate/enhance/vendor-a/standard-enhance",
		"/generate/video/vendor-b/model-b-fast",
		"/generate/video/vendor-c/model-c",
		"/generate/video/vendor-d/model-d-flash-1.1",
		"/generate/image/vendor-b/model-e-4",
		"/generate/video/vendor-f/model-f-2.2",
		"/generate/3d/vendor-g/model-g-3.1-rapid",
	}
	got := c.Endpoints()
	if len(got) != len(want) {
		t.Fatalf("%d endpoints, want %d", len(got), len(want))
	}
	ids := map[string]bool{}
	for i, e := range got {
		if e.Path() != want[i] {
			t.Errorf("endpoint %d: %s, want %s", i, e.Path(), want[i])
		}
		found, ok := c.Lookup(e.Kind, e.Vendor, e.Model)
		if !ok || found != e {
			t.Errorf("Lookup(%s, %s, %s) = %v, %v", e.Kind, e.Vendor, e.Model, found, ok)
		}
		if e.Tag == "" || e.Summary == "" || e.Description == "" || e.OperationID == "" {
			t.Errorf("%s: empty tag, summary, description or operation id", e.Model)
		}
		if ids[e.OperationID] {
			t.Errorf("%s: operation id %s used twice", e.Model, e.OperationID)
		}
		ids[e.OperationID] = true
	}
	for _, miss := range [][3]string{
		{"video", "vendor-b", "standard-enhance"},
		{"enhance", "vendor-a", "Standard-Enhance"},
		{"", "", ""},
	} {
		if _, ok := c.Lookup(miss[0], miss[1], miss[2]); ok {
			t.Errorf("Lookup%v found an endpoint", miss)
		}
	}
	if got[0].Tag != "Image Enhance" || got[1].Tag != "Video" || got[4].Tag != "Image" || got[6].Tag != "3D" {
		t.Errorf("tags: %s %s %s %s", got[0].Tag, got[1].Tag, got[4].Tag, got[6].Tag)
	}
}

func TestDecodeMinimalFillsDefaults(t *testing.T) {
	want := map[string]string{
		"standard-enhance":  `{"crop_to_fill":false,"denoise":0.5,"face_enhancement":false,"face_enhancement_creativity":0.5,"face_enhancement_strength":0.5,"fix_compression":0.5,"height":768,"image_scaling_factor":1,"image_url":"https://example.com/a.png","model":"Standard V2","output_format":"jpg","prompt":"","seed":1337,"sharpen":0.5,"strength":0.5,"subject_detection":"All","upscaling_activated":false,"width":1024}`,
		"model-b-fast":      `{"aspect_ratio":"16:9","duration":5,"expand_prompt":false,"prompt":"a cat","resolution":"720p","upscale":false}`,
		"model-c":           `{"aspect_ratio":"1280:720","duration":5,"prompt":"a cat"}`,
		"model-d-flash-1.1": `{"aspect_ratio":"16:9","duration":5,"prompt":"a cat"}`,
		"model-e-4":         `{"height":1024,"prompt":"a cat","seed":1337,"width":1024}`,
		"model-f-2.2":       `{"aspect_ratio":"16:9","duration":5,"height":720,"prompt":"a cat","width":1280}`,
		"model-g-3.1-rapid": `{"image_urls":[],"mode":"text","prompt":""}`,
	}
	c := newCatalog(t)
	for _, e := range c.Endpoints() {
		t.Run(e.Model, func(t *testing.T) {
			req := accept(t, e, edit(minimal[e.Model]), beforeSunset)
			if got := string(req.JSON()); got != want[e.Model] {
				t.Errorf("JSON()\n got %s\nwant %s", got, want[e.Model])
			}
			if len(req.Deprecations) != 0 {
				t.Errorf("Deprecations = %v", req.Deprecations)
			}
			if _, ok := req.Params["width"]; ok {
				if _, isNumber := req.Params["width"].(json.Number); !isNumber {
					t.Errorf("width is %T, want json.Number", req.Params["width"])
				}
			}
		})
	}
}

// full bodies give every field a value other than its default; the stored
// JSON is the body itself, canonical.
var full = map[string]string{
	"standard-enhance":  `{"crop_to_fill":true,"denoise":0.1,"face_enhancement":true,"face_enhancement_creativity":0.2,"face_enhancement_strength":0.3,"fix_compression":0.4,"height":4000,"image_scaling_factor":2.5,"image_url":"data:image/png;base64,iVBORw0KGgo=","model":"Upscale High Fidelity V3","output_format":"webp","prompt":"sharper","seed":-42,"sharpen":0.6,"strength":0.01,"subject_detection":"Foreground","upscaling_activated":true,"width":6000}`,
	"model-b-fast":      `{"aspect_ratio":"21:9","duration":15,"end_image":"https://example.com/end.webp","expand_prompt":true,"prompt":"a cat","reference_audios":["https://example.com/a.mp3","data:audio/mpeg;base64,SUQz"],"reference_images":["https://example.com/1.png","https://example.com/2.png"],"reference_videos":["data:video/mp4;base64,AAAAIGZ0eXA="],"resolution":"480p","seed":9007199254740991,"start_image":"http://127.0.0.1:3000/assets/abc","upscale":true}`,
	"model-c":           `{"aspect_ratio":"672:1584","duration":10,"prompt":"a cat","seed":0,"start_image":"https://example.com/s.jpg"}`,
	"model-d-flash-1.1": `{"aspect_ratio":"9:16","duration":3,"prompt":"a cat","reference_images":["https://example.com/1.png"],"reference_videos":["https://example.com/v.webm"],"seed":7,"start_image":"https://example.com/s.jpg"}`,
	"model-e-4":         `{"height":64,"prompt":"a sign that says hello","seed":1,"style_images":["https://example.com/s1.png","data:image/webp;base64,UklGRg=="],"width":4096}`,
	"model-f-2.2":       `{"aspect_ratio":"9:16","duration":2,"height":1280,"prompt":"a cat","seed":-9007199254740991,"start_image":"https://example.com/s.jpg","width":720}`,
	"model-g-3.1-rapid": `{"image_urls":["https://example.com/1.png","https://example.com/2.png"],"mode":"image","prompt":"a chair"}`,
}

func TestDecodeFull(t *testing.T) {
	c := newCatalog(t)
	for _, e := range c.Endpoints() {
		t.Run(e.Model, func(t *testing.T) {
			req := accept(t, e, []byte(full[e.Model]), beforeSunset)
			if got := string(req.JSON()); got != full[e.Model] {
				t.Errorf("JSON()\n got %s\nwant %s", got, full[e.Model])
			}
		})
	}
}

func TestBodiesThatAreNotOneObject(t *testing.T) {
	e := endpoint(t, newCatalog(t), "model-g-3.1-rapid")
	for _, tc := range []struct{ body, want string }{
		{``, "the body must be a JSON object"},
		{"  \n\t", "the body must be a JSON object"},
		{`[]`, "the body must be a JSON object"},
		{`[{}]`, "the body must be a JSON object"},
		{`"x"`, "the body must be a JSON object"},
		{`null`, "the body must be a JSON object"},
		{`1`, "the body must be a JSON object"},
		{`true`, "the body must be a JSON object"},
		{`{`, "the body is not valid JSON"},
		{`{"prompt":`, "the body is not valid JSON"},
		{`{"prompt":"a"`, "the body is not valid JSON"},
		{`{"prompt":"a",}`, "the body is not valid JSON"},
		{`{'prompt':'a'}`, "the body is not valid JSON"},
		{`{"prompt":NaN}`, "the body is not valid JSON"},
		{"\xef\xbb\xbf{}", "the body is not valid JSON"},
		{`}`, "the body is not valid JSON"},
		{`{}{}`, "the body must be a single JSON object"},
		{`{} {}`, "the body must be a single JSON object"},
		{`{}x`, "the body must be a single JSON object"},
		{`{} null`, "the body must be a single JSON object"},
		{`{"prompt":"a","prompt":"b"}`, "prompt was given more than once"},
		{`{"a b":1,"a b":2}`, `"a b" was given more than once`},
	} {
		if got := reason(t, e, []byte(tc.body), beforeSunset); got != tc.want {
			t.Errorf("body %q: got %q, want %q", tc.body, got, tc.want)
		}
	}
	accept(t, e, []byte(" {}\n"), beforeSunset)
}

func TestBodySize(t *testing.T) {
	e := endpoint(t, newCatalog(t), "model-b-fast")
	body := func(n int) []byte {
		const head, tail = `{"prompt":"`, `"}`
		return []byte(head + strings.Repeat("x", n-len(head)-len(tail)) + tail)
	}
	if got := len(body(catalog.MaxBodyBytes)); got != 65536 {
		t.Fatalf("MaxBodyBytes = %d", got)
	}
	accept(t, e, body(catalog.MaxBodyBytes), beforeSunset)
	if got := reason(t, e, body(catalog.MaxBodyBytes+1), beforeSunset); got != "the body is larger than 65536 bytes" {
		t.Errorf("got %q", got)
	}
	// Size comes first: an oversize body is not even parsed.
	if got := reason(t, e, []byte("["+strings.Repeat(" ", catalog.MaxBodyBytes)), beforeSunset); got != "the body is larger than 65536 bytes" {
		t.Errorf("got %q", got)
	}
}

func TestNumbersAreCanonical(t *testing.T) {
	c := newCatalog(t)
	enhance := endpoint(t, c, "standard-enhance")
	for _, tc := range []struct {
		field, in, out string
	}{
		{"width", "1e3", "1000"},
		{"width", "1000.000", "1000"},
		{"width", "10E+2", "1000"},
		{"seed", "-0", "0"},
		{"seed", "9.007199254740991e15", "9007199254740991"},
		{"seed", "12345678901234e-4", "1234567890.1234"}, // refused below
		{"sharpen", "0.50", "0.5"},
		{"sharpen", "5e-1", "0.5"},
		{"sharpen", "1e-999999999", "0"},
		{"sharpen", "0.1000000000000000000000000001", "0.1"},
		{"image_scaling_factor", "32", "32"},
	} {
		body := edit(minimal["standard-enhance"], tc.field, json.Number(tc.in))
		if tc.in == "12345678901234e-4" {
			if got := reason(t, enhance, body, beforeSunset); got != "seed must be an integer" {
				t.Errorf("seed %s: %q", tc.in, got)
			}
			continue
		}
		req := accept(t, enhance, body, beforeSunset)
		if got := req.Params[tc.field]; got != json.Number(tc.out) {
			t.Errorf("%s %s stored as %v, want %s", tc.field, tc.in, got, tc.out)
		}
	}
}

func TestOutputPixels(t *testing.T) {
	e := endpoint(t, newCatalog(t), "standard-enhance")
	base := minimal["standard-enhance"]
	accept(t, e, edit(base, "width", 22000, "height", 22000), beforeSunset)
	accept(t, e, edit(base, "width", 32000, "height", 15125), beforeSunset) // exactly 484000000
	for _, tc := range []struct {
		w, h int
		want string
	}{
		{22000, 22001, "width x height is 484022000 pixels; at most 484000000 (22000 x 22000) are allowed"},
		{32000, 32000, "width x height is 1024000000 pixels; at most 484000000 (22000 x 22000) are allowed"},
		{32000, 15126, "width x height is 484032000 pixels; at most 484000000 (22000 x 22000) are allowed"},
	} {
		if got := reason(t, e, edit(base, "width", tc.w, "height", tc.h), beforeSunset); got != tc.want {
			t.Errorf("%dx%d: got %q", tc.w, tc.h, got)
		}
	}
	// Field rules come first: a bound broken hides the pixel count.
	if got := reason(t, e, edit(base, "width", 32001, "height", 32000), beforeSunset); got != "width must be between 1 and 32000" {
		t.Errorf("got %q", got)
	}
}

func TestWebPOutputSize(t *testing.T) {
	e := endpoint(t, newCatalog(t), "standard-enhance")
	base := minimal["standard-enhance"]
	accept(t, e, edit(base, "width", 8192, "height", 8192, "output_format", "webp"), beforeSunset)
	accept(t, e, edit(base, "width", 16383, "height", 4096, "output_format", "webp"), beforeSunset)
	accept(t, e, edit(base, "width", 20000, "height", 20000, "output_format", "png"), beforeSunset)
	for _, tc := range []struct{ w, h int }{{16384, 100}, {100, 16384}, {8193, 8192}} {
		want := fmt.Sprintf("output_format webp allows at most 16383 pixels a side and 67108864 (8192 x 8192) in all; use png or jpg for %d x %d", tc.w, tc.h)
		if got := reason(t, e, edit(base, "width", tc.w, "height", tc.h, "output_format", "webp"), beforeSunset); got != want {
			t.Errorf("%dx%d webp: got %q", tc.w, tc.h, got)
		}
	}
}

func TestModelFAspectRatio(t *testing.T) {
	e := endpoint(t, newCatalog(t), "model-f-2.2")
	base := minimal["model-f-2.2"]
	for _, tc := range []struct {
		w, h  int
		ratio string
		want  string
	}{
		{1280, 720, "16:9", ""},
		{1024, 576, "16:9", ""},
		{1280, 734, "16:9", ""}, // 1.9% off
		{1280, 736, "16:9", "width:height 1280:736 does not match aspect_ratio 16:9 within 2%"},
		{1305, 720, "16:9", ""}, // 1.95% over: 1305*9-720*16 = 225, 225*50 <= 11520
		{1306, 720, "16:9", "width:height 1306:720 does not match aspect_ratio 16:9 within 2%"}, // 2.03%
		{720, 1280, "9:16", ""},
		{720, 1280, "16:9", "width:height 720:1280 does not match aspect_ratio 16:9 within 2%"},
		{1280, 720, "9:16", "width:height 1280:720 does not match aspect_ratio 9:16 within 2%"},
		{1024, 1024, "", ""}, // no aspect_ratio given: width and height decide
	} {
		body := edit(base, "width", tc.w, "height", tc.h)
		if tc.ratio != "" {
			body = edit(base, "width", tc.w, "height", tc.h, "aspect_ratio", tc.ratio)
		}
		if tc.want == "" {
			accept(t, e, body, beforeSunset)
			continue
		}
		if got := reason(t, e, body, beforeSunset); got != tc.want {
			t.Errorf("%dx%d %s: got %q", tc.w, tc.h, tc.ratio, got)
		}
	}
	body := edit(base, "width", 720, "height", 1280, "aspectRatio", "16:9")
	if got := reason(t, e, body, beforeSunset); got != "width:height 720:1280 does not match aspectRatio 16:9 within 2%" {
		t.Errorf("alias: got %q", got)
	}

	// Without aspect_ratio, its default follows width:height, so what is
	// stored never contradicts the rule above.
	for _, tc := range []struct {
		w, h int
		want any
	}{
		{1280, 720, "16:9"},
		{1305, 720, "16:9"},
		{720, 1280, "9:16"},
		{1024, 1024, nil},
		{1306, 720, nil},
	} {
		req := accept(t, e, edit(base, "width", tc.w, "height", tc.h), beforeSunset)
		if got := req.Params["aspect_ratio"]; got != tc.want {
			t.Errorf("%dx%d: aspect_ratio %v, want %v", tc.w, tc.h, got, tc.want)
		}
	}
}

func TestModelGMode(t *testing.T) {
	e := endpoint(t, newCatalog(t), "model-g-3.1-rapid")
	img := "https://example.com/a.png"
	for _, tc := range []struct {
		body, want, mode string
	}{
		{`{}`, "", "text"},
		{`{"image_urls":[]}`, "", "text"},
		{`{"prompt":"a chair"}`, "", "text"},
		{`{"image_urls":["` + img + `"]}`, "", "image"},
		{`{"mode":"text","image_urls":[]}`, "", "text"},
		{`{"mode":"image","image_urls":["` + img + `"]}`, "", "image"},
		{`{"mode":"image"}`, "mode image needs at least one entry in image_urls", ""},
		{`{"mode":"image","image_urls":[]}`, "mode image needs at least one entry in image_urls", ""},
		{`{"mode":"text","image_urls":["` + img + `"]}`, "mode text takes no image_urls; omit it or pass an empty array", ""},
		{`{"mode":"3d"}`, "mode must be one of image, text", ""},
		{`{"mode":1}`, "mode must be a string", ""},
		{`{"mode":null}`, "mode must be a string", ""},
	} {
		if tc.want != "" {
			if got := reason(t, e, []byte(tc.body), beforeSunset); got != tc.want {
				t.Errorf("%s: got %q, want %q", tc.body, got, tc.want)
			}
			continue
		}
		req := accept(t, e, []byte(tc.body), beforeSunset)
		if req.Params["mode"] != tc.mode {
			t.Errorf("%s: mode %v, want %s", tc.body, req.Params["mode"], tc.mode)
		}
	}
}

// TestOneMessage: a body breaking many rules gets the same answer on every
// call and from a fresh catalog, the first by field name then kind of rule.
func TestOneMessage(t *testing.T) {
	for _, tc := range []struct {
		model, body, want string
	}{
		{"standard-enhance", `{"zeta":1,"width":0,"height":99999,"model":"x","colour":1,"image_url":5,"seed":"s","strength":9}`,
			"colour is not a known field"},
		{"standard-enhance", `{"width":0,"height":99999,"model":"x","image_url":5,"seed":"s","strength":9}`,
			"height must be between 1 and 32000"},
		{"standard-enhance", `{"width":0.5,"model":"x","seed":"s"}`,
			"height is required"},
		{"standard-enhance", `{"width":1,"height":1,"model":"CGI","image_url":"ftp://` + strings.Repeat("a", 1100) + `"}`,
			"image_url must be at most 1024 characters"},
		{"model-b-fast", `{"reference_images":["ftp://a","https://example.com/a","ftp://b",5,"x","y","z","w","v","u"],"prompt":""}`,
			"prompt must not be empty"},
		{"model-b-fast", `{"prompt":"p","reference_images":["https://example.com/a","ftp://a","https://example.com/a","https://example.com/a","https://example.com/a","https://example.com/a","https://example.com/a","https://example.com/a",5]}`,
			"reference_images[1] must be an http(s) URL or a base64 data URI of a png, jpeg or webp image"},
		{"model-b-fast", `{"prompt":"p","reference_images":["a","b","c","d","e","f","g","h","i","j"]}`,
			"reference_images has 10 items; at most 9 are allowed"},
		{"model-b-fast", `{"prompt":"p","referenceImages":["a","b","c","d","e","f","g","h","i",5],"duration":16}`,
			"duration must be between 4 and 15"},
		{"model-b-fast", `{"prompt":"p","referenceImages":["a","b","c","d","e","f","g","h","i",5],"duration":15}`,
			"referenceImages has 10 items; at most 9 are allowed"},
		{"model-e-4", `{"Prompt":"x","WIDTH":1,"width":1,"height":1}`,
			"Prompt is not a known field"},
	} {
		var first string
		for i := 0; i < 50; i++ {
			e := endpoint(t, newCatalogOnce(t, i), tc.model)
			got := reason(t, e, []byte(tc.body), beforeSunset)
			if i == 0 {
				first = got
			} else if got != first {
				t.Fatalf("%s: decode %d said %q, decode 0 %q", tc.body, i, got, first)
			}
		}
		if first != tc.want {
			t.Errorf("%s\n got %q\nwant %q", clip([]byte(tc.body)), first, tc.want)
		}
	}
}

var (
	sharedCatalog *catalog.Catalog
	sharedOnce    sync.Once
)

// newCatalogOnce gives a fresh catalog on the first and last of 50 calls and a
// shared one in between.
func newCatalogOnce(t *testing.T, i int) *catalog.Catalog {
	if i == 0 || i == 49 {
		return newCatalog(t)
	}
	sharedOnce.Do(func() { sharedCatalog = newCatalog(t) })
	return sharedCatalog
}

func TestUnknownFieldNamesAreQuotedWhenOdd(t *testing.T) {
	e := endpoint(t, newCatalog(t), "model-g-3.1-rapid")
	long := strings.Repeat("k", 70)
	for _, tc := range []struct{ key, want string }{
		{"colour", "colour is not a known field"},
		{"", `"" is not a known field`},
		{"a b", `"a b" is not a known field`},
		{"new\nline", `"new\nline" is not a known field`},
		{"\u00e9t\u00e9", `"été" is not a known field`},
		{long, `"` + strings.Repeat("k", 64) + `…" is not a known field`},
	} {
		if got := reason(t, e, edit(nil, tc.key, 1), beforeSunset); got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.key, got, tc.want)
		}
	}
}

func TestDecodeConcurrently(t *testing.T) {
	c := newCatalog(t)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, e := range c.Endpoints() {
				for j := 0; j < 20; j++ {
					if _, err := e.Decode([]byte(full[e.Model]), beforeSunset); err != nil {
						t.Error(err)
					}
					if _, err := e.Decode([]byte(`{"colour":1,"prompt":5}`), beforeSunset); err == nil {
						t.Error("accepted a bad body")
					}
				}
			}
		}()
	}
	wg.Wait()
}

func TestRequestDoesNotShareDefaults(t *testing.T) {
	e := endpoint(t, newCatalog(t), "model-g-3.1-rapid")
	a := accept(t, e, []byte(`{}`), beforeSunset)
	a.Params["image_urls"] = append(a.Params["image_urls"].([]any), "x")
	b := accept(t, e, []byte(`{}`), beforeSunset)
	if got := string(b.JSON()); got != `{"image_urls":[],"mode":"text","prompt":""}` {
		t.Errorf("second decode sees the first one's change: %s", got)
	}
}

func TestJSONDoesNotEscapeHTML(t *testing.T) {
	e := endpoint(t, newCatalog(t), "model-c")
	req := accept(t, e, []byte(`{"prompt":"<b>cats & dogs</b>"}`), beforeSunset)
	if !strings.Contains(string(req.JSON()), `"<b>cats & dogs</b>"`) {
		t.Errorf("JSON() = %s", req.JSON())
	}
}

func BenchmarkDecode(b *testing.B) {
	c := newCatalog(b)
	for _, model := range []string{"standard-enhance", "model-b-fast"} {
		e := endpoint(b, c, model)
		body := []byte(full[model])
		b.Run(model, func(b *testing.B) {
			for b.Loop() {
				if _, err := e.Decode(body, beforeSunset); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkNew(b *testing.B) {
	for b.Loop() {
		if _, err := catalog.New(); err != nil {
			b.Fatal(err)
		}
	}
}
