package triggers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// A filter is one compiled pattern of a mapping's FilterCriteria. Lambda
// filters with the rules of EventBridge event patterns, on the event record
// as the function would get it in JSON (for a DynamoDB stream: eventName,
// dynamodb.NewImage.<attr>.S, ...). The local runner plays the part of those
// rules that template.yaml uses, exactly:
//
//   - a key whose value is an object descends into the record's object of
//     that name; a key whose value is a list holds rules, and the record's
//     value there must match one of them (any element, for a list value);
//     every key of the pattern must match (and), fields the pattern does
//     not name are ignored;
//   - rules: a string, number, true/false or null matches that value
//     exactly (numbers by their text: 300 is not 300.0, as in Lambda);
//     {"exists": true} or false tests a leaf's presence; {"anything-but":
//     ...} takes a value or a list of values and matches a present value
//     that is none of them.
//
// Any other operator (prefix, suffix, equals-ignore-case, numeric, cidr,
// wildcard, $or, ...) is refused when the template is loaded, with a
// message saying so, rather than matched approximately: a template that
// starts using one extends this file first.
type filter struct{ root *patternNode }

// patternNode is one object of a pattern.
type patternNode struct {
	objects map[string]*patternNode // keys that descend
	leaves  map[string][]rule       // keys that hold rules
}

type ruleKind int

const (
	ruleExact       ruleKind = iota // a string, number, boolean or null
	ruleExists                      // {"exists": bool}
	ruleAnythingBut                 // {"anything-but": value or [values]}
)

type rule struct {
	kind   ruleKind
	value  any   // ruleExact: string, json.Number, bool or nil
	exists bool  // ruleExists
	but    []any // ruleAnythingBut: the values a value must not be
}

// compileFilters compiles a mapping's patterns.
func compileFilters(patterns []string) ([]*filter, error) {
	var out []*filter
	for i, p := range patterns {
		f, err := compileFilter(p)
		if err != nil {
			return nil, fmt.Errorf("FilterCriteria.Filters[%d].Pattern: %w", i, err)
		}
		out = append(out, f)
	}
	return out, nil
}

func compileFilter(pattern string) (*filter, error) {
	dec := json.NewDecoder(strings.NewReader(pattern))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil || obj == nil {
		return nil, errors.New("not a JSON object")
	}
	root, err := compileNode(obj, "")
	if err != nil {
		return nil, err
	}
	return &filter{root}, nil
}

func compileNode(obj map[string]any, path string) (*patternNode, error) {
	n := &patternNode{objects: map[string]*patternNode{}, leaves: map[string][]rule{}}
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		at := path + k
		if strings.HasPrefix(k, "$") {
			return nil, fmt.Errorf("%s: %s is not played by the local runner", at, k)
		}
		switch v := obj[k].(type) {
		case map[string]any:
			sub, err := compileNode(v, at+".")
			if err != nil {
				return nil, err
			}
			n.objects[k] = sub
		case []any:
			if len(v) == 0 {
				return nil, fmt.Errorf("%s: an empty list of rules matches nothing", at)
			}
			for _, e := range v {
				r, err := compileRule(e)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", at, err)
				}
				n.leaves[k] = append(n.leaves[k], r)
			}
		default:
			return nil, fmt.Errorf("%s: %v must be a list of rules or an object", at, obj[k])
		}
	}
	return n, nil
}

func compileRule(e any) (rule, error) {
	switch v := e.(type) {
	case string, json.Number, bool, nil:
		return rule{kind: ruleExact, value: v}, nil
	case map[string]any:
		if len(v) != 1 {
			return rule{}, fmt.Errorf("a rule object has one operator, not %d", len(v))
		}
		for op, arg := range v {
			return compileOperator(op, arg)
		}
	}
	return rule{}, fmt.Errorf("%v is not a rule", e)
}

func compileOperator(op string, arg any) (rule, error) {
	switch op {
	case "exists":
		b, ok := arg.(bool)
		if !ok {
			return rule{}, fmt.Errorf("exists takes true or false, not %v", arg)
		}
		return rule{kind: ruleExists, exists: b}, nil
	case "anything-but":
		r := rule{kind: ruleAnythingBut}
		switch a := arg.(type) {
		case string, json.Number:
			r.but = []any{a}
		case []any:
			if len(a) == 0 {
				return rule{}, errors.New("anything-but takes at least one value")
			}
			for _, x := range a {
				switch x.(type) {
				case string, json.Number:
					r.but = append(r.but, x)
				default:
					return rule{}, fmt.Errorf("anything-but takes strings or numbers, not %v", x)
				}
			}
		default:
			return rule{}, fmt.Errorf("anything-but is played with a value or a list of values only, not %v", arg)
		}
		return r, nil
	}
	return rule{}, fmt.Errorf("the %s operator is not played by the local runner (it plays exact values, exists and anything-but: what template.yaml uses)", op)
}

// match tells whether the record, as JSON, matches the filter.
func (f *filter) match(record any) bool {
	obj, _ := record.(map[string]any)
	return f.root.match(obj)
}

func (n *patternNode) match(obj map[string]any) bool {
	for k, sub := range n.objects {
		// A missing or non-object value descends as an empty object, where
		// only {"exists": false} rules match.
		child, _ := obj[k].(map[string]any)
		if !sub.match(child) {
			return false
		}
	}
	for k, rules := range n.leaves {
		v, present := obj[k]
		if !matchLeaf(rules, v, present) {
			return false
		}
	}
	return true
}

func matchLeaf(rules []rule, v any, present bool) bool {
	if _, isObject := v.(map[string]any); isObject {
		return false // rules, exists included, apply to leaves only
	}
	values := []any{v}
	if list, ok := v.([]any); ok {
		values = list
	}
	for _, r := range rules {
		if r.kind == ruleExists {
			if r.exists == present {
				return true
			}
			continue
		}
		if !present {
			continue
		}
		for _, x := range values {
			if r.matches(x) {
				return true
			}
		}
	}
	return false
}

// matches tests one scalar value against an exact or anything-but rule.
func (r rule) matches(v any) bool {
	switch r.kind {
	case ruleExact:
		return sameValue(r.value, v)
	case ruleAnythingBut:
		if _, isList := v.([]any); isList {
			return false
		}
		for _, b := range r.but {
			if sameValue(b, v) {
				return false
			}
		}
		return true
	}
	return false
}

// sameValue compares a pattern's value with a record's: numbers by their
// text, as Lambda does.
func sameValue(want, got any) bool {
	switch w := want.(type) {
	case nil:
		return got == nil
	case json.Number:
		g, ok := got.(json.Number)
		return ok && g == w
	default:
		return got == want
	}
}

// recordJSON turns an event record into the JSON value Lambda filters:
// its encoding as the function would receive it, numbers kept as written.
func recordJSON(record any) (any, error) {
	b, err := json.Marshal(record)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// matchAny tells whether the record passes a mapping's filters: it matches
// one of them, or there are none.
func matchAny(filters []*filter, record any) (bool, error) {
	if len(filters) == 0 {
		return true, nil
	}
	v, err := recordJSON(record)
	if err != nil {
		return false, err
	}
	for _, f := range filters {
		if f.match(v) {
			return true, nil
		}
	}
	return false, nil
}
