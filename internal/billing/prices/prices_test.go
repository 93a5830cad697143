package prices_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"genjobs/internal/billing"
	"genjobs/internal/billing/prices"
	"genjobs/internal/catalog"
)

const (
	enhance = "/generate/enhance/vendor-a/standard-enhance"
	modelB  = "/generate/video/vendor-b/model-b-fast"
	modelC  = "/generate/video/vendor-c/model-c"
	modelD  = "/generate/video/vendor-d/model-d-flash-1.1"
	modelE  = "/generate/image/vendor-b/model-e-4"
	modelF  = "/generate/video/vendor-f/model-f-2.2"
	modelG  = "/generate/3d/vendor-g/model-g-3.1-rapid"
)

var newCatalog = sync.OnceValues(catalog.New)

var now = time.Date(2026, time.March, 1, 0, 0, 0, 0, time.UTC)

// params decodes body through the catalog, so a test prices exactly what the
// API passes: defaults filled, numbers json.Number.
func params(t *testing.T, path, body string) map[string]any {
	t.Helper()
	c, err := newCatalog()
	if err != nil {
		t.Fatal(err)
	}
	e, ok := c.ByPath(path)
	if !ok {
		t.Fatalf("no endpoint %s", path)
	}
	req, err := e.Decode([]byte(body), now)
	if err != nil {
		t.Fatalf("Decode(%s): %v", body, err)
	}
	return req.Params
}

func load(t *testing.T, override string) *prices.List {
	t.Helper()
	p, err := prices.Load([]byte(override))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func price(t *testing.T, p *prices.List, path, body string) billing.Micros {
	t.Helper()
	m, err := p.Price(path, params(t, path, body))
	if err != nil {
		t.Fatalf("Price(%s, %s): %v", path, body, err)
	}
	return m
}

// TestModelBFast covers the price table (docs/api.md, "Prices") at every edge of duration, with and
// without upscale: rate per second by resolution and video reference, +0.05
// per second for upscale.
func TestModelBFast(t *testing.T) {
	p := load(t, "")
	for _, tc := range []struct {
		resolution string
		videoRef   bool
		perSecond  billing.Micros
	}{
		{"480p", true, 64_500},
		{"480p", false, 107_500},
		{"720p", true, 145_200},
		{"720p", false, 241_900},
	} {
		for _, seconds := range []int{4, 5, 15} {
			for _, upscale := range []bool{false, true} {
				refs := `[]`
				if tc.videoRef {
					refs = `["https://example.com/ref.mp4"]`
				}
				body := fmt.Sprintf(`{"prompt":"x","resolution":%q,"duration":%d,"reference_videos":%s,"upscale":%t}`,
					tc.resolution, seconds, refs, upscale)
				want := tc.perSecond
				if upscale {
					want += 50_000
				}
				want *= billing.Micros(seconds)
				if got := price(t, p, modelB, body); got != want {
					t.Errorf("%s: %s; want %s", body, got, want)
				}
			}
		}
	}
}

func TestPrices(t *testing.T) {
	p := load(t, "")
	for _, tc := range []struct {
		name, path, body string
		want             billing.Micros
	}{
		{"model-b-fast defaults: 720p, 5 s, no reference", modelB, `{"prompt":"x"}`, 1_209_500},
		{"model-b-fast 720p, 5 s", modelB, `{"prompt":"x","resolution":"720p","duration":5,"upscale":false}`, 1_209_500},
		{"model-b-fast 480p with video reference, 15 s, upscale", modelB,
			`{"prompt":"x","resolution":"480p","duration":15,"reference_videos":["https://example.com/a.mp4"],"upscale":true}`, 1_717_500},
		{"model-b-fast reference images are no video reference", modelB,
			`{"prompt":"x","reference_images":["https://example.com/a.png"]}`, 1_209_500},
		{"model-b-fast deprecated alias referenceVideos", modelB,
			`{"prompt":"x","referenceVideos":["https://example.com/a.mp4"]}`, 726_000},

		{"standard-enhance 16,000,000 px", enhance, enhanceBody(4000, 4000), 20_000},
		{"standard-enhance 16,000,001 px", enhance, enhanceBody(641, 24961), 30_000},
		{"standard-enhance 32,000,000 px", enhance, enhanceBody(8000, 4000), 30_000},
		{"standard-enhance 484,000,000 px", enhance, enhanceBody(22000, 22000), 320_000},
		{"standard-enhance 1 px", enhance, enhanceBody(1, 1), 20_000},
		{"standard-enhance upscaling does not change the output size", enhance,
			`{"image_url":"https://example.com/a.png","model":"CGI","width":4000,"height":4000,"upscaling_activated":true,"image_scaling_factor":8}`, 20_000},

		{"model-c default 5 s", modelC, `{"prompt":"x"}`, 250_000},
		{"model-c 10 s", modelC, `{"prompt":"x","duration":10}`, 500_000},
		{"model-d-flash-1.1 default 5 s", modelD, `{"prompt":"x"}`, 350_000},
		{"model-d-flash-1.1 3 s with a video reference", modelD,
			`{"prompt":"x","duration":3,"reference_videos":["https://example.com/a.mp4"]}`, 210_000},
		{"model-e-4 one image", modelE, `{"prompt":"x","width":4096,"height":4096}`, 30_000},
		{"model-f-2.2 default 5 s", modelF, `{"prompt":"x","width":1280,"height":720}`, 100_000},
		{"model-f-2.2 2 s", modelF, `{"prompt":"x","width":1280,"height":720,"duration":2}`, 40_000},
		{"model-g-3.1-rapid empty body", modelG, `{}`, 100_000},
		{"model-g-3.1-rapid image mode", modelG, `{"image_urls":["https://example.com/a.png"]}`, 100_000},
	} {
		if got := price(t, p, tc.path, tc.body); got != tc.want {
			t.Errorf("%s: %s; want %s", tc.name, got, tc.want)
		}
	}
}

func enhanceBody(w, h int) string {
	return fmt.Sprintf(`{"image_url":"https://example.com/a.png","model":"Standard V2","width":%d,"height":%d}`, w, h)
}

// TestEnhanceSteps prices pixel counts no request can reach with sides of at
// most 32000 (32,000,001 is prime to every such pair), straight from params.
func TestEnhanceSteps(t *testing.T) {
	p := load(t, "")
	for _, tc := range []struct {
		width, height string
		want          billing.Micros
	}{
		{"16000000", "1", 20_000},
		{"16000001", "1", 30_000},
		{"32000000", "1", 30_000},
		{"32000001", "1", 40_000},
		{"48000000", "1", 40_000},
		{"48000001", "1", 50_000},
		{"22000", "22000", 320_000},
	} {
		got, err := p.Price(enhance, map[string]any{"width": json.Number(tc.width), "height": json.Number(tc.height)})
		if err != nil || got != tc.want {
			t.Errorf("%s x %s: %s, %v; want %s", tc.width, tc.height, got, err, tc.want)
		}
	}
}

// The default list is read on first use, not by Load: it must read.
func TestDefaultsRead(t *testing.T) {
	if err := load(t, "").Check(); err != nil {
		t.Fatal(err)
	}
}

// TestEveryEndpointPriced keeps a new catalog endpoint from shipping without
// a default price.
func TestEveryEndpointPriced(t *testing.T) {
	c, err := newCatalog()
	if err != nil {
		t.Fatal(err)
	}
	p := load(t, "")
	var want []string
	for _, e := range c.Endpoints() {
		want = append(want, e.Path())
	}
	if got := p.Paths(); strings.Join(got, " ") != strings.Join(slices.Sorted(slices.Values(want)), " ") {
		t.Errorf("Paths() = %v; want the catalog's %v", got, want)
	}
}

func TestPriceRefuses(t *testing.T) {
	p := load(t, "")
	if _, err := p.Price("/generate/video/vendor-z/model-z", map[string]any{}); err == nil {
		t.Error("a path without a price was priced")
	}
	if _, err := p.Price(modelC, map[string]any{"prompt": "x"}); err == nil {
		t.Error("model-c without duration was priced")
	}
	if _, err := p.Price(modelC, map[string]any{"duration": 5}); err == nil {
		t.Error("a duration that is no json.Number was priced")
	}
	// A variant list that misses a value the schema allows is no free job.
	only480 := load(t, `{"`+modelB+`":{"per":"duration","variants":[{"when":{"resolution":"480p"},"usd":"0.1"}]}}`)
	if _, err := only480.Price(modelB, params(t, modelB, `{"prompt":"x"}`)); err == nil || !strings.Contains(err.Error(), "no variant") {
		t.Errorf("720p without a matching variant: %v; want an error", err)
	}
	// An override may hold amounts up to the cap that a quantity pushes past it.
	dear := load(t, `{"`+modelC+`":{"per":"duration","usd":"250000"}}`)
	if m, err := dear.Price(modelC, params(t, modelC, `{"prompt":"x","duration":4}`)); err != nil || m != 1_000_000*billing.USD {
		t.Errorf("4 s at 250000: %s, %v; want the cap itself", m, err)
	}
	if _, err := dear.Price(modelC, params(t, modelC, `{"prompt":"x","duration":5}`)); err == nil || !strings.Contains(err.Error(), "cap") {
		t.Errorf("5 s at 250000: %v; want the cap refused", err)
	}
}

func TestOverride(t *testing.T) {
	for _, empty := range []string{"", " \n", "{}"} {
		p := load(t, empty)
		if got := price(t, p, modelB, `{"prompt":"x"}`); got != 1_209_500 {
			t.Errorf("override %q: model-b-fast %s; want the default 1.2095", empty, got)
		}
	}

	p := load(t, `{
		"/generate/video/vendor-c/model-c": {"note": "launch price", "per": "duration", "usd": 0.08},
		"/generate/image/vendor-b/model-e-4": {"per": "job", "usd": "0.04",
			"extras": [{"when": {"width": 4096.0}, "usd": "0.01"}]}
	}`)
	for _, tc := range []struct {
		path, body string
		want       billing.Micros
	}{
		{modelC, `{"prompt":"x"}`, 400_000},
		{modelE, `{"prompt":"x","width":1024,"height":1024}`, 40_000},
		{modelE, `{"prompt":"x","width":4096,"height":1024}`, 50_000},
		{modelB, `{"prompt":"x"}`, 1_209_500}, // not overridden: the default
	} {
		if got := price(t, p, tc.path, tc.body); got != tc.want {
			t.Errorf("%s %s: %s; want %s", tc.path, tc.body, got, tc.want)
		}
	}
}

func TestOverrideRefused(t *testing.T) {
	entry := func(rule string) string { return `{"` + modelC + `":` + rule + `}` }
	for _, tc := range []struct {
		name, override string
		want           []string // each must appear in the error
	}{
		{"malformed JSON", `{"` + modelC + `": {"per": "duration", "usd": "0.05"`, []string{"price override", "not valid JSON"}},
		{"trailing data", entry(`{"per":"job","usd":"1"}`) + ` {}`, []string{"not valid JSON"}},
		{"not an object", `[]`, []string{"JSON object"}},
		{"null", `null`, []string{"JSON object"}},
		{"unknown path", `{"/generate/video/vendor-z/model-z":{"per":"job","usd":"1"}}`, []string{"/generate/video/vendor-z/model-z", "not the path"}},
		{"amount with 7 decimals", entry(`{"per":"duration","usd":"0.0500001"}`), []string{modelC, "usd", "six decimals"}},
		{"amount in exponent form", entry(`{"per":"duration","usd":5e-2}`), []string{modelC, "usd"}},
		{"negative amount", entry(`{"per":"duration","usd":"-0.05"}`), []string{modelC, "negative"}},
		{"amount above the cap", entry(`{"per":"job","usd":"1000000.000001"}`), []string{modelC, "cap"}},
		{"huge amount", entry(`{"per":"job","usd":"999999999999"}`), []string{modelC, "cap"}},
		{"unknown rule key", entry(`{"per":"duration","usd":"0.05","discount":"0.01"}`), []string{modelC, `unknown key "discount"`}},
		{"unknown key in a variant", entry(`{"per":"duration","variants":[{"wehn":{"duration":5},"usd":"1"}]}`), []string{modelC, "wehn"}},
		{"unknown key in steps", entry(`{"per":"job","usd":"1","steps":{"of":["duration"],"included":0,"every":1,"usd":"1","max":3}}`), []string{modelC, "max"}},
		{"usd missing", entry(`{"per":"duration"}`), []string{modelC, "usd is missing"}},
		{"per missing", entry(`{"usd":"0.05"}`), []string{modelC, "per is missing"}},
		{"per names an unknown field", entry(`{"per":"seconds","usd":"0.05"}`), []string{modelC, `"seconds" is not a field`}},
		{"per names a string field", entry(`{"per":"prompt","usd":"0.05"}`), []string{modelC, `"prompt" is not an integer field`}},
		{"when names an unknown field", `{"` + modelB + `":{"per":"duration","usd":"0.2","extras":[{"when":{"upscaled":true},"usd":"0.05"}]}}`,
			[]string{modelB, "extras[0].when.upscaled", "not a field"}},
		{"when value outside the enum", `{"` + modelB + `":{"per":"duration","variants":[{"when":{"resolution":"1080p"},"usd":"0.3"}]}}`,
			[]string{modelB, "variants[0].when.resolution", `"480p", "720p"`}},
		{"when value of the wrong type", `{"` + modelB + `":{"per":"duration","usd":"0.2","extras":[{"when":{"upscale":"yes"},"usd":"0.05"}]}}`,
			[]string{modelB, "upscale", "not"}},
		{"when with a fraction for an integer", entry(`{"per":"duration","usd":"0.05","extras":[{"when":{"duration":5.5},"usd":"0.01"}]}`),
			[]string{modelC, "when.duration"}},
		{"when with an exponent", entry(`{"per":"duration","usd":"0.05","extras":[{"when":{"duration":1e999999},"usd":"0.01"}]}`),
			[]string{modelC, "exponent"}},
		{"non_empty on a string", entry(`{"per":"duration","usd":"0.05","extras":[{"when":{"prompt":{"non_empty":true}},"usd":"0.01"}]}`),
			[]string{modelC, "non_empty tests an array"}},
		{"unknown test", `{"` + modelB + `":{"per":"duration","usd":"0.2","extras":[{"when":{"reference_videos":{"empty":true}},"usd":"0.05"}]}}`,
			[]string{modelB, "non_empty"}},
		{"empty when", entry(`{"per":"duration","usd":"0.05","extras":[{"when":{},"usd":"0.01"}]}`), []string{modelC, "extras[0]", "when"}},
		{"steps every zero", `{"` + enhance + `":{"per":"job","usd":"0.02","steps":{"of":["width","height"],"included":16000000,"every":0,"usd":"0.01"}}}`,
			[]string{enhance, "steps", "every"}},
		{"steps over a number field", `{"` + enhance + `":{"per":"job","usd":"0.02","steps":{"of":["sharpen"],"included":0,"every":1,"usd":"0.01"}}}`,
			[]string{enhance, "steps", "sharpen"}},
		{"path given twice", `{"` + modelC + `":{"per":"job","usd":"1"},"` + modelC + `":{"per":"job","usd":"0"}}`,
			[]string{modelC, "twice"}},
		{"key given twice in a rule", entry(`{"per":"job","usd":"1","usd":"0"}`), []string{modelC, `"usd" is given twice`}},
	} {
		_, err := prices.Load([]byte(tc.override))
		if err == nil {
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not say %q", tc.name, err, w)
			}
		}
	}
}

func ExampleList_Price() {
	list, err := prices.Load([]byte(`{
		"/generate/video/vendor-c/model-c": {"per": "duration", "usd": "0.08"}
	}`)) // once, at init; the override would come from the deployment
	if err != nil {
		panic(err)
	}
	c, _ := catalog.New()
	for _, path := range []string{"/generate/video/vendor-b/model-b-fast", "/generate/video/vendor-c/model-c"} {
		e, _ := c.ByPath(path)
		req, err := e.Decode([]byte(`{"prompt":"a red fox"}`), time.Date(2026, time.March, 1, 0, 0, 0, 0, time.UTC))
		if err != nil {
			panic(err)
		}
		m, err := list.Price(path, req.Params)
		if err != nil {
			panic(err)
		}
		fmt.Println(path, m, "USD")
	}
	// Output:
	// /generate/video/vendor-b/model-b-fast 1.209500 USD
	// /generate/video/vendor-c/model-c 0.400000 USD
}

func TestDescribeSaysTheRuleInWords(t *testing.T) {
	p := load(t, "")
	for path, want := range map[string]string{
		modelC:  "0.05 USD per second of duration",
		modelE:  "0.03 USD per job",
		enhance: "0.02 USD per job; plus 0.01 USD for every started 16000000 of width x height beyond 16000000",
		modelB: "0.0645 USD per second of duration when reference_videos is non-empty and resolution is 480p; " +
			"0.1075 USD per second of duration when reference_videos is empty or absent and resolution is 480p; " +
			"0.1452 USD per second of duration when reference_videos is non-empty and resolution is 720p; " +
			"0.2419 USD per second of duration when reference_videos is empty or absent and resolution is 720p; " +
			"plus 0.05 USD per second of duration when upscale is true",
	} {
		got, err := p.Describe(path)
		if err != nil || got != want {
			t.Errorf("Describe(%s) = %q, %v; want %q", path, got, err, want)
		}
	}
	if _, err := p.Describe("/generate/image/vendor-x/none"); err == nil {
		t.Error("Describe of an unpriced path: no error")
	}
}

func TestDescribeFollowsAnOverride(t *testing.T) {
	p := load(t, `{"/generate/image/vendor-b/model-e-4": {"per": "job", "usd": "0.045"}}`)
	if got, err := p.Describe(modelE); err != nil || got != "0.045 USD per job" {
		t.Errorf("Describe after an override = %q, %v; want 0.045 USD per job", got, err)
	}
}
