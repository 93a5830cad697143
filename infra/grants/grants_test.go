package grants

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"genjobs/infra/local/sam"
	"genjobs/internal/app"
)

const repo = "../.."

var analysis struct {
	once sync.Once
	fns  map[string]*Function
	err  error
}

// analyzed is the analysis of the repository's functions, made once.
func analyzed(t *testing.T) map[string]*Function {
	t.Helper()
	analysis.once.Do(func() { analysis.fns, analysis.err = Analyze(repo) })
	if analysis.err != nil {
		t.Fatal(analysis.err)
	}
	return analysis.fns
}

func template(t *testing.T) *sam.Template {
	t.Helper()
	tpl, err := sam.Load(repo + "/template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return tpl
}

// needs writes what the code reaches as template grants: the environment
// variable's value in f's environment names the resource.
func needs(f sam.Function, code *Function) (map[sam.Grant]string, []string) {
	out := map[sam.Grant]string{}
	var problems []string
	for _, a := range code.Accesses {
		v, ok := f.Environment[a.Resource.Env]
		if !ok {
			problems = append(problems, fmt.Sprintf("its code (%s) makes %s on the resource of %s, which template.yaml does not set for it",
				a.Where, a.Action, a.Resource.Env))
			continue
		}
		for _, name := range sam.ResourceNames(v) {
			suffix := a.Resource.Suffix
			if strings.HasPrefix(a.Action, "secretsmanager:") {
				// A prefix ("{stack}/providers/") names the secrets under
				// it; a whole name ("{stack}/stripe") one secret, whose
				// ARN ends in "-" and six random characters.
				if !strings.HasSuffix(name, "/") {
					suffix = "-*"
				}
				name = "secret:" + name
			}
			out[sam.Grant{Action: a.Action, Resource: name + suffix}] = a.Where
		}
	}
	return out, problems
}

// compare lists what f's policies lack of what its code needs, and what
// they grant that no code of it reaches. s3:ListBucket on a bucket goes
// with reading its objects (without it S3 answers a missing key 403, not
// 404), so it is needed by no code and allowed beside a read.
func compare(f sam.Function, granted []sam.Grant, need map[sam.Grant]string) (missing, unused []string) {
	for _, g := range sortedGrants(need) {
		if !slices.Contains(granted, g) {
			missing = append(missing, fmt.Sprintf("%s (%s)", g, need[g]))
		}
	}
	for _, g := range granted {
		if _, ok := need[g]; ok {
			continue
		}
		if g.Action == "s3:ListBucket" && readsFrom(need, g.Resource) {
			continue
		}
		unused = append(unused, g.String())
	}
	return missing, unused
}

func readsFrom(need map[sam.Grant]string, bucket string) bool {
	for g := range need {
		if g.Action == "s3:GetObject" && strings.HasPrefix(g.Resource, bucket+"/") {
			return true
		}
	}
	return false
}

func sortedGrants(m map[sam.Grant]string) []sam.Grant {
	var out []sam.Grant
	for g := range m {
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b sam.Grant) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// Every function's policies grant exactly what its code can do: what its
// handlers reach of queues, buckets, the table and its indexes, keys and
// secrets. A function added to template.yaml is checked as soon as it is
// there; one whose requests the analysis cannot trace fails, naming them.
func TestTemplateGrantsWhatTheCodeReachesAndNothingElse(t *testing.T) {
	tpl, fns := template(t), analyzed(t)
	inTemplate := map[string]bool{}
	for _, f := range tpl.Functions() {
		name := app.FunctionName(f.LogicalID)
		inTemplate[name] = true
		code, ok := fns[name]
		if !ok {
			t.Errorf("%s: no functions/%s to read its code from", f.LogicalID, name)
			continue
		}
		for _, u := range code.Unresolved {
			t.Errorf("%s: cannot tell what %s acts on; make it traceable (package grants says how)", f.LogicalID, u)
		}
		need, problems := needs(f, code)
		for _, p := range problems {
			t.Errorf("%s: %s", f.LogicalID, p)
		}
		granted, err := tpl.Grants(f)
		if err != nil {
			t.Error(err)
			continue
		}
		missing, unused := compare(f, granted, need)
		for _, m := range missing {
			t.Errorf("%s: its code needs %s; template.yaml does not grant it (AccessDenied in AWS)", f.LogicalID, m)
		}
		for _, u := range unused {
			t.Errorf("%s: template.yaml grants %s, which none of its code reaches", f.LogicalID, u)
		}
	}
	for name := range fns {
		if !inTemplate[name] {
			t.Errorf("functions/%s has no function in template.yaml", name)
		}
	}
}

// The facts the audit found, read from the code: a light worker ending a
// job promotes the backlog, whose routed jobs go to the provider queue; the
// provider reads callbacks' bodies but no results, and writes results but
// no callbacks; the notifier sends to the deliveries queue alone (its
// DLQ is Lambda's on-failure destination, which SAM grants); Stripe's
// webhook reaches none of the console's Cognito calls.
func TestTheAnalysisFindsWhatTheAuditFound(t *testing.T) {
	fns := analyzed(t)
	has := func(fn, action, env, suffix string) bool {
		for _, a := range fns[fn].Accesses {
			if a.Action == action && a.Resource == (Resource{Env: env, Suffix: suffix}) {
				return true
			}
		}
		return false
	}
	for _, c := range []struct {
		fn, action, env, suffix string
		want                    bool
	}{
		{"lightworker", "sqs:SendMessage", "PROVIDER_QUEUE_URL", "", true},
		{"worker", "sqs:SendMessage", "PROVIDER_QUEUE_URL", "", true},
		{"provider", "s3:GetObject", "RESULTS_BUCKET", "/callbacks/*", true},
		{"provider", "s3:GetObject", "RESULTS_BUCKET", "/results/*", false},
		{"provider", "s3:PutObject", "RESULTS_BUCKET", "/results/*", true},
		{"provider", "s3:PutObject", "RESULTS_BUCKET", "/callbacks/*", false},
		{"notifier", "sqs:SendMessage", "DELIVERIES_QUEUE_URL", "", true},
		{"notifier", "sqs:SendMessage", "DELIVERIES_DLQ_URL", "", false},
		{"deliverer", "kms:Sign", "SIGNING_KEY_ID", "", true},
		{"jwks", "kms:GetPublicKey", "SIGNING_PREVIOUS_KEY_ID", "", true},
		{"jobs", "dynamodb:Query", "TABLE_NAME", "/index/jobs-by-workspace", true},
		{"styles", "dynamodb:BatchGetItem", "TABLE_NAME", "", true},
		// Stripe's webhook, public, reads its keys and the table only: no
		// Cognito grant (the console's) is within reach of its requests.
		{"stripewebhook", "secretsmanager:GetSecretValue", "STRIPE_SECRET_ID", "*", true},
		{"stripewebhook", "dynamodb:PutItem", "TABLE_NAME", "", true},
		{"stripewebhook", "cognito-idp:AdminCreateUser", "COGNITO_USER_POOL_ID", "", false},
		{"console", "cognito-idp:AdminCreateUser", "COGNITO_USER_POOL_ID", "", true},
	} {
		if got := has(c.fn, c.action, c.env, c.suffix); got != c.want {
			t.Errorf("%s: %s on %s%s found = %v, want %v; it found %v", c.fn, c.action, c.env, c.suffix, got, c.want, fns[c.fn].Accesses)
		}
	}
}

// The comparison reports a grant taken away and one added, and nothing
// else: the worker's needs written as its policy, minus one, plus one.
func TestTheCheckReportsAMissingAndAnUnusedGrant(t *testing.T) {
	tpl, fns := template(t), analyzed(t)
	var worker sam.Function
	for _, f := range tpl.Functions() {
		if f.LogicalID == "WorkerFunction" {
			worker = f
		}
	}
	need, problems := needs(worker, fns["worker"])
	if len(problems) > 0 || len(need) < 2 {
		t.Fatalf("the worker's needs: %v, problems %v", need, problems)
	}
	all := sortedGrants(need)
	dropped := all[0]
	granted := append([]sam.Grant(nil), all[1:]...)
	added := sam.Grant{Action: "s3:GetObject", Resource: "ResultsBucket/callbacks/*"}
	granted = append(granted, added, sam.Grant{Action: "s3:ListBucket", Resource: "AssetsBucket"})
	missing, unused := compare(worker, granted, need)
	if len(missing) != 1 || !strings.HasPrefix(missing[0], dropped.String()+" (") {
		t.Errorf("missing = %q; want only %s", missing, dropped)
	}
	if fmt.Sprint(unused) != fmt.Sprint([]string{added.String()}) {
		t.Errorf("unused = %q; want only %s (ListBucket beside a read is allowed)", unused, added)
	}
}

// The analysis on a function made for it: a queue traced through a field
// to its environment variable, a handler reached though only handed over,
// and, reported rather than passed over, a queue it cannot name and a
// request of a service it does not know.
func TestTheAnalysisTracesAndReportsWhatItCannot(t *testing.T) {
	fns, err := AnalyzePackages(".", "./testdata/functions/...")
	if err != nil {
		t.Fatal(err)
	}
	f := fns["fixture"]
	if f == nil {
		t.Fatalf("the fixture was not analysed: %v", fns)
	}
	var got []string
	for _, a := range f.Accesses {
		got = append(got, a.Action+" "+a.Resource.Env+a.Resource.Suffix)
	}
	if want := []string{"sqs:DeleteMessage B_QUEUE_URL", "sqs:SendMessage A_QUEUE_URL"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("accesses %q; want %q", got, want)
	}
	problems := strings.Join(f.Unresolved, "\n")
	for _, want := range []string{"cloudformation:DescribeStacks at ", "a service the analysis does not know", "sqs:SendMessage at ", "its queue "} {
		if !strings.Contains(problems, want) {
			t.Errorf("unresolved %q; want it to say %q", f.Unresolved, want)
		}
	}
	if len(f.Unresolved) != 2 {
		t.Errorf("%d unresolved; want the 2 the fixture makes: %q", len(f.Unresolved), f.Unresolved)
	}
}
