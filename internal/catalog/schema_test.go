package catalog_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// Keywords that mean the same under draft-07 and JSON Schema 2020-12. Anything
// else (nullable, $defs, exclusiveMinimum as a boolean, items as a list, ...)
// would be read differently by the validator and by OpenAPI 3.1 readers.
var portableKeywords = map[string]bool{
	"title": true, "description": true, "type": true, "properties": true, "required": true,
	"additionalProperties": true, "items": true, "minimum": true, "maximum": true,
	"minLength": true, "maxLength": true, "minItems": true, "maxItems": true,
	"enum": true, "format": true, "default": true, "examples": true,
	// The conditions across fields (TestSchemaConditionsAreTheRules).
	"allOf": true, "if": true, "then": true, "const": true,
}

var imageFields = map[string]bool{
	"image_url": true, "start_image": true, "end_image": true,
	"reference_images": true, "style_images": true, "image_urls": true,
}

func TestSchemasArePortableAndComplete(t *testing.T) {
	c := newCatalog(t)
	for _, e := range c.Endpoints() {
		var root map[string]any
		if err := json.Unmarshal(e.Schema(), &root); err != nil {
			t.Fatalf("%s: %v", e.Model, err)
		}
		for _, k := range []string{"$schema", "$id"} {
			if _, ok := root[k]; ok {
				t.Errorf("%s: Schema() has %s", e.Model, k)
			}
		}
		if root["type"] != "object" || root["additionalProperties"] != false {
			t.Errorf("%s: the body must be a closed object", e.Model)
		}
		walkSchema(t, e.Model, "", root)
		for name, raw := range root["properties"].(map[string]any) {
			p := raw.(map[string]any)
			if d, _ := p["description"].(string); d == "" {
				t.Errorf("%s.%s: no description", e.Model, name)
			}
			if name == "width" || name == "height" || name == "duration" || name == "seed" {
				if p["type"] != "integer" {
					t.Errorf("%s.%s: type %v, want integer", e.Model, name, p["type"])
				}
			}
			if imageFields[name] {
				s := p
				if items, ok := p["items"].(map[string]any); ok {
					s = items
				}
				if s["format"] != "image-ref" || s["maxLength"] != 1024.0 || s["type"] != "string" {
					t.Errorf("%s.%s: an image reference needs type string, maxLength 1024 and format image-ref: %v", e.Model, name, s)
				}
			}
			if strings.HasPrefix(name, "reference_") {
				if items := p["items"].(map[string]any); items["maxLength"] != 1024.0 {
					t.Errorf("%s.%s: entries need maxLength 1024", e.Model, name)
				}
			}
		}
	}
}

func walkSchema(t *testing.T, model, path string, s map[string]any) {
	for k, v := range s {
		if !portableKeywords[k] {
			t.Errorf("%s%s: keyword %s is not read the same by draft-07 and 2020-12", model, path, k)
		}
		switch k {
		case "properties":
			for name, p := range v.(map[string]any) {
				walkSchema(t, model, path+"."+name, p.(map[string]any))
			}
		case "items":
			walkSchema(t, model, path+"[]", v.(map[string]any))
		case "allOf":
			for i, sub := range v.([]any) {
				walkSchema(t, model, fmt.Sprintf("%s.allOf[%d]", path, i), sub.(map[string]any))
			}
		case "if", "then":
			walkSchema(t, model, path+"."+k, v.(map[string]any))
		}
	}
}

func TestSchemaIsACopy(t *testing.T) {
	c := newCatalog(t)
	e := c.Endpoints()[0]
	s := e.Schema()
	s[0] = 'x'
	if e.Schema()[0] != '{' {
		t.Error("Schema() hands out the endpoint's own bytes")
	}
}

// Every endpoint documents one example body (its schema's examples, which
// the OpenAPI document and the console's models page show), and the
// endpoint accepts it as written: no field left to its default is named
// with another value by a deprecated alias.
func TestEveryExampleIsAccepted(t *testing.T) {
	c := newCatalog(t)
	for _, e := range c.Endpoints() {
		ex := e.Example()
		if string(ex) == "{}" && e.Model != "model-g-3.1-rapid" {
			t.Errorf("%s: no example body in its schema", e.Model)
		}
		req, err := e.Decode(ex, beforeSunset)
		if err != nil {
			t.Errorf("%s: its example %s is refused: %v", e.Model, ex, err)
			continue
		}
		if len(req.Deprecations) > 0 {
			t.Errorf("%s: its example uses deprecated fields %v", e.Model, req.Deprecations)
		}
	}
}
