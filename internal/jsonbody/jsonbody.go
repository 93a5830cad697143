// Package jsonbody reads a request body that must be one JSON object, the
// same way for every endpoint that takes one: strictly (a key given twice,
// invalid UTF-8, nesting past MaxDepth are refused) and with the reason in
// the words of every "The request body is invalid" answer. It stands apart
// from the catalog so that handlers other than generation's read bodies
// without linking the schema validator.
package jsonbody

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"
)

// DecodeObject reads body as exactly one JSON object, or gives the reason
// it is not one, in the words of every "The request body is invalid" answer.
// A key given twice is refused. Numbers stay
// json.Number, so no precision is lost before the schema sees them.
func DecodeObject(body []byte) (map[string]any, string) {
	// encoding/json allows each value decoded on its own 10,000 levels, so
	// a field nested that deep decodes here and fails when the whole body
	// is encoded again: refuse depth before anything else.
	if tooDeep(body, MaxDepth) {
		return nil, fmt.Sprintf("the body is nested deeper than %d levels", MaxDepth)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	tok, err := dec.Token()
	switch {
	case errors.Is(err, io.EOF):
		return nil, "the body must be a JSON object"
	case err != nil:
		return nil, "the body is not valid JSON"
	case tok != json.Delim('{'):
		return nil, "the body must be a JSON object"
	}
	params := map[string]any{}
	for dec.More() {
		keyStart := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return nil, "the body is not valid JSON"
		}
		key := tok.(string) // inside an object the decoder only yields string keys
		if !utf8.Valid(body[keyStart:dec.InputOffset()]) {
			return nil, "a field name is not valid UTF-8"
		}
		valueStart := dec.InputOffset()
		var value any
		if err := dec.Decode(&value); err != nil {
			return nil, "the body is not valid JSON"
		}
		// encoding/json replaces invalid UTF-8 with U+FFFD: "a\xffb" and
		// "a\ufffdb" would be one request under one Idempotency-Key.
		if !utf8.Valid(body[valueStart:dec.InputOffset()]) {
			return nil, QuoteField(key) + " is not valid UTF-8"
		}
		// encoding/json would keep the last of two equal keys; another reader
		// might keep the first. Refuse rather than guess.
		if _, dup := params[key]; dup {
			return nil, QuoteField(key) + " was given more than once"
		}
		params[key] = value
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, "the body is not valid JSON"
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, "the body must be a single JSON object"
	}
	return params, ""
}

// MaxDepth is how deeply a body's arrays and objects may nest, the body
// itself being the first level: far beyond any endpoint's schema.
const MaxDepth = 64

// tooDeep says whether the arrays and objects of the JSON text b nest
// deeper than max. It reads brackets outside strings only and does not
// judge the syntax (the decoder does).
func tooDeep(b []byte, max int) bool {
	depth, inString, escaped := 0, false, false
	for _, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			if depth++; depth > max {
				return true
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return false
}

// QuoteField writes an unknown field's name as the client sent it when it is
// a plain name, and quoted and cut to 64 characters otherwise, so an error
// message never carries control characters or a whole pasted document.
func QuoteField(s string) string {
	plain := s != "" && len(s) <= 64
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.' || r == '$') {
			plain = false
			break
		}
	}
	if plain {
		return s
	}
	if r := []rune(s); len(r) > 64 {
		s = string(r[:64]) + "…"
	}
	return strconv.Quote(s)
}
