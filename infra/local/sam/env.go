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
// parameter's Default. Values may be plain scalars, Ref, Fn::GetAtt and
// Fn::Sub (${X}, ${X.Attr}, ${!Literal}, and the [string, {vars}] form);
// anything else, or a reference resolve does not hold, is an error naming
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
		for k := range x {
			return "", fmt.Errorf("%s is not resolved locally (only Ref, Fn::GetAtt and Fn::Sub are)", k)
		}
	}
	return "", fmt.Errorf("value %v is not a string, Ref, Fn::GetAtt or Fn::Sub", v)
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
