package sam

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// Grant is one action a function's policies allow on one resource, the
// resource written as the logical id (or parameter) it refers to, followed
// by what the ARN adds: "Table", "Table/index/jobs-by-status",
// "ResultsBucket/results/*", "secret:${AWS::StackName}/providers/*".
type Grant struct {
	Action   string
	Resource string
}

func (g Grant) String() string { return g.Action + " on " + g.Resource }

// Grants lists what f's Policies allow: inline statements, and the
// AWS::IAM::ManagedPolicy resources of the template they refer to, sorted.
// A policy it cannot read (a SAM policy template, a managed policy of AWS)
// is an error: the check of the grants would otherwise miss it.
func (t *Template) Grants(f Function) ([]Grant, error) {
	policies, _ := f.Policies.([]any)
	if doc, ok := f.Policies.(map[string]any); ok {
		policies = []any{doc}
	}
	var out []Grant
	for _, p := range policies {
		doc, ok := p.(map[string]any)
		if ref, isRef := doc["Ref"].(string); ok && isRef {
			r := t.Resources[ref]
			if r.Type != "AWS::IAM::ManagedPolicy" {
				return nil, fmt.Errorf("%s: policy Ref %s is not a managed policy of the template", f.LogicalID, ref)
			}
			doc, _ = r.Properties["PolicyDocument"].(map[string]any)
		}
		if _, ok := doc["Statement"]; !ok {
			return nil, fmt.Errorf("%s: a policy the check cannot read: %v", f.LogicalID, p)
		}
		out = append(out, statementGrants(doc)...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out, nil
}

// statementGrants lists what a policy document's Allow statements grant.
func statementGrants(doc map[string]any) []Grant {
	stmts, _ := doc["Statement"].([]any)
	if s, ok := doc["Statement"].(map[string]any); ok {
		stmts = []any{s}
	}
	var out []Grant
	for _, raw := range stmts {
		s, _ := raw.(map[string]any)
		if s["Effect"] != "Allow" {
			continue
		}
		actions, _ := s["Action"].([]any)
		if actions == nil {
			actions = []any{s["Action"]}
		}
		resources, _ := s["Resource"].([]any)
		if resources == nil {
			resources = []any{s["Resource"]}
		}
		for _, a := range actions {
			action, _ := a.(string)
			for _, r := range resources {
				for _, res := range ResourceNames(r) {
					out = append(out, Grant{Action: action, Resource: res})
				}
			}
		}
	}
	return out
}

var (
	subRef = regexp.MustCompile(`\$\{([A-Za-z0-9]+)(\.[A-Za-z]+)?\}`)
)

// ResourceNames writes an ARN (or a queue URL, table name, ...) of a
// template as the logical ids it refers to: Ref X and GetAtt X.Attr are X,
// a Sub's ${X} and ${X.Arn} are X within its text (a secret's ARN is
// "secret:" and its name), and both branches of an If count (AWS::NoValue
// and "" are nothing: an If's branch that leaves a variable empty).
func ResourceNames(v any) []string {
	switch x := v.(type) {
	case string:
		if x == "" {
			return nil
		}
		return []string{x}
	case map[string]any:
		if id, ok := x["Ref"].(string); ok {
			if id == "AWS::NoValue" {
				return nil
			}
			return []string{id}
		}
		if res, _, ok := getAtt(x); ok {
			return []string{res}
		}
		if branches, ok := x["Fn::If"].([]any); ok && len(branches) == 3 {
			return append(ResourceNames(branches[1]), ResourceNames(branches[2])...)
		}
		if sub, ok := x["Fn::Sub"].(string); ok {
			text := subRef.ReplaceAllStringFunc(sub, func(m string) string {
				if strings.HasPrefix(m, "${AWS::") {
					return m
				}
				return subRef.FindStringSubmatch(m)[1]
			})
			if i := strings.LastIndex(text, ":secret:"); strings.HasPrefix(text, "arn:") && i >= 0 {
				text = text[i+1:]
			}
			return []string{text}
		}
	}
	return []string{fmt.Sprint(v)}
}
