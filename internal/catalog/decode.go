package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/xeipuuv/gojsonschema"

	"genjobs/internal/jsonbody"
)

// MaxBodyBytes is the largest request body a generation endpoint reads.
const MaxBodyBytes = 64 << 10

// InvalidError refuses a request body; the HTTP layer answers 400 with its
// Error text. Reason is one rule, in the client's field names.
type InvalidError struct{ Reason string }

func (e *InvalidError) Error() string { return "The request body is invalid: " + e.Reason }

func invalid(reason string) error { return &InvalidError{Reason: reason} }

// Request is a body that passed every rule of its endpoint.
type Request struct {
	// Params holds the body's fields under their current names, defaults
	// filled. Numbers are json.Number: integers written as integers ("1e3"
	// becomes "1000"), other numbers in their shortest form.
	Params map[string]any
	// Deprecations lists the deprecated fields the body used, by name.
	Deprecations []Deprecation
}

// JSON is the canonical text of r.Params: keys sorted, no HTML escaping. It is
// what gets stored, and it decodes again to the same Params.
func (r *Request) JSON() []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r.Params); err != nil {
		panic("catalog: request params are not JSON: " + err.Error()) // Decode only makes JSON values
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// Decode checks body against the endpoint as of now (which decides whether a
// deprecated field is still accepted) and returns its parameters. A body that
// breaks any rule gives an *InvalidError naming one broken rule, the same one
// on every call: the first by field name, then by kind of rule. Any other error
// is a fault of the service, not of the body.
//
// The order: size, one JSON object, deprecated fields (before the unknown-field
// check, so an alias past its sunset gets its own message), the schema, the
// endpoint's rules across fields, then defaults.
func (e *Endpoint) Decode(body []byte, now time.Time) (*Request, error) {
	if err := e.parse(); err != nil {
		return nil, err
	}
	if len(body) > MaxBodyBytes {
		return nil, invalid(fmt.Sprintf("the body is larger than %d bytes", MaxBodyBytes))
	}
	params, reason := jsonbody.DecodeObject(body)
	if reason != "" {
		return nil, invalid(reason)
	}
	used, written, reason := e.applyDeprecations(params, now)
	if reason != "" {
		return nil, invalid(reason)
	}
	tameNumbers(params)
	name := namer(written)
	reason, err := e.validate(params, name)
	if err != nil {
		return nil, err
	}
	if reason != "" {
		return nil, invalid(reason)
	}
	e.canonicalNumbers(params)
	if e.check != nil {
		if reason := e.check(params, name); reason != "" {
			return nil, invalid(reason)
		}
	}
	if err := e.fillDefaults(params); err != nil {
		return nil, err
	}
	return &Request{Params: params, Deprecations: used}, nil
}

// tameNumbers bounds the exponent of every number in v. math/big, which
// gojsonschema compares numbers with, would spend seconds on 1e999999 and
// fails on 1e9999999 (gojsonschema then dereferences nil). Any number beyond
// 1e400 in magnitude, or nonzero below 1e-400, keeps its sign and its
// outcome against every bound of our schemas when replaced by ±1e400 or
// ±1e-400.
func tameNumbers(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			v[k] = tameNumbers(x)
		}
	case []any:
		for i, x := range v {
			v[i] = tameNumbers(x)
		}
	case json.Number:
		return tameNumber(v)
	}
	return v
}

func tameNumber(n json.Number) json.Number {
	s := string(n)
	sign := ""
	if rest, ok := strings.CutPrefix(s, "-"); ok {
		sign, s = "-", rest
	}
	mantissa, exponent, hasExp := strings.Cut(strings.ToLower(s), "e")
	if !hasExp {
		return n // at most 64 KiB of digits: math/big copes
	}
	whole, fraction, _ := strings.Cut(mantissa, ".")
	digits := whole + fraction
	significant := strings.TrimLeft(digits, "0")
	if significant == "" {
		return "0"
	}
	exponent = strings.TrimLeft(strings.TrimPrefix(exponent, "+"), "0")
	negExp := strings.HasPrefix(exponent, "-")
	if negExp {
		exponent = strings.TrimLeft(exponent[1:], "0")
	}
	const limit = 400
	if len(exponent) > 9 { // no 64 KiB mantissa can pull it back into range
		if negExp {
			return json.Number(sign + "1e-400")
		}
		return json.Number(sign + "1e400")
	}
	exp, _ := strconv.Atoi(exponent)
	if negExp {
		exp = -exp
	}
	// The value is 0.<significant> x 10^magnitude.
	magnitude := len(whole) - (len(digits) - len(significant)) + exp
	switch {
	case magnitude > limit:
		return json.Number(sign + "1e400")
	case magnitude < -limit:
		return json.Number(sign + "1e-400")
	}
	return n
}

// namer gives a field's name as the client wrote it (an alias, if it used one).
type namer map[string]string

func (n namer) name(field string) string {
	if w, ok := n[field]; ok {
		return w
	}
	return field
}

// Kinds of rule, in the order a field's violations are reported.
const (
	rankRequired = iota
	rankUnknown
	rankType
	rankEnum
	rankBounds
	rankLength
	rankFormat
	rankItems
	rankOther
)

// violation is one broken rule, with what orders it among the others.
type violation struct {
	field  string // as the client wrote it
	index  int    // array item, or -1 for the field itself
	rank   int
	reason string
}

func compareViolations(a, b violation) int {
	if c := strings.Compare(a.field, b.field); c != 0 {
		return c
	}
	if a.index != b.index {
		return a.index - b.index
	}
	if a.rank != b.rank {
		return a.rank - b.rank
	}
	return strings.Compare(a.reason, b.reason)
}

// validate runs the schema and returns the first violation's reason, or "".
// gojsonschema reports errors in map order, so they are sorted here.
func (e *Endpoint) validate(params map[string]any, name namer) (string, error) {
	schema, err := e.schema()
	if err != nil {
		return "", err
	}
	res, err := schema.Validate(gojsonschema.NewGoLoader(params))
	if err != nil {
		return "", fmt.Errorf("catalog: validating a %s body: %w", e.Model, err)
	}
	if res.Valid() {
		return "", nil
	}
	var first violation
	for i, re := range res.Errors() {
		v := e.explain(re, name)
		if i == 0 || compareViolations(v, first) < 0 {
			first = v
		}
	}
	return first.reason, nil
}

// explain turns one gojsonschema error into our wording; gojsonschema's own
// wording never reaches a client.
func (e *Endpoint) explain(re gojsonschema.ResultError, name namer) violation {
	details := re.Details()
	switch re.Type() {
	case "required":
		field, _ := details["property"].(string)
		return violation{field: name.name(field), index: -1, rank: rankRequired, reason: name.name(field) + " is required"}
	case "additional_property_not_allowed":
		field, _ := details["property"].(string)
		return violation{field: field, index: -1, rank: rankUnknown, reason: jsonbody.QuoteField(field) + " is not a known field"}
	}

	// Every other error is about a property of the body or an item of one.
	prop, item, isItem := strings.Cut(re.Field(), ".")
	n := e.properties()[prop]
	v := violation{field: name.name(prop), index: -1, rank: rankOther}
	label := v.field
	if isItem {
		v.index, _ = strconv.Atoi(item)
		label += "[" + item + "]"
		if n != nil {
			n = n.Items
		}
	}
	if n == nil {
		v.reason = label + " is invalid"
		return v
	}
	switch re.Type() {
	case "invalid_type":
		v.rank, v.reason = rankType, label+" must be "+typePhrase(n)
	case "enum":
		v.rank, v.reason = rankEnum, label+" must be one of "+enumPhrase(n.Enum)
	case "number_gte", "number_gt", "number_lte", "number_lt":
		v.rank, v.reason = rankBounds, label+" must be "+boundsPhrase(n.Minimum, n.Maximum)
	case "string_gte", "string_lte":
		v.rank, v.reason = rankLength, label+" must "+lengthPhrase(n.MinLength, n.MaxLength)
	case "format":
		v.rank, v.reason = rankFormat, label+" is invalid"
		if f := refFormats[n.Format]; f != nil {
			v.reason = label + " must be " + f.message()
		}
	case "array_max_items", "array_min_items":
		count := 0
		if list, ok := re.Value().([]any); ok {
			count = len(list)
		}
		v.rank, v.reason = rankItems, label+" has "+itemsPhrase(count, n.MinItems, n.MaxItems)
	default:
		v.reason = label + " is invalid"
	}
	return v
}

func typePhrase(n *node) string {
	var phrases []string
	for _, t := range n.types() {
		switch t {
		case "integer":
			phrases = append(phrases, "an integer")
		case "array":
			if n.Items != nil && len(n.Items.types()) == 1 {
				phrases = append(phrases, "an array of "+n.Items.types()[0]+"s")
			} else {
				phrases = append(phrases, "an array")
			}
		case "object":
			phrases = append(phrases, "an object")
		case "null":
			phrases = append(phrases, "null")
		default:
			phrases = append(phrases, "a "+t)
		}
	}
	return strings.Join(phrases, " or ")
}

func enumPhrase(values []any) string {
	texts := make([]string, len(values))
	for i, v := range values {
		if s, ok := v.(string); ok {
			texts[i] = s
		} else {
			b, _ := json.Marshal(v)
			texts[i] = string(b)
		}
	}
	return strings.Join(texts, ", ")
}

func boundsPhrase(min, max *json.Number) string {
	switch {
	case min != nil && max != nil:
		return "between " + min.String() + " and " + max.String()
	case min != nil:
		return "at least " + min.String()
	case max != nil:
		return "at most " + max.String()
	}
	return "within its bounds"
}

func lengthPhrase(min, max *int) string {
	switch {
	case min != nil && max != nil:
		return fmt.Sprintf("be between %d and %d characters", *min, *max)
	case min != nil && *min == 1:
		return "not be empty"
	case min != nil:
		return fmt.Sprintf("be at least %d characters", *min)
	case max != nil:
		return fmt.Sprintf("be at most %d characters", *max)
	}
	return "have a valid length"
}

func itemsPhrase(count int, min, max *int) string {
	has := plural(count, "item", "items")
	switch {
	case max != nil && count > *max:
		return has + "; at most " + plural(*max, "is", "are") + " allowed"
	case min != nil && count < *min:
		return has + "; at least " + plural(*min, "is", "are") + " required"
	}
	return has
}

// plural writes "1 item", "2 items"; or "1 is", "2 are".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// canonicalNumbers rewrites the body's numbers in one form each, so equal
// requests store equal text: integers as integers, other numbers as Go writes
// a float64. The schema has bounded every number by then.
func (e *Endpoint) canonicalNumbers(params map[string]any) {
	for field, v := range params {
		num, ok := v.(json.Number)
		n := e.properties()[field]
		if !ok || n == nil {
			continue
		}
		if len(n.types()) == 1 && n.types()[0] == "integer" {
			if r, ok := new(big.Rat).SetString(num.String()); ok && r.IsInt() {
				params[field] = json.Number(r.Num().String())
			}
			continue
		}
		if f, err := num.Float64(); err == nil {
			b, _ := json.Marshal(f)
			params[field] = json.Number(b)
		}
	}
}

// fillDefaults adds every absent field that has a default, each a fresh copy.
func (e *Endpoint) fillDefaults(params map[string]any) error {
	if e.derive != nil {
		e.derive(params)
	}
	for field, n := range e.properties() {
		if _, ok := params[field]; ok || n.Default == nil {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(n.Default))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return fmt.Errorf("catalog: default of %s.%s: %w", e.Model, field, err)
		}
		params[field] = v
	}
	return nil
}
