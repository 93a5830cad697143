package triggers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// A filter is one compiled pattern of a mapping's FilterCriteria. Lambda
// filters with the rules of EventBridge event patterns, on the event record
// as the function would get it in JSON (for a DynamoDB stream: eventName,
// dynamodb.NewImage.<attr>.S, ...):
//
//   - a key whose value is an object descends into the record's object of
//     that name; a key whose value is a list holds rules, and the record's
//     value there must match one of them (any element, for a list value);
//     every key of the pattern must match (and), fields the pattern does
//     not name are ignored;
//   - rules: a string, number, true/false or null matches that value
//     exactly (numbers by their text: 300 is not 300.0, as in Lambda);
//     {"prefix": "s"}, {"suffix": "s"} and {"equals-ignore-case": "s"} (the
//     first two also as {"prefix": {"equals-ignore-case": "s"}}) match
//     strings; {"numeric": [">", 0, "<=", 5]} matches JSON numbers (not a
//     DynamoDB N, which the record carries as a string, as in Lambda);
//     {"exists": true} or false tests a leaf's presence; {"anything-but":
//     ...} takes a value, a list of values, or a prefix, suffix or
//     equals-ignore-case rule, and matches a present value that none of them
//     matches.
//
// Anything else ($or, cidr, wildcard, an empty list) is refused when the
// filter is compiled rather than matched approximately.
type filter struct{ root *patternNode }

// patternNode is one object of a pattern.
type patternNode struct {
	objects map[string]*patternNode // keys that descend
	leaves  map[string][]rule       // keys that hold rules
}

type ruleKind int

const (
	ruleExact ruleKind = iota // a string, number, boolean or null
	rulePrefix
	ruleSuffix
	ruleEqualsIgnoreCase
	ruleNumeric
	ruleExists
	ruleAnythingBut
)

type rule struct {
	kind       ruleKind
	value      any    // ruleExact: string, json.Number, bool or nil
	text       string // prefix, suffix, equals-ignore-case
	ignoreCase bool   // prefix and suffix with equals-ignore-case
	exists     bool
	numeric    []comparison
	but        []rule // anything-but: the rules a value must not match
}

type comparison struct {
	op    string
	value float64
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
	for _, k := range sortedKeys(obj) {
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
	case "prefix", "suffix":
		kind := map[string]ruleKind{"prefix": rulePrefix, "suffix": ruleSuffix}[op]
		if s, ok := arg.(string); ok {
			return rule{kind: kind, text: s}, nil
		}
		if m, ok := arg.(map[string]any); ok && len(m) == 1 {
			if s, ok := m["equals-ignore-case"].(string); ok {
				return rule{kind: kind, text: s, ignoreCase: true}, nil
			}
		}
		return rule{}, fmt.Errorf("%s takes a string or {\"equals-ignore-case\": string}, not %v", op, arg)
	case "equals-ignore-case":
		s, ok := arg.(string)
		if !ok {
			return rule{}, fmt.Errorf("equals-ignore-case takes a string, not %v", arg)
		}
		return rule{kind: ruleEqualsIgnoreCase, text: s}, nil
	case "exists":
		b, ok := arg.(bool)
		if !ok {
			return rule{}, fmt.Errorf("exists takes true or false, not %v", arg)
		}
		return rule{kind: ruleExists, exists: b}, nil
	case "numeric":
		return compileNumeric(arg)
	case "anything-but":
		r := rule{kind: ruleAnythingBut}
		switch a := arg.(type) {
		case string, json.Number:
			r.but = []rule{{kind: ruleExact, value: a}}
		case []any:
			if len(a) == 0 {
				return rule{}, errors.New("anything-but takes at least one value")
			}
			for _, x := range a {
				switch x.(type) {
				case string, json.Number:
					r.but = append(r.but, rule{kind: ruleExact, value: x})
				default:
					return rule{}, fmt.Errorf("anything-but takes strings or numbers, not %v", x)
				}
			}
		case map[string]any:
			inner, err := compileRule(a)
			if err != nil || (inner.kind != rulePrefix && inner.kind != ruleSuffix && inner.kind != ruleEqualsIgnoreCase) {
				return rule{}, fmt.Errorf("anything-but takes a value, a list of values, or a prefix, suffix or equals-ignore-case rule, not %v", a)
			}
			r.but = []rule{inner}
		default:
			return rule{}, fmt.Errorf("anything-but takes a value or a list of values, not %v", arg)
		}
		return r, nil
	}
	return rule{}, fmt.Errorf("the %s operator is not played by the local runner (Lambda's filters take prefix, suffix, equals-ignore-case, numeric, exists and anything-but)", op)
}

func compileNumeric(arg any) (rule, error) {
	list, ok := arg.([]any)
	if !ok || len(list) == 0 || len(list)%2 != 0 || len(list) > 4 {
		return rule{}, fmt.Errorf("numeric takes [op, number] or [op, number, op, number], not %v", arg)
	}
	r := rule{kind: ruleNumeric}
	for i := 0; i < len(list); i += 2 {
		op, _ := list[i].(string)
		num, _ := list[i+1].(json.Number)
		f, err := num.Float64()
		if err != nil {
			return rule{}, fmt.Errorf("numeric: %v is not a number", list[i+1])
		}
		switch op {
		case "=":
			if len(list) != 2 {
				return rule{}, errors.New(`numeric: "=" stands alone`)
			}
		case "<", "<=", ">", ">=":
		default:
			return rule{}, fmt.Errorf("numeric: %v is not one of =, <, <=, >, >=", list[i])
		}
		r.numeric = append(r.numeric, comparison{op, f})
	}
	return r, nil
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

// matches tests one scalar value against a rule other than exists.
func (r rule) matches(v any) bool {
	switch r.kind {
	case ruleExact:
		switch want := r.value.(type) {
		case nil:
			return v == nil
		case json.Number:
			got, ok := v.(json.Number)
			return ok && got == want
		default:
			return v == want
		}
	case rulePrefix, ruleSuffix:
		s, ok := v.(string)
		if !ok {
			return false
		}
		text := r.text
		if r.ignoreCase {
			s, text = strings.ToLower(s), strings.ToLower(text)
		}
		if r.kind == rulePrefix {
			return strings.HasPrefix(s, text)
		}
		return strings.HasSuffix(s, text)
	case ruleEqualsIgnoreCase:
		s, ok := v.(string)
		return ok && strings.EqualFold(s, r.text)
	case ruleNumeric:
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		f, err := n.Float64()
		if err != nil {
			return false
		}
		for _, c := range r.numeric {
			if !c.holds(f) {
				return false
			}
		}
		return true
	case ruleAnythingBut:
		if _, isList := v.([]any); isList {
			return false
		}
		for _, b := range r.but {
			if b.kind != ruleExact {
				if _, ok := v.(string); !ok {
					return false // a prefix, suffix or case rule only speaks of strings
				}
			}
			if b.matches(v) {
				return false
			}
		}
		return true
	}
	return false
}

func (c comparison) holds(f float64) bool {
	switch c.op {
	case "=":
		return f == c.value
	case "<":
		return f < c.value
	case "<=":
		return f <= c.value
	case ">":
		return f > c.value
	}
	return f >= c.value
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

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
