// Package catalog knows the seven generation endpoints of the API (docs/api.md,
// "Endpoints"): their paths, their request schemas and how a request body becomes the
// validated, defaulted parameters of a job. It imports no AWS package.
//
// Each endpoint's request schema is one embedded JSON Schema file
// (schemas/<model>.json), written so it means the same under draft-07 (what
// gojsonschema validates here) and JSON Schema 2020-12 (what the OpenAPI 3.1
// document shows). The same file validates requests, supplies defaults and is
// published, so the three cannot drift apart.
package catalog

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/xeipuuv/gojsonschema"
)

//go:embed schemas/*.json
var schemaFiles embed.FS

// Catalog holds every generation endpoint with its schema. Build it once (at
// Lambda init) with New; it is safe for concurrent use.
type Catalog struct {
	endpoints []*Endpoint
	byPath    map[string]*Endpoint
}

// Endpoint is one generation endpoint: POST /generate/{Kind}/{Vendor}/{Model}.
type Endpoint struct {
	Kind        string // enhance, image, video, 3d
	Vendor      string
	Model       string
	Tag         string // the endpoint's group (docs/api.md, "Endpoints"), used as the OpenAPI tag
	Summary     string
	Description string
	OperationID string
	// Takes is how long a job usually takes, in words, for a client that
	// chooses between models or decides how long to wait (the MCP tools'
	// descriptions).
	Takes string

	// file is the embedded schema's name; source reads it on first use.
	file   string
	source struct {
		once sync.Once
		raw  []byte
	}
	// published is the schema as the OpenAPI document shows it (no
	// $schema, no $id), made on first use: only the document's generator
	// and the price list's check read it.
	published struct {
		once sync.Once
		json json.RawMessage
	}
	// The validator is compiled on the endpoint's first request, not at
	// init: compiling all seven was most of the generate function's cold
	// start, and one instance mostly serves a few endpoints.
	compiled struct {
		once   sync.Once
		schema *gojsonschema.Schema
		err    error
	}
	// parsed is the schema's properties, read on the endpoint's first
	// use (parse): a cold start reads none of the seven, and a request
	// only its own.
	parsed struct {
		once  sync.Once
		props map[string]*node
		err   error
	}
	deprecated []Deprecation        // sorted by Field
	derive     func(map[string]any) // fills defaults that depend on other fields
	check      func(map[string]any, namer) string
}

// Path is the endpoint's route, e.g. /generate/enhance/vendor-a/standard-enhance.
func (e *Endpoint) Path() string {
	return "/generate/" + e.Kind + "/" + e.Vendor + "/" + e.Model
}

// Schema is the request body's JSON Schema as the OpenAPI document shows it.
// The caller owns the returned bytes.
func (e *Endpoint) Schema() json.RawMessage {
	e.published.once.Do(func() {
		var published map[string]json.RawMessage
		if err := json.Unmarshal(e.raw(), &published); err != nil {
			panic(err) // load parsed the same bytes
		}
		delete(published, "$schema")
		delete(published, "$id")
		doc, err := json.Marshal(published)
		if err != nil {
			panic(err)
		}
		e.published.json = doc
	})
	return slices.Clone(e.published.json)
}

// Source is the endpoint's schema file as embedded: Schema with its
// $schema and $id, for readers of its properties that need not pay for
// Schema's copy. The caller owns the returned bytes.
func (e *Endpoint) Source() []byte { return slices.Clone(e.raw()) }

// Makes says what the endpoint makes, and in which format.
func (e *Endpoint) Makes() string { return makes[e.Kind] }

var makes = map[string]string{
	"enhance": "an enhanced, resized image (PNG, JPEG or WebP) of an input image",
	"image":   "an image (PNG)",
	"video":   "a video (looping animated GIF)",
	"3d":      "a 3D model (binary glTF, .glb)",
}

// ToolName is the name of the endpoint's MCP tool: generate_{kind}_{model},
// every character but a-z and 0-9 an underscore.
func (e *Endpoint) ToolName() string {
	return "generate_" + strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, e.Kind+"_"+e.Model)
}

// Example is the endpoint's documented request body: the first of its
// schema's examples, which the OpenAPI document shows, the console's
// models page sends in its snippets and the tests submit. The caller owns
// the returned bytes.
func (e *Endpoint) Example() json.RawMessage {
	var root struct {
		Examples []json.RawMessage `json:"examples"`
	}
	if json.Unmarshal(e.raw(), &root) != nil || len(root.Examples) == 0 {
		return json.RawMessage("{}")
	}
	return slices.Clone(root.Examples[0])
}

// Deprecations lists the deprecated fields the endpoint still knows
// (docs/api.md, "Body rules"):
// aliases with their Replacement, and ignored fields with none.
func (e *Endpoint) Deprecations() []Deprecation {
	return slices.Clone(e.deprecated)
}

// endpoints is the order of docs/api.md ("Choices per model").
func endpoints() []*Endpoint {
	return []*Endpoint{
		{
			Kind: "enhance", Vendor: "vendor-a", Model: "standard-enhance",
			Tag: "Image Enhance", Summary: "Standard Enhance", OperationID: "generateStandardEnhance",
			Description: "Faithful image upscaler for photos; output up to 22K resolution.",
			Takes:       "a few seconds; about a minute for outputs near 22000 x 22000",
			deprecated:  aliases("imageUrl"),
			check:       checkOutputPixels,
		},
		{
			Kind: "video", Vendor: "vendor-b", Model: "model-b-fast",
			Tag: "Video", Summary: "Model B Fast", OperationID: "generateModelBFast",
			Description: "Faster video model with native audio, reference inputs and frame animation. Adds prompt enhancement and upscaling beyond the base model.",
			Takes:       "about a second per second of video; up to half a minute",
			deprecated: append(aliases("startImage", "aspectRatio", "endImage",
				"referenceImages", "referenceVideos", "referenceAudios"), generateAudio),
		},
		{
			Kind: "video", Vendor: "vendor-c", Model: "model-c",
			Tag: "Video", Summary: "Model C", OperationID: "generateModelC",
			Description: "Frontier video model with native text-to-video.",
			Takes:       "about a second per second of video; up to 10 seconds",
			deprecated:  aliases("startImage", "aspectRatio"),
		},
		{
			Kind: "video", Vendor: "vendor-d", Model: "model-d-flash-1.1",
			Tag: "Video", Summary: "Model D Flash 1.1", OperationID: "generateModelDFlash11",
			Description: "Multimodal video with native audio.",
			Takes:       "about a second per second of video; up to 10 seconds",
			deprecated:  aliases("startImage", "aspectRatio", "referenceImages", "referenceVideos"),
		},
		{
			Kind: "image", Vendor: "vendor-b", Model: "model-e-4",
			Tag: "Image", Summary: "Model E 4", OperationID: "generateModelE4",
			Description: "High quality image model for photorealism and text rendering.",
			Takes:       "about a second",
			deprecated:  aliases("styleImages"),
		},
		{
			Kind: "video", Vendor: "vendor-f", Model: "model-f-2.2",
			Tag: "Video", Summary: "Model F 2.2", OperationID: "generateModelF22",
			Description: "Fast, lower-quality video model.",
			Takes:       "about a second per second of video; up to 5 seconds",
			deprecated:  aliases("startImage", "aspectRatio"),
			derive:      deriveAspectRatio,
			check:       checkAspectRatio,
		},
		{
			Kind: "3d", Vendor: "vendor-g", Model: "model-g-3.1-rapid",
			Tag: "3D", Summary: "Model G 3.1 Rapid", OperationID: "generateModelG31Rapid",
			Description: "Fast, inexpensive tier of a 3D model for text-to-3D or image-to-3D. An empty JSON object is an acceptable body.",
			Takes:       "about a second",
			derive:      deriveMode,
			check:       checkMode,
		},
	}
}

var registerFormats sync.Once

// New returns the catalog, made once per process and shared (a Catalog does
// not change once made): the generate function's builder and its price list
// both use it. It reads no schema: it checks that each file is embedded,
// copies it on the endpoint's first use (raw), where its properties,
// defaults and aliases are read and checked (parse), and its validator
// compiled on its first request (schema), so that a cold start pays for
// neither; TestEverySchemaReadsAndCompiles checks every embedded schema.
func New() (*Catalog, error) {
	sharedOnce.Do(func() { shared, sharedErr = read() })
	return shared, sharedErr
}

// The shared catalog. Not a package-level sync.OnceValues: a package
// variable's initializer is linked into every binary that imports the
// package, and with it the schema validator.
var (
	sharedOnce sync.Once
	shared     *Catalog
	sharedErr  error
)

func read() (*Catalog, error) {
	c := &Catalog{byPath: map[string]*Endpoint{}}
	for _, e := range endpoints() {
		e.file = "schemas/" + e.Model + ".json"
		if _, err := fs.Stat(schemaFiles, e.file); err != nil {
			return nil, fmt.Errorf("catalog: schema of %s: %w", e.Model, err)
		}
		slices.SortFunc(e.deprecated, func(a, b Deprecation) int { return strings.Compare(a.Field, b.Field) })
		c.endpoints = append(c.endpoints, e)
		c.byPath[e.Path()] = e
	}
	return c, nil
}

// raw is the embedded schema file, read on first use (New checked that it
// is there).
func (e *Endpoint) raw() []byte {
	e.source.once.Do(func() {
		b, err := schemaFiles.ReadFile(e.file)
		if err != nil {
			panic(err) // New found it; an embedded file does not go away
		}
		e.source.raw = b
	})
	return e.source.raw
}

// parse reads the endpoint's properties on its first use and checks them:
// known formats, defaults that are JSON, aliases that name a property.
func (e *Endpoint) parse() error {
	e.parsed.once.Do(func() {
		e.parsed.props, e.parsed.err = e.read()
		if e.parsed.err != nil {
			e.parsed.err = fmt.Errorf("catalog: schema of %s: %w", e.Model, e.parsed.err)
		}
	})
	return e.parsed.err
}

// properties is the schema's properties (parse); none if it cannot be read,
// which Decode reports.
func (e *Endpoint) properties() map[string]*node {
	_ = e.parse()
	return e.parsed.props
}

func (e *Endpoint) read() (map[string]*node, error) {
	var root node
	if err := json.Unmarshal(e.raw(), &root); err != nil {
		return nil, err
	}
	props := root.Properties
	for name, p := range props {
		if p.Format != "" && refFormats[p.Format] == nil || p.Items != nil && p.Items.Format != "" && refFormats[p.Items.Format] == nil {
			return nil, fmt.Errorf("property %s: unknown format", name)
		}
		var v any
		if p.Default != nil && json.Unmarshal(p.Default, &v) != nil {
			return nil, fmt.Errorf("property %s: default is not JSON", name)
		}
	}
	for _, d := range e.deprecated {
		if d.Replacement != "" && props[d.Replacement] == nil {
			return nil, fmt.Errorf("alias %s: no property %s", d.Field, d.Replacement)
		}
	}
	return props, nil
}

// schema is the endpoint's compiled validator, compiled on first use. It
// leaves out the schema's root allOf: the conditions across fields written
// there for readers of the OpenAPI document (mode image needs image_urls)
// are the endpoint's rules (check), which say what is wrong in the
// request's own words; TestSchemaConditionsAreTheRules holds the two
// together.
func (e *Endpoint) schema() (*gojsonschema.Schema, error) {
	e.compiled.once.Do(func() {
		registerFormats.Do(func() {
			for name, f := range refFormats {
				gojsonschema.FormatCheckers.Add(name, f)
			}
		})
		loader := gojsonschema.NewSchemaLoader()
		loader.Draft = gojsonschema.Draft7
		loader.AutoDetect = false
		var root map[string]json.RawMessage
		if e.compiled.err = json.Unmarshal(e.raw(), &root); e.compiled.err == nil {
			delete(root, "allOf")
			e.compiled.schema, e.compiled.err = loader.Compile(gojsonschema.NewGoLoader(root))
		}
		if e.compiled.err != nil {
			e.compiled.err = fmt.Errorf("catalog: schema of %s: %w", e.Model, e.compiled.err)
		}
	})
	return e.compiled.schema, e.compiled.err
}

// Lookup finds the endpoint at /generate/{kind}/{vendor}/{model}.
func (c *Catalog) Lookup(kind, vendor, model string) (*Endpoint, bool) {
	e, ok := c.byPath["/generate/"+kind+"/"+vendor+"/"+model]
	return e, ok
}

// ByPath finds the endpoint whose Path is path.
func (c *Catalog) ByPath(path string) (*Endpoint, bool) {
	e, ok := c.byPath[path]
	return e, ok
}

// ImageRef is one image-valued value of a request: a single field, or one
// item of an array field.
type ImageRef struct {
	Field string // the field's name, e.g. reference_images
	Index int    // the item's position; 0 for a single value
	Array bool
	Ref   string // URL, data: URI or asset URL
}

// Name is how messages name the value: image_url, reference_images[2].
func (r ImageRef) Name() string {
	if r.Array {
		return r.Field + "[" + strconv.Itoa(r.Index) + "]"
	}
	return r.Field
}

// ImageRefs lists the image-valued values of a validated request (the
// fields of format image-ref), by field name and then position: the images
// a worker fetches.
func (e *Endpoint) ImageRefs(params map[string]any) []ImageRef {
	var out []ImageRef
	props := e.properties()
	for _, name := range slices.Sorted(maps.Keys(props)) {
		n := props[name]
		switch v := params[name].(type) {
		case string:
			if n.Format == "image-ref" {
				out = append(out, ImageRef{Field: name, Ref: v})
			}
		case []any:
			if n.Items == nil || n.Items.Format != "image-ref" {
				continue
			}
			for i, item := range v {
				if s, ok := item.(string); ok {
					out = append(out, ImageRef{Field: name, Index: i, Array: true, Ref: s})
				}
			}
		}
	}
	return out
}

// Endpoints lists every endpoint in the order of docs/api.md ("Choices per model").
func (c *Catalog) Endpoints() []*Endpoint { return slices.Clone(c.endpoints) }

// node is the part of a property's schema that error messages and defaults
// need. gojsonschema validates; node only explains.
type node struct {
	Type       json.RawMessage  `json:"type"` // a name or a list of names
	Minimum    *json.Number     `json:"minimum"`
	Maximum    *json.Number     `json:"maximum"`
	MinLength  *int             `json:"minLength"`
	MaxLength  *int             `json:"maxLength"`
	MinItems   *int             `json:"minItems"`
	MaxItems   *int             `json:"maxItems"`
	Enum       []any            `json:"enum"`
	Format     string           `json:"format"`
	Default    json.RawMessage  `json:"default"`
	Items      *node            `json:"items"`
	Properties map[string]*node `json:"properties"`
}

// types lists the node's type names.
func (n *node) types() []string {
	if n == nil || len(n.Type) == 0 {
		return nil
	}
	var one string
	if json.Unmarshal(n.Type, &one) == nil {
		return []string{one}
	}
	var many []string
	_ = json.Unmarshal(n.Type, &many)
	return many
}

// Deprecation is one deprecated field a request used, for the response's
// Deprecation (RFC 9745) and Sunset (RFC 8594) headers.
type Deprecation struct {
	Field       string    // as the client wrote it, e.g. imageUrl
	Replacement string    // e.g. image_url; empty for a field that is only ignored
	Deprecated  time.Time // when it was deprecated
	Sunset      time.Time // from this instant on it is refused
}

// HasField reports whether the endpoint's request schema has a property
// named name.
func (e *Endpoint) HasField(name string) bool { return e.properties()[name] != nil }

// ImageField reports whether the property name holds images (format
// image-ref, or an array of them): values an outside reader must be able
// to fetch.
func (e *Endpoint) ImageField(name string) bool {
	n := e.properties()[name]
	return n != nil && (n.Format == "image-ref" || n.Items != nil && n.Items.Format == "image-ref")
}
