package catalog_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// The field tables below are the test's own statement of the endpoints'
// fields and docs/api.md ("Choices per model"), written apart from the schema files so that a drift in
// either shows up here.

type kind int

const (
	kString kind = iota
	kInteger
	kNumber
	kBool
	kEnum
	kRef  // one image-valued string
	kRefs // an array of media references
)

type field struct {
	name     string
	kind     kind
	required bool
	nonEmpty bool     // kString: minLength 1
	lo, hi   string   // kInteger, kNumber: the bounds as messages write them
	below    string   // kInteger, kNumber: a value just under lo
	above    string   // and just over hi
	values   []string // kEnum
	accepted []string // kEnum: values the minimal body accepts, if not all
	maxItems int      // kRefs
	media    string   // kRef, kRefs: image, video or audio
}

var (
	seed = field{name: "seed", kind: kInteger, lo: "-9007199254740991", hi: "9007199254740991",
		below: "-9007199254740992", above: "9007199254740992"}
	prompt         = field{name: "prompt", kind: kString, required: true, nonEmpty: true}
	optionalPrompt = field{name: "prompt", kind: kString}
	startImage     = field{name: "start_image", kind: kRef, media: "image"}
	unit           = func(name string) field {
		return field{name: name, kind: kNumber, lo: "0", hi: "1", below: "-0.001", above: "1.001"}
	}
	duration = func(lo, hi int) field {
		return field{name: "duration", kind: kInteger, lo: fmt.Sprint(lo), hi: fmt.Sprint(hi),
			below: fmt.Sprint(lo - 1), above: fmt.Sprint(hi + 1)}
	}
	pixels = func(name string, lo, hi int, required bool) field {
		return field{name: name, kind: kInteger, required: required, lo: fmt.Sprint(lo), hi: fmt.Sprint(hi),
			below: fmt.Sprint(lo - 1), above: fmt.Sprint(hi + 1)}
	}
	refs = func(name, media string, max int) field {
		return field{name: name, kind: kRefs, media: media, maxItems: max}
	}
)

var fields = map[string][]field{
	"standard-enhance": {
		optionalPrompt,
		pixels("width", 1, 32000, true),
		pixels("height", 1, 32000, true),
		seed,
		{name: "image_url", kind: kRef, required: true, media: "image"},
		{name: "model", kind: kEnum, required: true, values: []string{"Standard V2", "Low Resolution V2", "CGI", "High Fidelity V2", "Upscale High Fidelity V3", "Text Refine"}},
		{name: "output_format", kind: kEnum, values: []string{"png", "jpg", "webp"}},
		{name: "subject_detection", kind: kEnum, values: []string{"All", "Foreground", "Background"}},
		{name: "face_enhancement", kind: kBool},
		unit("face_enhancement_creativity"),
		unit("face_enhancement_strength"),
		{name: "crop_to_fill", kind: kBool},
		{name: "upscaling_activated", kind: kBool},
		{name: "image_scaling_factor", kind: kNumber, lo: "1", hi: "32", below: "0.999", above: "32.001"},
		unit("sharpen"),
		unit("denoise"),
		unit("fix_compression"),
		{name: "strength", kind: kNumber, lo: "0.01", hi: "1", below: "0.009", above: "1.001"},
	},
	"model-b-fast": {
		prompt,
		startImage,
		{name: "end_image", kind: kRef, media: "image"},
		{name: "aspect_ratio", kind: kEnum, values: []string{"16:9", "4:3", "1:1", "3:4", "9:16", "21:9"}},
		refs("reference_images", "image", 9),
		refs("reference_videos", "video", 3),
		refs("reference_audios", "audio", 3),
		{name: "resolution", kind: kEnum, values: []string{"480p", "720p"}},
		duration(4, 15),
		seed,
		{name: "upscale", kind: kBool},
		{name: "expand_prompt", kind: kBool},
	},
	"model-c": {
		prompt,
		startImage,
		{name: "aspect_ratio", kind: kEnum, values: []string{"1280:720", "720:1280", "1104:832", "832:1104", "960:960", "1584:672", "672:1584"}},
		duration(2, 10),
		seed,
	},
	"model-d-flash-1.1": {
		prompt,
		startImage,
		{name: "aspect_ratio", kind: kEnum, values: []string{"16:9", "9:16"}},
		refs("reference_images", "image", 4),
		refs("reference_videos", "video", 1),
		duration(3, 10),
		seed,
	},
	"model-e-4": {
		prompt,
		pixels("width", 64, 4096, true),
		pixels("height", 64, 4096, true),
		seed,
		refs("style_images", "image", 10),
	},
	"model-f-2.2": {
		prompt,
		pixels("width", 64, 2048, true),
		pixels("height", 64, 2048, true),
		startImage,
		// The minimal body is 1280 x 720, which 9:16 does not match: see TestModelFAspectRatio.
		{name: "aspect_ratio", kind: kEnum, values: []string{"16:9", "9:16"}, accepted: []string{"16:9"}},
		duration(2, 5),
		seed,
	},
	"model-g-3.1-rapid": {
		// mode's values need matching image_urls: see TestModelGMode.
		refs("image_urls", "image", 4),
		optionalPrompt,
	},
}

var formatRule = map[string]string{
	"image": "must be an http(s) URL or a base64 data URI of a png, jpeg or webp image",
	"video": "must be an http(s) URL or a base64 data URI of an mp4, webm or quicktime video",
	"audio": "must be an http(s) URL or a base64 data URI of mpeg, mp4, wav, ogg, webm or flac audio",
}

var validRef = map[string]string{
	"image": "https://example.com/a.png",
	"video": "https://example.com/a.mp4",
	"audio": "https://example.com/a.mp3",
}

type refusal struct {
	name string
	body []byte
	want string
}

// refusals lists, for one field, a body breaking each of its rules.
func refusals(base map[string]any, f field) []refusal {
	var out []refusal
	add := func(name string, v any, want string) {
		out = append(out, refusal{f.name + " " + name, edit(base, f.name, v), want})
	}
	n := f.name
	if f.required {
		add("missing", remove{}, n+" is required")
	}
	switch f.kind {
	case kString:
		add("type", 5, n+" must be a string")
		add("type null", nil, n+" must be a string")
		if f.nonEmpty {
			add("empty", "", n+" must not be empty")
		}
	case kInteger:
		add("type", "5", n+" must be an integer")
		add("fraction", json.Number(f.lo+".5"), n+" must be an integer")
		add("bool", true, n+" must be an integer")
		add("below", json.Number(f.below), n+" must be between "+f.lo+" and "+f.hi)
		add("above", json.Number(f.above), n+" must be between "+f.lo+" and "+f.hi)
		add("far above", json.Number("1e999999999"), n+" must be between "+f.lo+" and "+f.hi)
		add("far below", json.Number("-1e999999999"), n+" must be between "+f.lo+" and "+f.hi)
		add("tiny", json.Number("1e-999999999"), n+" must be an integer")
	case kNumber:
		add("type", "0.5", n+" must be a number")
		add("below", json.Number(f.below), n+" must be between "+f.lo+" and "+f.hi)
		add("above", json.Number(f.above), n+" must be between "+f.lo+" and "+f.hi)
		add("far above", json.Number("1e999999999"), n+" must be between "+f.lo+" and "+f.hi)
	case kBool:
		add("type", "true", n+" must be a boolean")
		add("number", 1, n+" must be a boolean")
	case kEnum:
		add("value", "nope", n+" must be one of "+strings.Join(f.values, ", "))
		add("case", strings.ToUpper(f.values[0])+"x", n+" must be one of "+strings.Join(f.values, ", "))
		add("type", 1, n+" must be a string")
	case kRef:
		add("type", 5, n+" must be a string")
		add("length", url(1025), n+" must be at most 1024 characters")
		add("format", "ftp://example.com/a.png", n+" "+formatRule[f.media])
		add("relative", "/assets/a", n+" "+formatRule[f.media])
	case kRefs:
		ok := validRef[f.media]
		add("type", ok, n+" must be an array of strings")
		add("item type", []any{5}, n+"[0] must be a string")
		add("item length", []any{url(1025)}, n+"[0] must be at most 1024 characters")
		if f.maxItems > 1 {
			add("item format", []any{ok, "ftp://example.com/a"}, n+"[1] "+formatRule[f.media])
		} else {
			add("item format", []any{"ftp://example.com/a"}, n+"[0] "+formatRule[f.media])
		}
		many := make([]any, f.maxItems+1)
		for i := range many {
			many[i] = ok
		}
		items := "items"
		allowed := fmt.Sprintf("%d are", f.maxItems)
		if f.maxItems == 1 {
			allowed = "1 is"
		}
		add("count", many, fmt.Sprintf("%s has %d %s; at most %s allowed", n, len(many), items, allowed))
	}
	return out
}

// acceptances lists, for one field, bodies on the edges of its rules that pass.
func acceptances(base map[string]any, f field) []refusal {
	var out []refusal
	add := func(name string, v any) { out = append(out, refusal{f.name + " " + name, edit(base, f.name, v), ""}) }
	switch f.kind {
	case kString:
		add("text", "x")
		if !f.nonEmpty {
			add("empty", "")
		}
	case kInteger:
		add("lo", json.Number(f.lo))
		add("hi", json.Number(f.hi))
		add("integral fraction", json.Number(f.lo+".0"))
	case kNumber:
		add("lo", json.Number(f.lo))
		add("hi", json.Number(f.hi))
	case kBool:
		add("true", true)
		add("false", false)
	case kEnum:
		values := f.values
		if f.accepted != nil {
			values = f.accepted
		}
		for _, v := range values {
			add(v, v)
		}
	case kRef:
		add("1024", url(1024))
		add("data", "data:"+f.media+"/"+map[string]string{"image": "png", "video": "mp4", "audio": "mpeg"}[f.media]+";base64,AAAA")
	case kRefs:
		add("empty", []any{})
		max := make([]any, f.maxItems)
		for i := range max {
			max[i] = url(1024)
		}
		add("max", max)
	}
	return out
}

func TestEveryRuleOfEveryField(t *testing.T) {
	c := newCatalog(t)
	for model, list := range fields {
		e := endpoint(t, c, model)
		base := minimal[model]
		for _, f := range list {
			for _, r := range refusals(base, f) {
				t.Run(model+"/"+r.name, func(t *testing.T) {
					if got := reason(t, e, r.body, beforeSunset); got != r.want {
						t.Errorf("body %s\n got %q\nwant %q", clip(r.body), got, r.want)
					}
				})
			}
			for _, a := range acceptances(base, f) {
				t.Run(model+"/accepts "+a.name, func(t *testing.T) {
					accept(t, e, a.body, beforeSunset)
				})
			}
		}
		t.Run(model+"/unknown field", func(t *testing.T) {
			if got := reason(t, e, edit(base, "colour", "red"), beforeSunset); got != "colour is not a known field" {
				t.Errorf("got %q", got)
			}
		})
	}
}

// TestFieldTablesCoverSchemas makes sure the tables above name every property
// of every schema, so no field escapes TestEveryRuleOfEveryField.
func TestFieldTablesCoverSchemas(t *testing.T) {
	c := newCatalog(t)
	for _, e := range c.Endpoints() {
		var s struct {
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
		}
		if err := json.Unmarshal(e.Schema(), &s); err != nil {
			t.Fatal(err)
		}
		listed := map[string]bool{}
		var required []string
		for _, f := range fields[e.Model] {
			listed[f.name] = true
			if f.required {
				required = append(required, f.name)
			}
		}
		if e.Model == "model-g-3.1-rapid" {
			listed["mode"] = true // TestModelGMode
		}
		for p := range s.Properties {
			if !listed[p] {
				t.Errorf("%s: property %s has no rules in the test table", e.Model, p)
			}
		}
		for name := range listed {
			if _, ok := s.Properties[name]; !ok {
				t.Errorf("%s: the test table names %s, the schema does not", e.Model, name)
			}
		}
		if strings.Join(required, ",") != strings.Join(s.Required, ",") {
			t.Errorf("%s: required %v, the test table says %v", e.Model, s.Required, required)
		}
	}
}
