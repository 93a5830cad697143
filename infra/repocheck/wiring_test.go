package repocheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// builderOf names the package whose Build a function's main starts, where
// it is not the function's own: the light worker is the worker's code on
// another queue.
var builderOf = map[string]string{"lightworker": "workerfn"}

// Every function is wired one way (docs/architecture.md, "Wiring"): its
// main is app.Start naming <name>fn.Build, each package under internal/app
// is a function's (<name>fn, exporting Build) or a package of constructors
// (<client>wire, exporting no Build), and no main or builder chooses its
// retries: Function.Handler does, by the function's kind.
func TestEveryFunctionIsWiredOneWay(t *testing.T) {
	root, _ := repository(t)
	mains, err := filepath.Glob(filepath.Join(root, "functions", "*", "main.go"))
	if err != nil || len(mains) == 0 {
		t.Fatalf("no functions/*/main.go (%v)", err)
	}
	for _, main := range mains {
		name := filepath.Base(filepath.Dir(main))
		pkg := builderOf[name]
		if pkg == "" {
			pkg = name + "fn"
		}
		f, err := parser.ParseFile(token.NewFileSet(), main, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		var imports []string
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			imports = append(imports, p)
		}
		if want := []string{"genjobs/internal/app", "genjobs/internal/app/" + pkg}; !slices.Equal(imports, want) {
			t.Errorf("functions/%s/main.go imports %v; want %v", name, imports, want)
		}
		if got := startCall(f); got != `app.Start("`+name+`", `+pkg+`.Build)` {
			t.Errorf("functions/%s/main.go: main is %q; want one call, app.Start(%q, app.Function{<kind>: %s.Build})", name, got, name, pkg)
		}
	}
	dirs, err := os.ReadDir(filepath.Join(root, "internal", "app"))
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range dirs {
		if !dir.IsDir() {
			continue
		}
		name := dir.Name()
		build := exportedFuncs(t, filepath.Join(root, "internal", "app", name))
		switch {
		case strings.HasSuffix(name, "fn") && !slices.Contains(build, "Build"):
			t.Errorf("internal/app/%s: a function's package exports its builder, Build", name)
		case strings.HasSuffix(name, "wire") && slices.Contains(build, "Build"):
			t.Errorf("internal/app/%s: a package of constructors holds no builder", name)
		case !strings.HasSuffix(name, "fn") && !strings.HasSuffix(name, "wire"):
			t.Errorf("internal/app/%s: a package here is a function's (<name>fn) or constructors' (<client>wire)", name)
		}
		if src := goSource(t, filepath.Join(root, "internal", "app", name)); strings.Contains(src, "Retries =") {
			t.Errorf("internal/app/%s sets Retries: the function's kind does (app.Function.Handler)", name)
		}
	}
}

// startCall is main's body as app.Start("name", pkg.Build) when it is one
// such call, else what it is.
func startCall(f *ast.File) string {
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Name.Name != "main" {
			continue
		}
		if len(fn.Body.List) != 1 {
			return "more than one statement"
		}
		stmt, ok := fn.Body.List[0].(*ast.ExprStmt)
		if !ok {
			return "not a call"
		}
		call, ok := stmt.X.(*ast.CallExpr)
		if !ok || len(call.Args) != 2 || spell(call.Fun) != "app.Start" {
			return "not app.Start"
		}
		lit, ok := call.Args[0].(*ast.BasicLit)
		fnLit, ok2 := call.Args[1].(*ast.CompositeLit)
		if !ok || !ok2 || spell(fnLit.Type) != "app.Function" || len(fnLit.Elts) != 1 {
			return "not app.Start with a name and one builder"
		}
		kv, ok := fnLit.Elts[0].(*ast.KeyValueExpr)
		if !ok || !slices.Contains([]string{"HTTP", "SQS", "Schedule", "Stream"}, spell(kv.Key)) {
			return "not a kind of function"
		}
		return "app.Start(" + lit.Value + ", " + spell(kv.Value) + ")"
	}
	return "no main"
}

// spell spells a name or a selector: app.Start, workerfn.Build.
func spell(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return spell(e.X) + "." + e.Sel.Name
	}
	return ""
}

// exportedFuncs are the exported functions (not methods) of the package in
// dir, tests left out.
func exportedFuncs(t *testing.T, dir string) []string {
	t.Helper()
	var names []string
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && fn.Name.IsExported() {
				names = append(names, fn.Name.Name)
			}
		}
	}
	return names
}

// goSource is the package in dir's Go source, tests left out.
func goSource(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(src)
	}
	return b.String()
}
