package provider_test

import (
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"genjobs/internal/catalog"
	"genjobs/internal/provider"
)

// TestDocumentedRoutingParses: every routes document docs/providers.md
// shows (a JSON example keyed by endpoint paths) is valid: the Replicate
// routing of three endpoints and the fal routing among them.
func TestDocumentedRoutingParses(t *testing.T) {
	doc, err := os.ReadFile("../../docs/providers.md")
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.New()
	if err != nil {
		t.Fatal(err)
	}
	providers := map[string]int{}
	for rest := string(doc); ; {
		start := strings.Index(rest, "```json\n")
		if start < 0 {
			break
		}
		rest = rest[start+8:]
		end := strings.Index(rest, "```")
		if end < 0 {
			t.Fatal("an unclosed JSON example")
		}
		example := rest[:end]
		rest = rest[end+3:]
		if !strings.HasPrefix(strings.TrimSpace(example), `{
  "/generate/`) {
			continue // not a routes document
		}
		routes, err := provider.ParseRoutes(example, cat)
		if err != nil {
			t.Fatalf("%v in\n%s", err, example)
		}
		for _, r := range routes {
			providers[r.Provider]++
		}
	}
	if providers[provider.Replicate] != 3 || providers[provider.Fal] != 1 || providers[provider.Cog] != 1 {
		t.Fatalf("routes by provider %v; the examples show 3 on Replicate, 1 on fal and 1 on Cog", providers)
	}
}

// TestTheCogExampleRoutesToItsModel: examples/cog-model's routes.json is a
// valid routes document, its Cog route sends every input the example's
// predict.py takes and no other, and docs/providers.md's Cog route maps
// the same fields to the same inputs.
func TestTheCogExampleRoutesToItsModel(t *testing.T) {
	cat, err := catalog.New()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../../examples/cog-model/routes.json")
	if err != nil {
		t.Fatal(err)
	}
	routes, err := provider.ParseRoutes(string(doc), cat)
	if err != nil || len(routes) != 1 {
		t.Fatalf("examples/cog-model/routes.json: %d routes, %v; want one", len(routes), err)
	}
	var route *provider.Route
	for _, r := range routes {
		route = r
	}
	if route.Provider != provider.Cog {
		t.Fatalf("the example's route is %s; want cog", route.Provider)
	}
	src, err := os.ReadFile("../../examples/cog-model/predict.py")
	if err != nil {
		t.Fatal(err)
	}
	// predict's parameters: "        name: type = Input(".
	var inputs []string
	for _, m := range regexp.MustCompile(`(?m)^\s+(\w+): \w+ = Input\(`).FindAllStringSubmatch(string(src), -1) {
		inputs = append(inputs, m[1])
	}
	sent := slices.Sorted(maps.Values(route.Input))
	if slices.Sort(inputs); len(inputs) == 0 || !slices.Equal(sent, inputs) {
		t.Errorf("the route sends %v; predict.py takes %v", sent, inputs)
	}
	cfg, err := os.ReadFile("../../examples/cog-model/cog.yaml")
	if err != nil || !strings.Contains(string(cfg), `predict: "predict.py:Predictor"`) {
		t.Errorf("cog.yaml does not name predict.py:Predictor (%v)", err)
	}
	guide, err := os.ReadFile("../../docs/providers.md")
	if err != nil {
		t.Fatal(err)
	}
	start := strings.Index(string(guide), "```json\n{\n  \""+route.Endpoint+`": {`+"\n    \"provider\": \"cog\"")
	if start < 0 {
		t.Fatalf("docs/providers.md shows no Cog route of %s", route.Endpoint)
	}
	rest := string(guide)[start+len("```json\n"):]
	documented, err := provider.ParseRoutes(rest[:strings.Index(rest, "```")], cat)
	if err != nil {
		t.Fatal(err)
	}
	if got := documented[route.Endpoint].Input; !maps.Equal(got, route.Input) {
		t.Errorf("docs/providers.md's Cog route maps %v; the example's %v", got, route.Input)
	}
}
