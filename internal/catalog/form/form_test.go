package form_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"genjobs/internal/catalog"
	"genjobs/internal/catalog/form"
)

var now = time.Date(2026, time.November, 27, 12, 0, 0, 0, time.UTC)

func endpoints(t *testing.T) []*catalog.Endpoint {
	t.Helper()
	c, err := catalog.New()
	if err != nil {
		t.Fatal(err)
	}
	return c.Endpoints()
}

// Filled is what a person types into the form to ask for body: each
// field's value as text, a list one item a line, a ticked box "true".
func Filled(t *testing.T, body []byte) url.Values {
	t.Helper()
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		t.Fatal(err)
	}
	v := url.Values{}
	for name, raw := range fields {
		var s string
		var list []string
		switch {
		case json.Unmarshal(raw, &s) == nil:
			v.Set(name, s)
		case json.Unmarshal(raw, &list) == nil:
			v.Set(name, strings.Join(list, "\n"))
		case string(raw) == "false":
		default:
			v.Set(name, string(raw))
		}
	}
	return v
}

// Every endpoint's documented example, typed into its form, asks for the
// very request the example is: the same parameters once the API has
// decoded and defaulted both.
func TestTheFormOfEveryEndpointSendsItsExample(t *testing.T) {
	for _, e := range endpoints(t) {
		fields, err := form.Fields(e)
		if err != nil {
			t.Fatal(err)
		}
		if len(fields) == 0 {
			t.Fatalf("%s: no fields", e.Path())
		}
		body := form.Body(fields, Filled(t, e.Example()))
		got, err := e.Decode(body, now)
		if err != nil {
			t.Errorf("%s: the form's body %s is refused: %v", e.Path(), body, err)
			continue
		}
		want, err := e.Decode(e.Example(), now)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.JSON(), want.JSON()) {
			t.Errorf("%s: the form asks for %s; the example is %s", e.Path(), got.JSON(), want.JSON())
		}
	}
}

func fieldsOf(t *testing.T, path string) []form.Field {
	t.Helper()
	for _, e := range endpoints(t) {
		if e.Path() == path {
			f, err := form.Fields(e)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	t.Fatalf("no endpoint %s", path)
	return nil
}

func TestFieldsFollowTheSchema(t *testing.T) {
	fields := fieldsOf(t, "/generate/video/vendor-b/model-b-fast")
	byName := map[string]form.Field{}
	var order []string
	for _, f := range fields {
		byName[f.Name] = f
		order = append(order, f.Name)
	}
	if order[0] != "prompt" || order[1] != "start_image" {
		t.Errorf("fields in the order %v; want the schema's, prompt first", order)
	}
	for name, want := range map[string]form.Widget{
		"prompt": form.Text, "start_image": form.Image, "aspect_ratio": form.Select, "reference_images": form.Images,
		"reference_videos": form.URLs, "duration": form.Number, "upscale": form.Checkbox,
	} {
		if got := byName[name].Widget; got != want {
			t.Errorf("%s is a %s; want a %s", name, got, want)
		}
	}
	d := byName["duration"]
	if d.Bounds() != "4..15" || d.DefaultText() != "5" || d.Step() != "1" || d.Description == "" || d.Required {
		t.Errorf("duration: bounds %q, default %q, step %q, %q, required %v", d.Bounds(), d.DefaultText(), d.Step(), d.Description, d.Required)
	}
	if p := byName["prompt"]; !p.Required || p.Bounds() != "not empty" {
		t.Errorf("prompt: required %v, bounds %q", p.Required, p.Bounds())
	}
	if r := byName["reference_images"]; r.Bounds() != "at most 9" || r.TypeText() != "array of image-ref" {
		t.Errorf("reference_images: %q, %q", r.Bounds(), r.TypeText())
	}
	if a := byName["aspect_ratio"]; len(a.Enum) != 6 || a.Enum[0] != "16:9" {
		t.Errorf("aspect_ratio's choices: %v", a.Enum)
	}
	strength := fieldsOf(t, "/generate/enhance/vendor-a/standard-enhance")
	for _, f := range strength {
		if f.Name == "strength" && (f.Step() != "any" || f.Bounds() != "0.01..1") {
			t.Errorf("strength: step %q, bounds %q", f.Step(), f.Bounds())
		}
	}
}

func TestBodyOmitsWhatWasLeftEmptyAndKeepsTypes(t *testing.T) {
	fields := fieldsOf(t, "/generate/video/vendor-b/model-b-fast")
	body := form.Body(fields, url.Values{
		"prompt": {"a kite"}, "start_image": {"  "}, "aspect_ratio": {""}, "duration": {" 7 "},
		"reference_images": {"https://example.com/a.png\n\n https://example.com/b.png ", "https://api.example.com/assets/ast_x"},
		"upscale":          {"true"}, "seed": {"twelve"},
	})
	want := `{"prompt":"a kite","reference_images":["https://example.com/a.png","https://example.com/b.png","https://api.example.com/assets/ast_x"],"duration":7,"seed":"twelve","upscale":true}`
	if string(body) != want {
		t.Errorf("body\n %s\nwant\n %s", body, want)
	}
}

// A ticked box is true; an unticked one is false where the schema's
// default is true, and left out (the default) otherwise.
func TestCheckboxes(t *testing.T) {
	on := []form.Field{{Name: "a", Type: "boolean", Widget: form.Checkbox, Default: json.RawMessage("true")}}
	off := []form.Field{{Name: "a", Type: "boolean", Widget: form.Checkbox, Default: json.RawMessage("false")}}
	for _, c := range []struct {
		fields []form.Field
		values url.Values
		want   string
	}{
		{on, url.Values{}, `{"a":false}`},
		{on, url.Values{"a": {"true"}}, `{"a":true}`},
		{off, url.Values{}, `{}`},
		{off, url.Values{"a": {"true"}}, `{"a":true}`},
	} {
		if got := string(form.Body(c.fields, c.values)); got != c.want {
			t.Errorf("%v with %v: %s; want %s", string(c.fields[0].Default), c.values, got, c.want)
		}
	}
}

// The API's refusal of a typed value is shown beside the field it names;
// the message is the API's own, not a translation.
func TestTheAPIsMessageGoesBesideItsField(t *testing.T) {
	var e *catalog.Endpoint
	for _, x := range endpoints(t) {
		if x.Model == "model-e-4" {
			e = x
		}
	}
	fields, _ := form.Fields(e)
	for _, c := range []struct {
		values url.Values
		field  string
	}{
		{url.Values{"prompt": {"x"}, "width": {"5000"}, "height": {"64"}}, "width"},
		{url.Values{"prompt": {"x"}, "width": {"64"}, "height": {"tall"}}, "height"},
		{url.Values{"width": {"64"}, "height": {"64"}}, "prompt"},
		{url.Values{"prompt": {"x"}, "width": {"64"}, "height": {"64"}, "style_images": {"ftp://example.com/a.png"}}, "style_images"},
	} {
		_, err := e.Decode(form.Body(fields, c.values), now)
		var invalid *catalog.InvalidError
		if !errors.As(err, &invalid) {
			t.Fatalf("%v: %v; want a refusal", c.values, err)
		}
		inputs := form.Inputs(fields, c.values, err.Error())
		for _, in := range inputs {
			if (in.Problem != "") != (in.Name == c.field) {
				t.Errorf("%v: field %s shows %q; the refusal %q names %s", c.values, in.Name, in.Problem, err, c.field)
			}
			if in.Name == c.field && in.Problem != err.Error() {
				t.Errorf("%s shows %q; want the API's %q", in.Name, in.Problem, err)
			}
		}
	}
	if f := form.ProblemField(fields, "Your workspace has run out of compute units."); f != "" {
		t.Errorf("a refusal of no field is put beside %s", f)
	}
}

func TestAFreshFormShowsTheDefaults(t *testing.T) {
	fields := fieldsOf(t, "/generate/video/vendor-b/model-b-fast")
	for _, in := range form.Inputs(fields, nil, "") {
		switch in.Name {
		case "duration":
			if in.Value != "5" {
				t.Errorf("duration shows %q", in.Value)
			}
		case "aspect_ratio":
			if in.Value != "16:9" {
				t.Errorf("aspect_ratio shows %q", in.Value)
			}
		case "upscale":
			if in.Checked {
				t.Error("upscale is ticked; its default is false")
			}
		case "prompt":
			if in.Value != "" {
				t.Errorf("prompt shows %q", in.Value)
			}
		}
	}
}
