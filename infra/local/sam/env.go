package sam

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Env resolves the environment variables of function fn (Globals applied)
// to the strings the function would see, the way CloudFormation would on
// deploy. resolve gives the local value of each reference: a logical id
// for Ref ("JobsQueue" -> the queue's URL, "BaseUrl" -> a parameter's
// value, "AWS::Region" -> a pseudo parameter) and "Id.Attr" for Fn::GetAtt
// ("JobsQueue.Arn"). A Ref to a parameter missing from resolve takes the
// parameter's Default. Values may be plain scalars, Ref, Fn::GetAtt,
// Fn::Sub (${X}, ${X.Attr}, ${!Literal}, and the [string, {vars}] form),
// Fn::FindInMap and Fn::If on a condition of the template's Conditions
// (Fn::Equals, Fn::Not, Fn::And, Fn::Or, Condition); anything else, or a reference resolve does not hold, is an error naming
// the variable and the reference.
func (t *Template) Env(fn string, resolve map[string]string) (map[string]string, error) {
	var f *Function
	for _, g := range t.Functions() {
		if g.LogicalID == fn {
			f = &g
			break
		}
	}
	if f == nil {
		return nil, fmt.Errorf("template has no function %s", fn)
	}
	names := make([]string, 0, len(f.Environment))
	for name := range f.Environment {
		names = append(names, name)
	}
	sort.Strings(names) // the first error is always the same one
	out := make(map[string]string, len(names))
	for _, name := range names {
		v, err := t.value(f.Environment[name], resolve)
		if err != nil {
			return nil, fmt.Errorf("%s: environment variable %s: %w", fn, name, err)
		}
		out[name] = v
	}
	return out, nil
}

// value resolves one property value to a string.
func (t *Template) value(v any, resolve map[string]string) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case int, int64, float64, bool:
		return fmt.Sprint(x), nil
	case nil:
		return "", nil
	case map[string]any:
		if len(x) != 1 {
			break
		}
		if ref, ok := x["Ref"]; ok {
			id, _ := ref.(string)
			s, ok := t.ref(id, resolve)
			if !ok {
				return "", fmt.Errorf("!Ref %s has no local value", id)
			}
			return s, nil
		}
		if _, ok := x["Fn::GetAtt"]; ok {
			res, attr, ok := getAtt(x)
			if !ok {
				return "", fmt.Errorf("malformed !GetAtt %v", x["Fn::GetAtt"])
			}
			s, ok := resolve[res+"."+attr]
			if !ok {
				return "", fmt.Errorf("!GetAtt %s.%s has no local value", res, attr)
			}
			return s, nil
		}
		if sub, ok := x["Fn::Sub"]; ok {
			return t.sub(sub, resolve)
		}
		if args, ok := x["Fn::If"].([]any); ok && len(args) == 3 {
			name, _ := args[0].(string)
			holds, err := t.Condition(name, resolve)
			if err != nil {
				return "", err
			}
			if holds {
				return t.value(args[1], resolve)
			}
			return t.value(args[2], resolve)
		}
		if args, ok := x["Fn::FindInMap"].([]any); ok && len(args) == 3 {
			return t.findInMap(args, resolve)
		}
		for k := range x {
			return "", fmt.Errorf("%s is not resolved locally (only Ref, Fn::GetAtt, Fn::Sub, Fn::If and Fn::FindInMap are)", k)
		}
	}
	return "", fmt.Errorf("value %v is not a string, Ref, Fn::GetAtt, Fn::Sub, Fn::If or Fn::FindInMap", v)
}

// Value resolves one property value (a MaximumConcurrency's
// Fn::FindInMap, say) as Env resolves a variable's.
func (t *Template) Value(v any, resolve map[string]string) (string, error) {
	return t.value(v, resolve)
}

// findInMap resolves Fn::FindInMap [map, top key, second key].
func (t *Template) findInMap(args []any, resolve map[string]string) (string, error) {
	keys := make([]string, 3)
	for i, a := range args {
		s, err := t.value(a, resolve)
		if err != nil {
			return "", fmt.Errorf("!FindInMap: %w", err)
		}
		keys[i] = s
	}
	m, _ := t.Mappings[keys[0]].(map[string]any)
	top, _ := m[keys[1]].(map[string]any)
	v, ok := top[keys[2]]
	if !ok {
		return "", fmt.Errorf("!FindInMap %s: the template has no value", strings.Join(keys, "."))
	}
	return t.value(v, resolve)
}

// Condition evaluates the template's condition name as CloudFormation
// would with the references resolve gives.
func (t *Template) Condition(name string, resolve map[string]string) (bool, error) {
	c, ok := t.Conditions[name]
	if !ok {
		return false, fmt.Errorf("the template has no condition %q", name)
	}
	return t.condition(c, resolve)
}

func (t *Template) condition(c any, resolve map[string]string) (bool, error) {
	x, _ := c.(map[string]any)
	for _, key := range []string{"Condition", "Fn::Condition"} { // JSON's form and the loader's of !Condition
		if name, ok := x[key].(string); ok && len(x) == 1 {
			return t.Condition(name, resolve)
		}
	}
	if args, ok := x["Fn::Equals"].([]any); ok && len(args) == 2 {
		a, err := t.value(args[0], resolve)
		if err != nil {
			return false, err
		}
		b, err := t.value(args[1], resolve)
		return a == b, err
	}
	if args, ok := x["Fn::Not"].([]any); ok && len(args) == 1 {
		holds, err := t.condition(args[0], resolve)
		return !holds, err
	}
	for _, op := range []string{"Fn::And", "Fn::Or"} {
		args, ok := x[op].([]any)
		if !ok {
			continue
		}
		for _, a := range args {
			holds, err := t.condition(a, resolve)
			if err != nil {
				return false, err
			}
			if holds == (op == "Fn::Or") {
				return holds, nil
			}
		}
		return op == "Fn::And", nil
	}
	return false, fmt.Errorf("condition %v is not resolved locally (only Fn::Equals, Fn::Not, Fn::And, Fn::Or and Condition are)", c)
}

// ref resolves a Ref: from resolve, else a parameter's Default.
func (t *Template) ref(id string, resolve map[string]string) (string, bool) {
	if s, ok := resolve[id]; ok {
		return s, true
	}
	if p, ok := t.Parameters[id]; ok && p.Default != nil {
		return fmt.Sprint(p.Default), true
	}
	return "", false
}

// sub resolves Fn::Sub: "text ${X} ${X.Attr} ${!Literal}" or
// [text, {Var: value}].
func (t *Template) sub(v any, resolve map[string]string) (string, error) {
	text, ok := v.(string)
	var vars map[string]string
	if list, isList := v.([]any); isList && len(list) == 2 {
		text, ok = list[0].(string)
		m, isMap := list[1].(map[string]any)
		if !isMap {
			ok = false
		}
		vars = map[string]string{}
		for k, raw := range m {
			s, err := t.value(raw, resolve)
			if err != nil {
				return "", fmt.Errorf("!Sub variable %s: %w", k, err)
			}
			vars[k] = s
		}
	}
	if !ok {
		return "", fmt.Errorf("malformed !Sub %v", v)
	}
	var b strings.Builder
	rest := text
	for {
		i := strings.Index(rest, "${")
		if i < 0 {
			b.WriteString(rest)
			return b.String(), nil
		}
		b.WriteString(rest[:i])
		j := strings.Index(rest[i:], "}")
		if j < 0 {
			return "", fmt.Errorf("!Sub %s: unclosed ${", strconv.Quote(text))
		}
		name := rest[i+2 : i+j]
		rest = rest[i+j+1:]
		if strings.HasPrefix(name, "!") { // ${!Literal} writes ${Literal}
			b.WriteString("${" + name[1:] + "}")
			continue
		}
		if s, ok := vars[name]; ok {
			b.WriteString(s)
			continue
		}
		var s string
		if strings.Contains(name, ".") {
			s, ok = resolve[name]
		} else {
			s, ok = t.ref(name, resolve)
		}
		if !ok {
			return "", fmt.Errorf("!Sub %s: ${%s} has no local value", strconv.Quote(text), name)
		}
		b.WriteString(s)
	}
}
