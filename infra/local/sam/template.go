// Package sam reads template.yaml: the functions, their HTTP routes and
// their triggers (SQS and DynamoDB stream event source mappings, and
// schedules), the queues and tables they name, and the functions'
// environments. The local runner plays API Gateway and the
// event sources from it, so the template stays the one source of truth.
package sam

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"genjobs/internal/httpapi/apigw"
)

// Template is the part of a SAM template the runner and the tests read.
type Template struct {
	Transform  string               `yaml:"Transform"`
	Parameters map[string]Parameter `yaml:"Parameters"`
	Mappings   map[string]any       `yaml:"Mappings"`
	Conditions map[string]any       `yaml:"Conditions"`
	Globals    Globals              `yaml:"Globals"`
	Resources  map[string]Resource  `yaml:"Resources"`
	Outputs    map[string]any       `yaml:"Outputs"`
}

// Parameter is one template parameter.
type Parameter struct {
	Type          string `yaml:"Type"`
	Default       any    `yaml:"Default"`
	AllowedValues []any  `yaml:"AllowedValues"`
	Description   string `yaml:"Description"`
}

// Globals holds the function defaults.
type Globals struct {
	Function map[string]any `yaml:"Function"`
}

// Resource is one resource; Properties stay generic.
type Resource struct {
	Type                string         `yaml:"Type"`
	DeletionPolicy      string         `yaml:"DeletionPolicy"`
	UpdateReplacePolicy string         `yaml:"UpdateReplacePolicy"`
	Metadata            map[string]any `yaml:"Metadata"`
	Properties          map[string]any `yaml:"Properties"`
}

// Function is an AWS::Serverless::Function with the globals applied.
type Function struct {
	LogicalID     string
	CodeURI       string
	Handler       string
	Runtime       string
	Architectures []string
	BuildMethod   string
	Timeout       int // seconds; 0 when neither the function nor Globals set it (Lambda's default is 3)
	MemorySize    int // MB; 0 when neither the function nor Globals set it (Lambda's default is 128)
	Environment   map[string]any
	Policies      any
	Events        map[string]Event
	// RecursiveLoop is Allow or Terminate; "" when unset (Lambda's default
	// then is Terminate).
	RecursiveLoop string
}

// Event is one trigger of a function.
type Event struct {
	Type       string         `yaml:"Type"`
	Properties map[string]any `yaml:"Properties"`
}

// Load reads and parses a template file.
func Load(path string) (*Template, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(b)
}

// Parse reads a template, turning the intrinsic short forms (!Ref, !GetAtt,
// !Sub, ...) into their long forms.
func Parse(b []byte) (*Template, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(b, &root); err != nil {
		return nil, fmt.Errorf("template: %w", err)
	}
	if err := expandShortForms(&root); err != nil {
		return nil, err
	}
	var t Template
	if err := root.Decode(&t); err != nil {
		return nil, fmt.Errorf("template: %w", err)
	}
	return &t, nil
}

func expandShortForms(n *yaml.Node) error {
	for _, c := range n.Content {
		if err := expandShortForms(c); err != nil {
			return err
		}
	}
	tag := n.Tag
	if !strings.HasPrefix(tag, "!") || strings.HasPrefix(tag, "!!") {
		return nil
	}
	name := "Fn::" + tag[1:]
	if tag == "!Ref" {
		name = "Ref"
	}
	value := *n
	value.Tag = ""
	switch value.Kind {
	case yaml.ScalarNode:
		value.Tag = "!!str"
		if tag == "!GetAtt" { // !GetAtt A.B is ["A", "B"]
			res, attr, ok := strings.Cut(value.Value, ".")
			if !ok {
				return fmt.Errorf("template line %d: !GetAtt %q has no attribute", n.Line, value.Value)
			}
			value = yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: []*yaml.Node{
				{Kind: yaml.ScalarNode, Tag: "!!str", Value: res},
				{Kind: yaml.ScalarNode, Tag: "!!str", Value: attr},
			}}
		}
	case yaml.SequenceNode:
		value.Tag = "!!seq"
	case yaml.MappingNode:
		value.Tag = "!!map"
	}
	*n = yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: n.Line, Content: []*yaml.Node{
		{Kind: yaml.ScalarNode, Tag: "!!str", Value: name}, &value,
	}}
	return nil
}

// Functions lists the serverless functions, sorted by logical id, with the
// function globals applied.
func (t *Template) Functions() []Function {
	var out []Function
	for id, r := range t.Resources {
		if r.Type != "AWS::Serverless::Function" {
			continue
		}
		prop := func(name string) any {
			if v, ok := r.Properties[name]; ok {
				return v
			}
			return t.Globals.Function[name]
		}
		f := Function{LogicalID: id, Events: map[string]Event{}, Policies: r.Properties["Policies"]}
		f.CodeURI, _ = prop("CodeUri").(string)
		f.Handler, _ = prop("Handler").(string)
		f.Runtime, _ = prop("Runtime").(string)
		f.Timeout = t.intValue(prop("Timeout"))
		f.MemorySize = t.intValue(prop("MemorySize"))
		f.BuildMethod, _ = r.Metadata["BuildMethod"].(string)
		f.RecursiveLoop, _ = prop("RecursiveLoop").(string)
		if archs, ok := prop("Architectures").([]any); ok {
			for _, a := range archs {
				s, _ := a.(string)
				f.Architectures = append(f.Architectures, s)
			}
		}
		f.Environment = map[string]any{}
		for _, src := range []any{t.Globals.Function["Environment"], r.Properties["Environment"]} {
			if env, ok := src.(map[string]any); ok {
				if vars, ok := env["Variables"].(map[string]any); ok {
					for k, v := range vars {
						f.Environment[k] = v
					}
				}
			}
		}
		if events, ok := r.Properties["Events"].(map[string]any); ok {
			for name, raw := range events {
				ev, _ := raw.(map[string]any)
				typ, _ := ev["Type"].(string)
				props, _ := ev["Properties"].(map[string]any)
				f.Events[name] = Event{Type: typ, Properties: props}
			}
		}
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].LogicalID < out[j].LogicalID })
	return out
}

// intValue reads a whole number written as such or as a Ref to a parameter
// (its default); 0 otherwise.
func (t *Template) intValue(v any) int {
	if m, ok := v.(map[string]any); ok && len(m) == 1 {
		id, _ := m["Ref"].(string)
		if p, ok := t.Parameters[id]; ok {
			v = p.Default
		}
	}
	n, _ := v.(int)
	return n
}

// Routes lists the HttpApi routes of every function, sorted by key.
func (t *Template) Routes() []apigw.Route {
	var out []apigw.Route
	for _, f := range t.Functions() {
		for _, ev := range f.Events {
			if ev.Type != "HttpApi" {
				continue
			}
			method, _ := ev.Properties["Method"].(string)
			path, _ := ev.Properties["Path"].(string)
			if path == "/$default" || path == "$default" {
				path = "$default"
			}
			timeout := apigw.IntegrationTimeout
			if ms, ok := ev.Properties["TimeoutInMillis"].(int); ok && ms >= 50 && ms <= 30000 {
				timeout = time.Duration(ms) * time.Millisecond
			}
			out = append(out, apigw.Route{Method: strings.ToUpper(method), Path: path, Function: f.LogicalID, Timeout: timeout})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key() < out[j].Key() })
	return out
}
