// Package grants derives from the code what each function can do in AWS:
// which actions on which queues, buckets (and key prefixes), table and
// indexes, KMS keys, secrets and Cognito user pools. Its test holds
// template.yaml's policies to it, both ways: a grant the code needs and
// lacks is an AccessDenied in AWS, and a grant no code reaches is privilege
// nobody asked for.
//
// The derivation reads the code, not a list: every function under
// functions/ is compiled to SSA; what its main can reach (its handlers
// included, since a function value that is made is taken as called) is
// searched for the requests it builds: an SDK input (sqs.SendMessageInput,
// dynamodb.types.Put, s3.GetObjectInput, ...) or a presigned URL
// (s3url.Presigner). The resource of each is traced back through fields,
// parameters and calls to where it comes from: an environment variable
// (TABLE_NAME, PROVIDER_QUEUE_URL; the template says which resource that is)
// and, for indexes and object keys, a string constant ("jobs-by-status",
// "results/%s/%d.%s"). A resource the trace cannot name is reported, so that
// new code fails loudly rather than passing unchecked.
package grants

import (
	"fmt"
	"go/constant"
	"go/token"
	"go/types"
	"path"
	"slices"
	"sort"
	"strings"

	"golang.org/x/tools/go/packages"
	"golang.org/x/tools/go/ssa"
	"golang.org/x/tools/go/ssa/ssautil"
)

// Module is the module path of the code analysed.
const Module = "genjobs"

// Resource is what a request acts on, as the code names it: the
// environment variable that holds the table name, queue URL, bucket, key id
// or secret prefix, and what the request adds to it: "/index/<name>" for an
// index, "/<prefix>*" for the objects under a key prefix, "*" for the
// secrets under a name prefix; "" for the resource itself.
type Resource struct {
	Env    string
	Suffix string
}

// Access is one IAM action on one resource that a function's code can make.
type Access struct {
	Action   string // "sqs:SendMessage", "dynamodb:Query", ...
	Resource Resource
	// Where is a position of code that makes the request.
	Where string
}

// Function is what the code of one function (functions/<name>) reaches.
type Function struct {
	Name     string
	Accesses []Access
	// Unresolved lists requests whose resource the trace could not name,
	// with their positions: each must be made traceable.
	Unresolved []string
}

// Analyze compiles every function under dir/functions and returns what
// each can reach, by functions/ directory name.
func Analyze(dir string) (map[string]*Function, error) {
	return AnalyzePackages(dir, "./functions/...")
}

// AnalyzePackages is Analyze of the main packages patterns match.
func AnalyzePackages(dir string, patterns ...string) (map[string]*Function, error) {
	cfg := &packages.Config{Mode: packages.LoadSyntax, Dir: dir}
	pkgs, err := packages.Load(cfg, patterns...)
	if err != nil {
		return nil, err
	}
	// The functions' own packages and every package of the module they
	// import, with bodies; the rest (the SDK, the standard library) from
	// their types: what the code asks of them is in the calls.
	var module []*packages.Package
	seen := map[string]bool{}
	var visit func(p *packages.Package)
	visit = func(p *packages.Package) {
		if seen[p.PkgPath] || (p.PkgPath != Module && !strings.HasPrefix(p.PkgPath, Module+"/")) {
			return
		}
		seen[p.PkgPath] = true
		module = append(module, p)
		for _, imp := range p.Imports {
			visit(imp)
		}
	}
	for _, p := range pkgs {
		visit(p)
	}
	if n := packages.PrintErrors(module); n > 0 {
		return nil, fmt.Errorf("%d errors loading the functions' packages", n)
	}
	// Load the module's imported packages with syntax too.
	var paths []string
	for _, p := range module {
		paths = append(paths, p.PkgPath)
	}
	pkgs, err = packages.Load(cfg, paths...)
	if err != nil {
		return nil, err
	}
	if n := packages.PrintErrors(pkgs); n > 0 {
		return nil, fmt.Errorf("%d errors loading the functions' packages", n)
	}
	prog, ssaPkgs := ssautil.Packages(pkgs, ssa.InstantiateGenerics)
	prog.Build()
	a := newAnalyzer(prog)
	out := map[string]*Function{}
	mains := map[string]bool{}
	for _, p := range module {
		if p.Name == "main" {
			mains[p.PkgPath] = true
		}
	}
	for _, p := range ssaPkgs {
		if p == nil || !mains[p.Pkg.Path()] {
			continue
		}
		name := path.Base(p.Pkg.Path())
		out[name] = a.function(name, p)
	}
	return out, nil
}

// analyzer holds the whole program's indexes: every store to a field, and
// every call edge, so that a value can be traced to where it comes from.
type analyzer struct {
	prog *ssa.Program
	// funcs are the module's functions with bodies.
	funcs []*ssa.Function
	// fieldStores: the values stored in each struct field anywhere in the
	// module (a field read may come from any of them: the data goes through
	// the table from one function to another).
	fieldStores map[fieldKey][]ssa.Value
	// mapUpdates: the values put into the maps held in each field.
	mapUpdates map[fieldKey][]ssa.Value
	// globalStores: the values stored in package-level variables.
	globalStores map[*ssa.Global][]ssa.Value
	// callers: every call site of each function, statically or through an
	// interface (any method of that name and signature, as CHA would say).
	callers map[*ssa.Function][]site
	names   map[*types.Struct]*types.TypeName
}

type fieldKey struct {
	strct *types.Struct
	field int
}

// site is a call of a function: the arguments its parameters take.
type site struct {
	call *ssa.CallCommon
	in   *ssa.Function
	// invoke: the call is through an interface; the receiver is the
	// call's Value, not its first argument.
	invoke bool
}

func newAnalyzer(prog *ssa.Program) *analyzer {
	a := &analyzer{prog: prog, fieldStores: map[fieldKey][]ssa.Value{}, mapUpdates: map[fieldKey][]ssa.Value{},
		globalStores: map[*ssa.Global][]ssa.Value{}, callers: map[*ssa.Function][]site{}}
	for fn := range ssautil.AllFunctions(prog) {
		// The module's functions, and the wrappers Go makes (a promoted
		// method of an embedded adapter is called through one).
		if fn.Blocks != nil && (fn.Pkg == nil || inModule(fn.Pkg.Pkg)) {
			a.funcs = append(a.funcs, fn)
		}
	}
	sort.Slice(a.funcs, func(i, j int) bool { return a.funcs[i].String() < a.funcs[j].String() })
	methods := map[string][]*ssa.Function{} // by name, for interface calls
	for _, fn := range a.funcs {
		if fn.Signature.Recv() != nil {
			methods[fn.Name()] = append(methods[fn.Name()], fn)
		}
	}
	for _, fn := range a.funcs {
		for _, b := range fn.Blocks {
			for _, instr := range b.Instrs {
				switch in := instr.(type) {
				case *ssa.Store:
					if k, ok := fieldOf(in.Addr); ok {
						a.fieldStores[k] = append(a.fieldStores[k], in.Val)
					}
					if g, ok := in.Addr.(*ssa.Global); ok {
						a.globalStores[g] = append(a.globalStores[g], in.Val)
					}
				case *ssa.MapUpdate:
					if k, ok := fieldOfValue(in.Map); ok {
						a.mapUpdates[k] = append(a.mapUpdates[k], in.Value)
					}
				case ssa.CallInstruction:
					c := in.Common()
					if callee := c.StaticCallee(); callee != nil {
						a.callers[callee] = append(a.callers[callee], site{call: c, in: fn})
					} else if c.IsInvoke() {
						for _, m := range methods[c.Method.Name()] {
							if types.Identical(dropRecv(m.Signature), c.Method.Type().(*types.Signature)) &&
								types.Implements(m.Signature.Recv().Type(), c.Value.Type().Underlying().(*types.Interface)) {
								a.callers[m] = append(a.callers[m], site{call: c, in: fn, invoke: true})
							}
						}
					}
				}
			}
		}
	}
	return a
}

func inModule(p *types.Package) bool {
	return p != nil && (p.Path() == Module || strings.HasPrefix(p.Path(), Module+"/"))
}

func dropRecv(s *types.Signature) *types.Signature {
	return types.NewSignatureType(nil, nil, nil, s.Params(), s.Results(), s.Variadic())
}

// fieldOf names the field an address points at (&x.f).
func fieldOf(addr ssa.Value) (fieldKey, bool) {
	fa, ok := addr.(*ssa.FieldAddr)
	if !ok {
		return fieldKey{}, false
	}
	st, ok := typeparamsDeref(fa.X.Type()).Underlying().(*types.Struct)
	return fieldKey{st, fa.Field}, ok
}

// fieldOfValue names the field a value was read from (x.f or *&x.f).
func fieldOfValue(v ssa.Value) (fieldKey, bool) {
	switch v := v.(type) {
	case *ssa.UnOp:
		if v.Op == token.MUL {
			return fieldOf(v.X)
		}
	case *ssa.Field:
		st, ok := v.X.Type().Underlying().(*types.Struct)
		return fieldKey{st, v.Field}, ok
	}
	return fieldKey{}, false
}

func typeparamsDeref(t types.Type) types.Type {
	if p, ok := t.Underlying().(*types.Pointer); ok {
		return p.Elem()
	}
	return t
}

// reachable is what a function's main and inits can run: static calls,
// interface calls to the methods of types made into interfaces, and every
// function made into a value (a handler handed to lambda.Start is called
// by reflection, out of the analysis' sight).
// from records, for each function, one it was reached from.
func (a *analyzer) reachable(p *ssa.Package) (seen map[*ssa.Function]bool, from map[*ssa.Function]*ssa.Function) {
	seen, from = map[*ssa.Function]bool{}, map[*ssa.Function]*ssa.Function{}
	var queue []*ssa.Function
	var current *ssa.Function
	add := func(fn *ssa.Function) {
		if fn != nil && !seen[fn] {
			seen[fn] = true
			from[fn] = current
			queue = append(queue, fn)
		}
	}
	add(p.Func("main"))
	add(p.Func("init"))
	runtimeTypes := map[types.Type]bool{}
	var invokes []*ssa.CallCommon
	addType := func(t types.Type) {
		if runtimeTypes[t] {
			return
		}
		runtimeTypes[t] = true
		for _, c := range invokes {
			a.dispatch(c, t, add)
		}
	}
	for len(queue) > 0 {
		fn := queue[0]
		queue = queue[1:]
		current = fn
		for _, b := range fn.Blocks {
			for _, instr := range b.Instrs {
				if mi, ok := instr.(*ssa.MakeInterface); ok {
					addType(mi.X.Type())
					a.outsideCalls(mi, add)
				}
				if c, ok := instr.(ssa.CallInstruction); ok && c.Common().IsInvoke() {
					invokes = append(invokes, c.Common())
					for t := range runtimeTypes {
						a.dispatch(c.Common(), t, add)
					}
				}
				for _, op := range instr.Operands(nil) {
					switch v := (*op).(type) {
					case *ssa.Function:
						add(v)
					case *ssa.MakeClosure:
						add(v.Fn.(*ssa.Function))
					}
				}
			}
		}
	}
	return seen, from
}

// trail is how fn was reached: the module's functions from the handler's
// builder down, at most the last few.
func trail(fn *ssa.Function, from map[*ssa.Function]*ssa.Function) string {
	var names []string
	for ; fn != nil; fn = from[fn] {
		if fn.Pkg != nil && inModule(fn.Pkg.Pkg) {
			names = append(names, strings.TrimPrefix(fn.RelString(nil), Module+"/internal/"))
		}
	}
	slices.Reverse(names)
	if len(names) > 6 {
		names = append([]string{"..."}, names[len(names)-5:]...)
	}
	return strings.Join(names, " -> ")
}

// outsideCalls adds the methods code outside the module may call on a
// value made into one of its interfaces (jwt.SigningMethod's Sign): that
// code is read without bodies, so its calls are not seen.
func (a *analyzer) outsideCalls(mi *ssa.MakeInterface, add func(*ssa.Function)) {
	named, ok := mi.Type().(*types.Named)
	if !ok || named.Obj().Pkg() == nil || inModule(named.Obj().Pkg()) {
		return
	}
	iface, _ := named.Underlying().(*types.Interface)
	for i := 0; iface != nil && i < iface.NumMethods(); i++ {
		m := iface.Method(i)
		if sel := a.prog.MethodSets.MethodSet(mi.X.Type()).Lookup(m.Pkg(), m.Name()); sel != nil {
			add(a.prog.MethodValue(sel))
		}
	}
}

// dispatch adds the method an interface call reaches on type t, if t has it.
func (a *analyzer) dispatch(c *ssa.CallCommon, t types.Type, add func(*ssa.Function)) {
	iface, ok := c.Value.Type().Underlying().(*types.Interface)
	if !ok || !types.Implements(t, iface) {
		return
	}
	if sel := a.prog.MethodSets.MethodSet(t).Lookup(c.Method.Pkg(), c.Method.Name()); sel != nil {
		add(a.prog.MethodValue(sel))
	}
}

// request is one AWS request a reachable function builds: the action, and
// the values naming its resource (the table, queue, bucket, key or secret
// first, then the index or object key, when the request has one).
type request struct {
	action string
	values []ssa.Value
	fn     *ssa.Function
	pos    token.Pos
}

// services are the SDK packages whose inputs are requests, and the fields
// that name their resources.
var services = map[string][]string{
	"github.com/aws/aws-sdk-go-v2/service/dynamodb":       {"TableName", "IndexName", "RequestItems"},
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types": {"TableName"},
	"github.com/aws/aws-sdk-go-v2/service/sqs":            {"QueueUrl"},
	"github.com/aws/aws-sdk-go-v2/service/s3":             {"Bucket", "Key"},
	"github.com/aws/aws-sdk-go-v2/service/kms":            {"KeyId"},
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager": {"SecretId"},
	// The console's user pool. Sign-in (InitiateAuth,
	// RespondToAuthChallenge) and a reset by code (ForgotPassword,
	// ConfirmForgotPassword) are public: no grant, and no pool named.
	"github.com/aws/aws-sdk-go-v2/service/cognitoidentityprovider": {"UserPoolId"},
}

// isRequestOfAnotherService tells an SDK request input of a service
// missing from services.
func isRequestOfAnotherService(pkg, typeName string) bool {
	const prefix = "github.com/aws/aws-sdk-go-v2/service/"
	rest, ok := strings.CutPrefix(pkg, prefix)
	return ok && !strings.Contains(rest, "/") && strings.HasSuffix(typeName, "Input")
}

// action is the IAM action a request of the SDK type typeName in package
// pkg needs: its operation's, save where IAM names it otherwise; "" for a
// type that is no request.
func action(pkg, typeName string) string {
	switch pkg {
	case "github.com/aws/aws-sdk-go-v2/service/dynamodb/types":
		// The items of a transaction each need their own action.
		return map[string]string{"Put": "dynamodb:PutItem", "Update": "dynamodb:UpdateItem",
			"Delete": "dynamodb:DeleteItem", "ConditionCheck": "dynamodb:ConditionCheckItem", "Get": "dynamodb:GetItem"}[typeName]
	}
	op, ok := strings.CutSuffix(typeName, "Input")
	if !ok {
		return ""
	}
	svc := path.Base(pkg)
	switch {
	case svc == "cognitoidentityprovider" && (op == "InitiateAuth" || op == "RespondToAuthChallenge" ||
		op == "ForgotPassword" || op == "ConfirmForgotPassword"):
		return "" // an app client's own calls, which IAM does not authorise
	case svc == "cognitoidentityprovider" && (op == "AssociateSoftwareToken" || op == "VerifySoftwareToken" ||
		op == "SetUserMFAPreference" || op == "ChangePassword" || op == "GlobalSignOut"):
		return "" // a person's calls on their own account, authorised by their access token (or a challenge's session), not IAM
	case svc == "cognitoidentityprovider":
		return "cognito-idp:" + op
	case svc == "dynamodb" && (op == "TransactWriteItems" || op == "TransactGetItems"):
		return "" // authorised item by item
	case svc == "s3" && (op == "CreateMultipartUpload" || op == "UploadPart" || op == "CompleteMultipartUpload"):
		op = "PutObject"
	case svc == "s3" && op == "HeadObject":
		op = "GetObject"
	case svc == "s3" && op == "ListObjectsV2":
		op = "ListBucket"
	}
	return svc + ":" + op
}

// presigners are the functions that mint presigned URLs: a URL acts with
// the signer's rights, so minting one needs the action it allows. The
// arguments at 2 and 3 are the bucket and key.
var presigners = map[string]string{
	"(*genjobs/internal/blob/s3url.Presigner).GetURL": "s3:GetObject",
	"(*genjobs/internal/blob/s3url.Presigner).PutURL": "s3:PutObject",
}

// requests lists the requests the reachable functions build.
func (a *analyzer) requests(reach map[*ssa.Function]bool) []request {
	var out []request
	for _, fn := range a.funcs {
		if !reach[fn] {
			continue
		}
		for _, b := range fn.Blocks {
			for _, instr := range b.Instrs {
				switch in := instr.(type) {
				case *ssa.Alloc:
					named, ok := typeparamsDeref(in.Type()).(*types.Named)
					if !ok || named.Obj().Pkg() == nil {
						continue
					}
					pkg := named.Obj().Pkg().Path()
					fields, ok := services[pkg]
					if !ok && isRequestOfAnotherService(pkg, named.Obj().Name()) {
						// A service the analysis does not know: say so rather
						// than pass its requests unchecked.
						out = append(out, request{action: path.Base(pkg) + ":" + strings.TrimSuffix(named.Obj().Name(), "Input"), fn: fn, pos: in.Pos()})
						continue
					}
					act := action(pkg, named.Obj().Name())
					if !ok || act == "" {
						continue
					}
					r := request{action: act, fn: fn, pos: in.Pos()}
					st := named.Underlying().(*types.Struct)
					for _, name := range fields {
						r.values = append(r.values, storedIn(in, st, name))
					}
					out = append(out, r)
				case ssa.CallInstruction:
					if callee := in.Common().StaticCallee(); callee != nil {
						if act, ok := presigners[callee.String()]; ok {
							args := in.Common().Args
							out = append(out, request{action: act, fn: fn, pos: instr.Pos(), values: []ssa.Value{args[2], args[3]}})
						}
					}
				}
			}
		}
	}
	return out
}

// storedIn is the value stored in field name of the struct allocated by
// alloc (nil when none is: the field is unset; the last one when several).
func storedIn(alloc *ssa.Alloc, st *types.Struct, name string) ssa.Value {
	var v ssa.Value
	for _, ref := range *alloc.Referrers() {
		fa, ok := ref.(*ssa.FieldAddr)
		if !ok || st.Field(fa.Field).Name() != name {
			continue
		}
		for _, r := range *fa.Referrers() {
			if s, ok := r.(*ssa.Store); ok && s.Addr == fa {
				v = s.Val
			}
		}
	}
	return v
}

// origin is where a value comes from: an environment variable, a string
// constant, or neither (why says what the trace met).
type origin struct {
	env, konst, why string
}

// function is what the code of one function reaches.
func (a *analyzer) function(name string, p *ssa.Package) *Function {
	reach, from := a.reachable(p)
	f := &Function{Name: name}
	seen := map[string]bool{}
	for _, r := range a.requests(reach) {
		where := a.prog.Fset.Position(r.pos).String()
		if i := strings.Index(where, "/internal/"); i >= 0 {
			where = where[i+1:]
		}
		where += ", reached " + trail(r.fn, from)
		for _, tuple := range a.resolve(r.fn, r.values, reach, 0) {
			res, problem := resource(r.action, tuple)
			if problem != "" {
				f.Unresolved = append(f.Unresolved, fmt.Sprintf("%s at %s: %s", r.action, where, problem))
				continue
			}
			key := r.action + " " + res.Env + res.Suffix
			if !seen[key] {
				seen[key] = true
				f.Accesses = append(f.Accesses, Access{Action: r.action, Resource: res, Where: where})
			}
		}
	}
	sort.Slice(f.Accesses, func(i, j int) bool {
		x, y := f.Accesses[i], f.Accesses[j]
		return x.Action+x.Resource.Env+x.Resource.Suffix < y.Action+y.Resource.Env+y.Resource.Suffix
	})
	sort.Strings(f.Unresolved)
	f.Unresolved = compact(f.Unresolved)
	return f
}

func compact(s []string) []string {
	var out []string
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// resource names what a request acts on from the origins of its values.
func resource(act string, tuple []origin) (Resource, string) {
	if len(tuple) == 0 {
		return Resource{}, "a request of a service the analysis does not know: add the fields naming its resources to services"
	}
	id := tuple[0]
	if strings.HasPrefix(act, "dynamodb:") && id.why == "unset" && len(tuple) > 2 {
		id = tuple[2] // a batch: its items by table name
	}
	if id.env == "" {
		return Resource{}, "its " + idName(act) + " " + describe(id)
	}
	r := Resource{Env: id.env}
	switch {
	case strings.HasPrefix(act, "secretsmanager:"):
		r.Suffix = "*" // a name under the prefix
	case strings.HasPrefix(act, "s3:") && act != "s3:ListBucket":
		key := tuple[1]
		if key.konst == "" {
			return Resource{}, "its object key " + describe(key)
		}
		prefix, _, ok := strings.Cut(key.konst, "/")
		if !ok {
			return Resource{}, fmt.Sprintf("its object key %q has no prefix/", key.konst)
		}
		r.Suffix = "/" + prefix + "/*"
	case strings.HasPrefix(act, "dynamodb:") && len(tuple) > 1:
		switch ix := tuple[1]; {
		case ix.konst != "":
			r.Suffix = "/index/" + ix.konst
		case ix.why != "unset":
			return Resource{}, "its index " + describe(ix)
		}
	}
	return r, ""
}

func idName(act string) string {
	switch strings.Split(act, ":")[0] {
	case "sqs":
		return "queue"
	case "s3":
		return "bucket"
	case "kms":
		return "key"
	case "secretsmanager":
		return "secret"
	case "cognito-idp":
		return "user pool"
	}
	return "table"
}

func describe(o origin) string {
	switch {
	case o.konst != "":
		return fmt.Sprintf("is the constant %q, not an environment variable", o.konst)
	case o.why == "unset":
		return "is never set"
	}
	return "comes from " + o.why
}

// maxDepth bounds the trace through calls.
const maxDepth = 30

// resolve lists the origins the values of a request can have together. A
// value that is a parameter of fn takes, at each call site, the argument
// given there (all values at once, so that a bucket and a key stay paired);
// the others are traced each on their own.
func (a *analyzer) resolve(fn *ssa.Function, values []ssa.Value, reach map[*ssa.Function]bool, depth int) [][]origin {
	values = append([]ssa.Value(nil), values...)
	params := false
	for i, v := range values {
		values[i] = peel(v)
		if p, ok := values[i].(*ssa.Parameter); ok && p.Parent() == fn {
			params = true
		}
	}
	if params && depth < maxDepth {
		sites := a.sitesOf(fn, reach)
		if len(sites) == 0 {
			return [][]origin{{{why: "parameters of " + fn.String() + ", which nothing reachable calls"}}}
		}
		var out [][]origin
		for _, s := range sites {
			next := make([]ssa.Value, len(values))
			for i, v := range values {
				next[i] = v
				if p, ok := v.(*ssa.Parameter); ok && p.Parent() == fn {
					next[i] = s.arg(fn, p)
				}
			}
			out = append(out, a.resolve(s.in, next, reach, depth+1)...)
		}
		return out
	}
	// Each on its own: the cross product of their origins.
	out := [][]origin{{}}
	for _, v := range values {
		var os []origin
		if v == nil {
			os = []origin{{why: "unset"}}
		} else {
			os = a.origins(v, reach, map[ssa.Value]bool{}, depth)
			if len(os) == 0 {
				os = []origin{{why: fmt.Sprintf("%s, which the trace could not follow", v)}}
			}
		}
		var next [][]origin
		for _, t := range out {
			for _, o := range os {
				next = append(next, append(append([]origin(nil), t...), o))
			}
		}
		out = next
	}
	return out
}

// sitesOf lists the call sites of fn: the reachable ones when fn is
// reachable, else any (fn was met through a field some other code stores).
func (a *analyzer) sitesOf(fn *ssa.Function, reach map[*ssa.Function]bool) []site {
	var out []site
	for _, s := range a.callers[fn] {
		if !reach[fn] || reach[s.in] {
			out = append(out, s)
		}
	}
	return out
}

// arg is the argument a call site gives parameter p of fn.
func (s site) arg(fn *ssa.Function, p *ssa.Parameter) ssa.Value {
	i := 0
	for i = range fn.Params {
		if fn.Params[i] == p {
			break
		}
	}
	if s.invoke {
		if i == 0 {
			return s.call.Value
		}
		return s.call.Args[i-1]
	}
	if i < len(s.call.Args) {
		return s.call.Args[i]
	}
	return nil
}

// peel takes off what changes a value's form and not its origin:
// conversions, and the SDK's pointer helpers (aws.String).
func peel(v ssa.Value) ssa.Value {
	for {
		switch x := v.(type) {
		case *ssa.ChangeType:
			v = x.X
		case *ssa.Convert:
			v = x.X
		case *ssa.MakeInterface:
			v = x.X
		case *ssa.Call:
			callee := x.Call.StaticCallee()
			if callee == nil || callee.Pkg == nil || callee.Pkg.Pkg.Path() != "github.com/aws/aws-sdk-go-v2/aws" || len(x.Call.Args) != 1 {
				return v
			}
			v = x.Call.Args[0]
		default:
			return v
		}
	}
}

// origins traces a value back to where it comes from.
func (a *analyzer) origins(v ssa.Value, reach map[*ssa.Function]bool, visiting map[ssa.Value]bool, depth int) []origin {
	v = peel(v)
	if visiting[v] || depth > maxDepth {
		return nil // a cycle, or too deep: what it adds is found another way
	}
	visiting[v] = true
	defer delete(visiting, v)
	more := func(vs ...ssa.Value) []origin {
		var out []origin
		for _, w := range vs {
			out = append(out, a.origins(w, reach, visiting, depth+1)...)
		}
		return out
	}
	switch x := v.(type) {
	case *ssa.Const:
		if x.Value != nil && x.Value.Kind() == constant.String && constant.StringVal(x.Value) != "" {
			return []origin{{konst: constant.StringVal(x.Value)}}
		}
		return nil // nil, zero or "": names nothing
	case *ssa.Phi:
		return more(x.Edges...)
	case *ssa.MakeMap: // a batch's items by table: the names are the keys
		var out []origin
		for _, r := range *x.Referrers() {
			if u, ok := r.(*ssa.MapUpdate); ok && u.Map == x {
				out = append(out, more(u.Key)...)
			}
		}
		return out
	case *ssa.Slice:
		return more(x.X)
	case *ssa.Index:
		return more(x.X)
	case *ssa.Alloc: // an array or slice: what is stored in its elements
		var out []origin
		for _, r := range *x.Referrers() {
			if ia, ok := r.(*ssa.IndexAddr); ok {
				for _, rr := range *ia.Referrers() {
					if s, ok := rr.(*ssa.Store); ok && s.Addr == ia {
						out = append(out, more(s.Val)...)
					}
				}
			}
		}
		return out
	case *ssa.BinOp:
		if x.Op == token.ADD { // a concatenation: the left part names it
			return more(x.X)
		}
	case *ssa.Parameter:
		var out []origin
		for _, s := range a.sitesOf(x.Parent(), reach) {
			if arg := s.arg(x.Parent(), x); arg != nil {
				out = append(out, more(arg)...)
			}
		}
		if len(out) == 0 {
			return []origin{{why: "a parameter of " + x.Parent().String() + " no call gives"}}
		}
		return out
	case *ssa.FreeVar:
		var out []origin
		fn := x.Parent()
		idx := 0
		for i, fv := range fn.FreeVars {
			if fv == x {
				idx = i
			}
		}
		for _, parent := range a.funcs {
			for _, b := range parent.Blocks {
				for _, instr := range b.Instrs {
					if mc, ok := instr.(*ssa.MakeClosure); ok && mc.Fn == fn {
						out = append(out, more(mc.Bindings[idx])...)
					}
				}
			}
		}
		return out
	case *ssa.UnOp:
		if x.Op != token.MUL {
			break
		}
		if k, ok := fieldOf(x.X); ok {
			return a.field(k, more)
		}
		switch addr := x.X.(type) {
		case *ssa.IndexAddr: // an element: what the slice holds
			return more(addr.X)
		case *ssa.Global:
			return more(a.globalStores[addr]...)
		case *ssa.Alloc, *ssa.FreeVar, *ssa.Parameter:
			var out []origin
			if al, ok := addr.(*ssa.Alloc); ok {
				for _, r := range *al.Referrers() {
					if s, ok := r.(*ssa.Store); ok && s.Addr == al {
						out = append(out, more(s.Val)...)
					}
				}
				return out
			}
			return more(addr)
		}
	case *ssa.Field:
		if k, ok := fieldOfValue(x); ok {
			return a.field(k, more)
		}
	case *ssa.Lookup:
		if k, ok := fieldOfValue(x.X); ok {
			return more(a.mapUpdates[k]...)
		}
	case *ssa.Extract:
		if l, ok := x.Tuple.(*ssa.Lookup); ok && x.Index == 0 {
			return more(l)
		}
		if c, ok := x.Tuple.(*ssa.Call); ok {
			return a.returned(c, x.Index, more)
		}
	case *ssa.Call:
		c := x.Call
		// A func(string) string given a constant name: the configuration
		// read from the environment (app.Config's getenv).
		if c.StaticCallee() == nil && !c.IsInvoke() && len(c.Args) == 1 {
			if k, ok := c.Args[0].(*ssa.Const); ok && k.Value != nil && k.Value.Kind() == constant.String {
				if sig, ok := c.Value.Type().Underlying().(*types.Signature); ok && sig.Results().Len() == 1 &&
					types.Identical(sig.Results().At(0).Type(), types.Typ[types.String]) {
					return []origin{{env: constant.StringVal(k.Value)}}
				}
			}
		}
		if b, ok := c.Value.(*ssa.Builtin); ok && b.Name() == "append" {
			return more(c.Args...)
		}
		if callee := c.StaticCallee(); callee != nil {
			switch callee.String() {
			case "os.Getenv":
				if k, ok := c.Args[0].(*ssa.Const); ok && k.Value != nil && k.Value.Kind() == constant.String {
					return []origin{{env: constant.StringVal(k.Value)}}
				}
			case "fmt.Sprintf", "strings.TrimSuffix", "strings.TrimPrefix", "strings.TrimSpace":
				return more(c.Args[0]) // the format, or the string trimmed
			}
		}
		return a.returned(x, 0, more)
	}
	what := fmt.Sprintf("%s (%T)", v, v)
	if fn := v.Parent(); fn != nil {
		what += " in " + fn.String()
	}
	return []origin{{why: what}}
}

// field is what a struct field can hold: whatever any code stores in it.
func (a *analyzer) field(k fieldKey, more func(...ssa.Value) []origin) []origin {
	if stores := a.fieldStores[k]; len(stores) > 0 {
		return more(stores...)
	}
	name := a.fieldName(k)
	if src, ok := carried[name]; ok {
		return a.carriedFrom(src, more)
	}
	tn := a.structNames()[k.strct]
	if tn != nil && tn.Pkg() != nil && strings.HasPrefix(tn.Pkg().Path(), "github.com/aws/aws-sdk-go-v2/service/") &&
		strings.HasSuffix(tn.Name(), "Output") {
		// An answer names what was asked (a GetPublicKeyOutput's KeyId
		// is the key of its input); a field only answers have (a batch's
		// UnprocessedKeys) holds what the request held, traced there.
		in := strings.TrimSuffix(tn.Name(), "Output") + "Input"
		for sk := range a.fieldStores {
			if n := a.structNames()[sk.strct]; n != nil && n.Name() == in && n.Pkg() == tn.Pkg() &&
				sk.strct.Field(sk.field).Name() == k.strct.Field(k.field).Name() {
				return more(a.fieldStores[sk]...)
			}
		}
		return nil
	}
	return []origin{{why: "the field " + name + ", which no code sets (filled from the table? then say in carried which code writes it there)"}}
}

// carried names, for a field filled from the table (attributevalue
// unmarshals it: no code sets it), where the values written to the table
// come from: a field ("pkg.Type.Field") or a parameter
// ("(*pkg.Type).Method#param") of the code that writes the attribute.
var carried = map[string]string{
	// A job's result keys: JSON in its item, written by a transition.
	"genjobs/internal/job.Job.Outputs": "genjobs/internal/job.Change.Outputs",
	// The key of a verified callback's body, stashed on the job's item.
	"genjobs/internal/store/submissionsdb.submissionItem.Callback": "(*genjobs/internal/store/submissionsdb.DB).StashCallback#blobKey",
	// A listed object's key starts with the prefix the list asked for.
	"github.com/aws/aws-sdk-go-v2/service/s3/types.Object.Key": "github.com/aws/aws-sdk-go-v2/service/s3.ListObjectsV2Input.Prefix",
}

// carriedFrom is what the code named by src writes.
func (a *analyzer) carriedFrom(src string, more func(...ssa.Value) []origin) []origin {
	if fn, param, ok := strings.Cut(src, "#"); ok {
		for _, f := range a.funcs {
			if f.String() != fn {
				continue
			}
			for _, p := range f.Params {
				if p.Name() == param {
					return more(p)
				}
			}
		}
		return []origin{{why: "carried names " + src + ", which does not exist"}}
	}
	for k, stores := range a.fieldStores {
		if a.fieldName(k) == src {
			return more(stores...)
		}
	}
	return []origin{{why: "carried names " + src + ", which no code sets"}}
}

// fieldName is "pkg.Type.Field", or "struct{...}.Field" for an unnamed struct.
func (a *analyzer) fieldName(k fieldKey) string {
	f := k.strct.Field(k.field).Name()
	if tn := a.structNames()[k.strct]; tn != nil && tn.Pkg() != nil {
		return tn.Pkg().Path() + "." + tn.Name() + "." + f
	}
	return "struct{...}." + f
}

// structNames maps each named struct type of the program to its name.
func (a *analyzer) structNames() map[*types.Struct]*types.TypeName {
	if a.names != nil {
		return a.names
	}
	a.names = map[*types.Struct]*types.TypeName{}
	for _, p := range a.prog.AllPackages() {
		for _, m := range p.Members {
			if t, ok := m.(*ssa.Type); ok {
				if st, ok := t.Type().Underlying().(*types.Struct); ok {
					a.names[st] = t.Object().(*types.TypeName)
				}
			}
		}
	}
	return a.names
}

// returned is what a call's result index gives: what its callee returns,
// its parameters taking this call's arguments.
func (a *analyzer) returned(call *ssa.Call, index int, more func(...ssa.Value) []origin) []origin {
	callee := call.Call.StaticCallee()
	if callee == nil || callee.Blocks == nil {
		return []origin{{why: "the result of " + call.Call.String()}}
	}
	var out []origin
	for _, b := range callee.Blocks {
		ret, ok := b.Instrs[len(b.Instrs)-1].(*ssa.Return)
		if !ok || index >= len(ret.Results) {
			continue
		}
		r := peel(ret.Results[index])
		for concat, ok := r.(*ssa.BinOp); ok && concat.Op == token.ADD; concat, ok = r.(*ssa.BinOp) {
			r = peel(concat.X)
		}
		if p, ok := r.(*ssa.Parameter); ok && p.Parent() == callee {
			for i, q := range callee.Params {
				if q == p && i < len(call.Call.Args) {
					out = append(out, more(call.Call.Args[i])...)
				}
			}
			continue
		}
		out = append(out, more(r)...)
	}
	return out
}
