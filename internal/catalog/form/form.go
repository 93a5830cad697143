// Package form describes an endpoint's request fields for people, read from
// the JSON Schema that validates its requests (package catalog): the
// console's playground builds its form from them, the models page its field
// tables, and `genjobs models` its listing, so the three say what the API
// checks. It also turns a posted form back into the request body the API
// takes. It does no I/O and imports no AWS package.
package form

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"genjobs/internal/catalog"
)

// Widget is how a form asks for a field.
type Widget string

const (
	Text     Widget = "text"     // free text (a prompt)
	Select   Widget = "select"   // one of the schema's enum
	Number   Widget = "number"   // an integer or a number, within its bounds
	Checkbox Widget = "checkbox" // a boolean
	Image    Widget = "image"    // one image: a URL, or a file stored as an asset
	Images   Widget = "images"   // a list of images: URLs one a line, and files
	URLs     Widget = "urls"     // a list of URLs one a line (videos, audio)
)

// Field is one property of an endpoint's request schema.
type Field struct {
	Name        string
	Type        string // the JSON Schema type: string, integer, number, boolean, array (a list: "a|b")
	Format      string // image-ref, video-ref, audio-ref: of the value, or of an array's items
	Widget      Widget
	Required    bool
	Minimum     *json.Number
	Maximum     *json.Number
	MinLength   *int
	MaxLength   *int // of the value, or of an array's items
	MaxItems    *int
	Enum        []string
	Default     json.RawMessage // nil: none
	Description string
}

type property struct {
	Type        json.RawMessage `json:"type"`
	Format      string          `json:"format"`
	Minimum     *json.Number    `json:"minimum"`
	Maximum     *json.Number    `json:"maximum"`
	MinLength   *int            `json:"minLength"`
	MaxLength   *int            `json:"maxLength"`
	MaxItems    *int            `json:"maxItems"`
	Enum        []any           `json:"enum"`
	Default     json.RawMessage `json:"default"`
	Description string          `json:"description"`
	Items       *property       `json:"items"`
}

// Fields lists e's request fields in the order its schema writes them.
func Fields(e *catalog.Endpoint) ([]Field, error) {
	src := e.Source()
	var root struct {
		Required   []string            `json:"required"`
		Properties map[string]property `json:"properties"`
	}
	if err := json.Unmarshal(src, &root); err != nil {
		return nil, fmt.Errorf("form: schema of %s: %w", e.Path(), err)
	}
	order, err := propertyOrder(src)
	if err != nil {
		return nil, fmt.Errorf("form: schema of %s: %w", e.Path(), err)
	}
	fields := make([]Field, 0, len(order))
	for _, name := range order {
		p := root.Properties[name]
		f := Field{Name: name, Type: typeName(p.Type), Format: p.Format, Minimum: p.Minimum, Maximum: p.Maximum,
			MinLength: p.MinLength, MaxLength: p.MaxLength, MaxItems: p.MaxItems, Default: p.Default, Description: p.Description}
		for _, r := range root.Required {
			f.Required = f.Required || r == name
		}
		for _, v := range p.Enum {
			f.Enum = append(f.Enum, fmt.Sprint(v))
		}
		if p.Items != nil {
			f.Format = p.Items.Format
			if p.Items.MaxLength != nil {
				f.MaxLength = p.Items.MaxLength
			}
		}
		switch {
		case len(f.Enum) > 0:
			f.Widget = Select
		case f.Type == "integer" || f.Type == "number":
			f.Widget = Number
		case f.Type == "boolean":
			f.Widget = Checkbox
		case f.Type == "array" && f.Format == "image-ref":
			f.Widget = Images
		case f.Type == "array":
			f.Widget = URLs
		case f.Format == "image-ref":
			f.Widget = Image
		default:
			f.Widget = Text
		}
		fields = append(fields, f)
	}
	return fields, nil
}

// propertyOrder reads the names of the schema's properties in the order
// they are written (a Go map forgets it).
func propertyOrder(src []byte) ([]string, error) {
	var root map[string]json.RawMessage
	if err := json.Unmarshal(src, &root); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(root["properties"]))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("properties is not an object")
	}
	var names []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		names = append(names, t.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, err
		}
	}
	return names, nil
}

func typeName(raw json.RawMessage) string {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return one
	}
	var many []string
	_ = json.Unmarshal(raw, &many)
	return strings.Join(many, "|")
}

// TypeText is the field's type in words: integer, string, array of
// image-ref.
func (f Field) TypeText() string {
	switch {
	case f.Type == "array" && f.Format != "":
		return "array of " + f.Format
	case f.Format != "":
		return f.Type + " (" + f.Format + ")"
	}
	return f.Type
}

// Bounds is the field's limits in words: a range, a choice, a count, a
// length; "-" for none.
func (f Field) Bounds() string {
	switch {
	case len(f.Enum) > 0:
		return "one of " + strings.Join(f.Enum, ", ")
	case f.Minimum != nil && f.Maximum != nil:
		return f.Minimum.String() + ".." + f.Maximum.String()
	case f.Minimum != nil:
		return ">= " + f.Minimum.String()
	case f.Maximum != nil:
		return "<= " + f.Maximum.String()
	case f.MaxItems != nil:
		return "at most " + strconv.Itoa(*f.MaxItems)
	case f.MinLength != nil && *f.MinLength > 0:
		return "not empty"
	}
	return "-"
}

// DefaultText is the default as JSON ("-" for none): the tables' column.
func (f Field) DefaultText() string {
	if f.Default == nil {
		return "-"
	}
	return string(f.Default)
}

// Step is a number input's step: 1 for integers, any for numbers.
func (f Field) Step() string {
	if f.Type == "integer" {
		return "1"
	}
	return "any"
}

// Input is a field as a form shows it: with the value filled in and the
// API's refusal beside it.
type Input struct {
	Field
	Value   string // the text shown (a list: one item a line)
	Checked bool   // a checkbox's state
	Problem string // the API's message, when it refused this field
}

// Inputs are fields with the values of a posted form (values nil: each
// field's default) and the API's refusal message shown beside the field it
// names (ProblemField); a message naming no field goes nowhere here.
func Inputs(fields []Field, values url.Values, problem string) []Input {
	at := ProblemField(fields, problem)
	out := make([]Input, len(fields))
	for i, f := range fields {
		in := Input{Field: f}
		if f.Name == at {
			in.Problem = problem
		}
		switch {
		case values == nil && f.Widget == Checkbox:
			in.Checked = string(f.Default) == "true"
		case values == nil:
			in.Value = initial(f)
		case f.Widget == Checkbox:
			in.Checked = values.Get(f.Name) == "true"
		case f.Widget == Images || f.Widget == URLs:
			in.Value = strings.Join(lines(values[f.Name]), "\n")
		default:
			in.Value = values.Get(f.Name)
		}
		out[i] = in
	}
	return out
}

// initial is a field's value in a fresh form: its default, as text.
func initial(f Field) string {
	if f.Default == nil {
		return ""
	}
	var v any
	if json.Unmarshal(f.Default, &v) != nil {
		return ""
	}
	switch v := v.(type) {
	case string:
		return v
	case []any:
		parts := make([]string, len(v))
		for i, x := range v {
			parts[i] = fmt.Sprint(x)
		}
		return strings.Join(parts, "\n")
	}
	return string(f.Default)
}

// lines splits list values (textareas, one item a line, and the asset URLs
// of uploaded files) into their non-empty items.
func lines(values []string) []string {
	var out []string
	for _, v := range values {
		for _, l := range strings.Split(v, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				out = append(out, l)
			}
		}
	}
	return out
}

// Body is the request body a posted form asks for, its fields in the
// schema's order. A field left empty is omitted, so the API applies its
// default; an unticked checkbox is false only where the default is true.
// Numbers are sent as numbers; a number field holding something that is
// not one is sent as the text typed, for the API to refuse in its own
// words. An image field's value is the URL typed or, in its place, the
// asset URL of the file uploaded (the caller puts it in values); a list's
// values are its lines and the uploaded files' asset URLs.
func Body(fields []Field, values url.Values) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	put := func(name string, v []byte) {
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		key, _ := json.Marshal(name)
		b.Write(key)
		b.WriteByte(':')
		b.Write(v)
	}
	text := func(s string) []byte {
		enc, _ := json.Marshal(s)
		return enc
	}
	for _, f := range fields {
		v := values.Get(f.Name)
		switch f.Widget {
		case Checkbox:
			switch {
			case v == "true":
				put(f.Name, []byte("true"))
			case string(f.Default) == "true":
				put(f.Name, []byte("false"))
			}
		case Images, URLs:
			items := lines(values[f.Name])
			if len(items) == 0 {
				continue
			}
			enc, _ := json.Marshal(items)
			put(f.Name, enc)
		case Number:
			v = strings.TrimSpace(v)
			if v == "" {
				continue
			}
			if isNumber(v) {
				put(f.Name, []byte(v))
			} else {
				put(f.Name, text(v))
			}
		case Image, Select:
			if v = strings.TrimSpace(v); v != "" {
				put(f.Name, text(v))
			}
		default:
			if strings.TrimSpace(v) != "" {
				put(f.Name, text(v))
			}
		}
	}
	b.WriteByte('}')
	return b.Bytes()
}

// isNumber reports whether s is a JSON number as written.
func isNumber(s string) bool {
	var n json.Number
	return json.Unmarshal([]byte(s), &n) == nil && !strings.HasPrefix(s, `"`)
}

// ProblemField is the field an API refusal names ("The request body is
// invalid: width must be at most 4096" names width, "style_images[2] ..."
// style_images, "start_image: ..." start_image), or "" when it names none
// of fields.
func ProblemField(fields []Field, message string) string {
	reason := strings.TrimPrefix(message, invalidPrefix)
	end := strings.IndexFunc(reason, func(r rune) bool {
		return !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	})
	if end < 0 {
		end = len(reason)
	}
	word := reason[:end]
	for _, f := range fields {
		if f.Name == word {
			return word
		}
	}
	return ""
}

// invalidPrefix starts the API's refusal of a body (catalog.InvalidError).
var invalidPrefix = (&catalog.InvalidError{}).Error()
