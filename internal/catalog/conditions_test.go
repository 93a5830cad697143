package catalog_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/xeipuuv/gojsonschema"
)

// TestSchemaConditionsAreTheRules: every kind of request the rules across
// fields refuse is refused by the endpoint's published schema too where
// JSON Schema can say it (if/then), and is stated in the field's
// description where it cannot (a product or a ratio of two fields); the
// requests the rules accept, the published schema accepts.
func TestSchemaConditionsAreTheRules(t *testing.T) {
	c := newCatalog(t)
	for _, tc := range []struct {
		model, body string
		refused     bool
		// field and says: where the schema cannot refuse it, the field
		// whose description must state the rule, and the words it uses.
		field, says string
	}{
		{model: "model-g-3.1-rapid", body: `{"mode": "image"}`, refused: true},
		{model: "model-g-3.1-rapid", body: `{"mode": "image", "image_urls": []}`, refused: true},
		{model: "model-g-3.1-rapid", body: `{"mode": "text", "image_urls": ["https://example.com/a.png"]}`, refused: true},
		{model: "model-g-3.1-rapid", body: `{"mode": "image", "image_urls": ["https://example.com/a.png"]}`},
		{model: "model-g-3.1-rapid", body: `{"mode": "text", "image_urls": []}`},
		{model: "model-g-3.1-rapid", body: `{}`},
		{model: "standard-enhance", body: enhanceBody(22001, 22000, "png"), refused: true, field: "width", says: "width x height may be at most 484000000"},
		{model: "standard-enhance", body: enhanceBody(16384, 100, "webp"), refused: true},
		{model: "standard-enhance", body: enhanceBody(8193, 8193, "webp"), refused: true, field: "output_format", says: "67108864 pixels in all"},
		{model: "standard-enhance", body: enhanceBody(8192, 8192, "webp")},
		{model: "standard-enhance", body: enhanceBody(16384, 100, "png")},
		{model: "model-f-2.2", body: `{"prompt": "p", "width": 1280, "height": 1280, "aspect_ratio": "16:9"}`, refused: true, field: "aspect_ratio", says: "width:height must match it within 2%"},
		{model: "model-f-2.2", body: `{"prompt": "p", "width": 1280, "height": 720, "aspect_ratio": "16:9"}`},
	} {
		e := endpoint(t, c, tc.model)
		_, err := e.Decode([]byte(tc.body), beforeSunset)
		if (err != nil) != tc.refused {
			t.Fatalf("%s %s: Decode says %v; the table says refused %v", tc.model, tc.body, err, tc.refused)
		}
		schema, err := gojsonschema.NewSchemaLoader().Compile(gojsonschema.NewBytesLoader(e.Schema()))
		if err != nil {
			t.Fatalf("%s: the published schema does not compile: %v", tc.model, err)
		}
		res, err := schema.Validate(gojsonschema.NewStringLoader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case !tc.refused && !res.Valid():
			t.Errorf("%s %s: the service accepts it, the published schema refuses it: %v", tc.model, tc.body, res.Errors())
		case tc.refused && tc.says == "" && res.Valid():
			t.Errorf("%s %s: the service refuses it, the published schema accepts it", tc.model, tc.body)
		case tc.says != "":
			var s struct {
				Properties map[string]struct {
					Description string `json:"description"`
				} `json:"properties"`
			}
			if err := json.Unmarshal(e.Schema(), &s); err != nil {
				t.Fatal(err)
			}
			if d := s.Properties[tc.field].Description; !strings.Contains(d, tc.says) {
				t.Errorf("%s %s: the service refuses it and the schema cannot say why; %s's description %q does not say %q",
					tc.model, tc.body, tc.field, d, tc.says)
			}
		}
	}
}

func enhanceBody(w, h int, format string) string {
	b, _ := json.Marshal(map[string]any{"width": w, "height": h, "image_url": "https://example.com/a.png",
		"model": "Standard V2", "output_format": format})
	return string(b)
}
