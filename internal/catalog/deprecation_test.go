package catalog_test

import (
	"encoding/json"
	"reflect"
	"sort"
	"testing"
	"time"

	"genjobs/internal/catalog"
)

type alias struct {
	alias, replacement string
	value              any
}

var img = "https://example.com/a.png"

// aliases is the table of deprecated aliases (docs/api.md, "Body rules"), per endpoint, with a valid value for each.
var aliases = map[string][]alias{
	"standard-enhance": {{"imageUrl", "image_url", img}},
	"model-b-fast": {
		{"startImage", "start_image", img},
		{"aspectRatio", "aspect_ratio", "9:16"},
		{"endImage", "end_image", img},
		{"referenceImages", "reference_images", []any{img}},
		{"referenceVideos", "reference_videos", []any{"https://example.com/v.mp4"}},
		{"referenceAudios", "reference_audios", []any{"https://example.com/a.mp3"}},
	},
	"model-c": {
		{"startImage", "start_image", img},
		{"aspectRatio", "aspect_ratio", "720:1280"},
	},
	"model-d-flash-1.1": {
		{"startImage", "start_image", img},
		{"aspectRatio", "aspect_ratio", "9:16"},
		{"referenceImages", "reference_images", []any{img}},
		{"referenceVideos", "reference_videos", []any{"https://example.com/v.mp4"}},
	},
	"model-e-4": {{"styleImages", "style_images", []any{img}}},
	"model-f-2.2": {
		{"startImage", "start_image", img},
		{"aspectRatio", "aspect_ratio", "16:9"},
	},
	"model-g-3.1-rapid": nil,
}

var (
	aliasDeprecated = time.Date(2025, time.December, 19, 0, 0, 0, 0, time.UTC)
	audioDeprecated = time.Date(2026, time.April, 30, 0, 0, 0, 0, time.UTC)
)

func TestAliasesOnBothSidesOfTheSunset(t *testing.T) {
	c := newCatalog(t)
	lastAccepted := aliasSunset.Add(-time.Nanosecond)
	for model, list := range aliases {
		e := endpoint(t, c, model)
		for _, a := range list {
			t.Run(model+"/"+a.alias, func(t *testing.T) {
				body := edit(minimal[model], a.replacement, remove{}, a.alias, a.value)

				req := accept(t, e, body, lastAccepted)
				got, _ := json.Marshal(req.Params[a.replacement])
				want, _ := json.Marshal(a.value)
				if string(got) != string(want) {
					t.Errorf("%s = %s, want %s", a.replacement, got, want)
				}
				if _, ok := req.Params[a.alias]; ok {
					t.Errorf("Params still holds %s", a.alias)
				}
				wantDep := []catalog.Deprecation{{Field: a.alias, Replacement: a.replacement, Deprecated: aliasDeprecated, Sunset: aliasSunset}}
				if !reflect.DeepEqual(req.Deprecations, wantDep) {
					t.Errorf("Deprecations = %+v, want %+v", req.Deprecations, wantDep)
				}

				removed := a.alias + " was removed on 2026-06-19; use " + a.replacement
				for _, now := range []time.Time{aliasSunset, aliasSunset.AddDate(1, 0, 0)} {
					if got := reason(t, e, body, now); got != removed {
						t.Errorf("at %s: got %q, want %q", now, got, removed)
					}
				}

				both := edit(minimal[model], a.replacement, a.value, a.alias, a.value)
				if got, want := reason(t, e, both, lastAccepted), a.alias+" and "+a.replacement+" were both given; use "+a.replacement; got != want {
					t.Errorf("both: got %q, want %q", got, want)
				}
				if got := reason(t, e, both, aliasSunset); got != removed {
					t.Errorf("both at the sunset: got %q, want %q", got, removed)
				}

				// A renamed field's own rules speak of it by the name the client used.
				typeRule := a.alias + " must be a string"
				if _, isList := a.value.([]any); isList {
					typeRule = a.alias + " must be an array of strings"
				}
				if got := reason(t, e, edit(minimal[model], a.replacement, remove{}, a.alias, 5), lastAccepted); got != typeRule {
					t.Errorf("bad value: got %q, want %q", got, typeRule)
				}
			})
		}
	}
}

func TestAliasesOfOtherEndpointsAreUnknown(t *testing.T) {
	c := newCatalog(t)
	all := map[string]any{}
	for _, list := range aliases {
		for _, a := range list {
			all[a.alias] = a.value
		}
	}
	for model, list := range aliases {
		own := map[string]bool{}
		for _, a := range list {
			own[a.alias] = true
		}
		e := endpoint(t, c, model)
		for name, value := range all {
			if own[name] {
				continue
			}
			for _, now := range []time.Time{beforeSunset, aliasSunset} {
				if got := reason(t, e, edit(minimal[model], name, value), now); got != name+" is not a known field" {
					t.Errorf("%s %s at %s: got %q", model, name, now, got)
				}
			}
		}
		if model != "model-b-fast" {
			if got := reason(t, e, edit(minimal[model], "generate_audio", true), beforeSunset); got != "generate_audio is not a known field" {
				t.Errorf("%s generate_audio: got %q", model, got)
			}
		}
	}
}

func TestGenerateAudioOnBothSidesOfItsSunset(t *testing.T) {
	e := endpoint(t, newCatalog(t), "model-b-fast")
	base := minimal["model-b-fast"]
	lastAccepted := audioSunset.Add(-time.Nanosecond)
	wantDep := []catalog.Deprecation{{Field: "generate_audio", Deprecated: audioDeprecated, Sunset: audioSunset}}
	for _, v := range []bool{true, false} {
		for _, now := range []time.Time{beforeSunset, aliasSunset, lastAccepted} {
			req := accept(t, e, edit(base, "generate_audio", v), now)
			if _, ok := req.Params["generate_audio"]; ok {
				t.Errorf("generate_audio kept: %s", req.JSON())
			}
			if !reflect.DeepEqual(req.Deprecations, wantDep) {
				t.Errorf("Deprecations = %+v", req.Deprecations)
			}
		}
	}
	for _, v := range []any{"yes", 1, nil, []any{}} {
		if got := reason(t, e, edit(base, "generate_audio", v), lastAccepted); got != "generate_audio must be a boolean" {
			t.Errorf("generate_audio %v: got %q", v, got)
		}
	}
	const gone = "generate_audio is no longer accepted since 2026-10-30; remove it"
	for _, v := range []any{true, false, "yes"} {
		for _, now := range []time.Time{audioSunset, audioSunset.AddDate(1, 0, 0)} {
			if got := reason(t, e, edit(base, "generate_audio", v), now); got != gone {
				t.Errorf("generate_audio %v at %s: got %q", v, now, got)
			}
		}
	}
}

func TestSeveralDeprecatedFields(t *testing.T) {
	e := endpoint(t, newCatalog(t), "model-b-fast")
	body := edit(minimal["model-b-fast"], "startImage", img, "aspectRatio", "1:1", "generate_audio", true)

	req := accept(t, e, body, beforeSunset)
	var fields []string
	for _, d := range req.Deprecations {
		fields = append(fields, d.Field)
	}
	if !sort.StringsAreSorted(fields) || len(fields) != 3 {
		t.Errorf("Deprecations by field: %v", fields)
	}
	if got := string(req.JSON()); got != `{"aspect_ratio":"1:1","duration":5,"expand_prompt":false,"prompt":"a cat","resolution":"720p","start_image":"https://example.com/a.png","upscale":false}` {
		t.Errorf("JSON() = %s", got)
	}

	// Between the two sunsets only the aliases are refused, the first by name.
	if got := reason(t, e, body, aliasSunset); got != "aspectRatio was removed on 2026-06-19; use aspect_ratio" {
		t.Errorf("got %q", got)
	}
	if got := reason(t, e, body, audioSunset); got != "aspectRatio was removed on 2026-06-19; use aspect_ratio" {
		t.Errorf("got %q", got)
	}
	noRatio := edit(minimal["model-b-fast"], "startImage", img, "generate_audio", true)
	if got := reason(t, e, noRatio, audioSunset); got != "generate_audio is no longer accepted since 2026-10-30; remove it" {
		t.Errorf("got %q", got)
	}
	// Deprecated fields are handled before unknown ones.
	if got := reason(t, e, edit(minimal["model-b-fast"], "startImage", img, "colour", 1), aliasSunset); got != "startImage was removed on 2026-06-19; use start_image" {
		t.Errorf("got %q", got)
	}
}

func TestEndpointDeprecations(t *testing.T) {
	c := newCatalog(t)
	for model, list := range aliases {
		e := endpoint(t, c, model)
		want := map[string]string{}
		for _, a := range list {
			want[a.alias] = a.replacement
		}
		if model == "model-b-fast" {
			want["generate_audio"] = ""
		}
		got := map[string]string{}
		for _, d := range e.Deprecations() {
			got[d.Field] = d.Replacement
			if !d.Deprecated.Before(d.Sunset) {
				t.Errorf("%s %s: deprecated %s, sunset %s", model, d.Field, d.Deprecated, d.Sunset)
			}
		}
		if !reflect.DeepEqual(got, want) && len(want)+len(got) > 0 {
			t.Errorf("%s: Deprecations() %v, want %v", model, got, want)
		}
	}
}
