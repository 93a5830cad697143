package sam

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"genjobs/internal/checkout"
	"genjobs/internal/httpapi"
	"genjobs/internal/queue"
	"genjobs/internal/store/schema"
)

const repo = "../../.."

func loadRepoTemplate(t *testing.T) *Template {
	t.Helper()
	tpl, err := Load(filepath.Join(repo, "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return tpl
}

// makeTargets maps each build-<LogicalId> target of the Makefile to the
// function directory its recipe builds.
func makeTargets(t *testing.T) (map[string]string, string) {
	b, err := os.ReadFile(filepath.Join(repo, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	targets := map[string]string{}
	re := regexp.MustCompile(`(?m)^build-(\w+):\n\t\$\(call lambda_build,(\w+)\)`)
	for _, m := range re.FindAllStringSubmatch(text, -1) {
		targets[m[1]] = m[2]
	}
	return targets, text
}

func TestEveryFunctionIsAnArm64MakefileBuild(t *testing.T) {
	tpl := loadRepoTemplate(t)
	targets, makefile := makeTargets(t)
	for _, want := range []string{"CGO_ENABLED=0", "GOOS=linux", "GOARCH=arm64", "-tags lambda.norpc", "-trimpath", "-ldflags='-s -w'", "$(ARTIFACTS_DIR)/bootstrap"} {
		if !strings.Contains(makefile, want) {
			t.Errorf("the Makefile's Lambda build lacks %s", want)
		}
	}
	built := map[string]string{}
	for _, f := range tpl.Functions() {
		if f.Runtime != "provided.al2023" || fmt.Sprint(f.Architectures) != "[arm64]" || f.Handler != "bootstrap" {
			t.Errorf("%s: runtime %q, architectures %v, handler %q; want provided.al2023, [arm64], bootstrap", f.LogicalID, f.Runtime, f.Architectures, f.Handler)
		}
		if f.BuildMethod != "makefile" || f.CodeURI != "." {
			t.Errorf("%s: BuildMethod %q, CodeUri %q; want makefile and .", f.LogicalID, f.BuildMethod, f.CodeURI)
		}
		dir, ok := targets[f.LogicalID]
		if !ok {
			t.Errorf("%s: the Makefile has no build-%s target", f.LogicalID, f.LogicalID)
			continue
		}
		if _, err := os.Stat(filepath.Join(repo, "functions", dir, "main.go")); err != nil {
			t.Errorf("build-%s builds functions/%s, which has no main.go", f.LogicalID, dir)
		}
		built[dir] = f.LogicalID
	}
	entries, err := os.ReadDir(filepath.Join(repo, "functions"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if _, ok := built[e.Name()]; e.IsDir() && !ok {
			t.Errorf("functions/%s is not deployed by any function of template.yaml", e.Name())
		}
	}
}

func TestRoutesCoverTheAPI(t *testing.T) {
	var keys []string
	for _, r := range loadRepoTemplate(t).Routes() {
		keys = append(keys, r.Key()+" -> "+r.Function)
	}
	sort.Strings(keys)
	want := []string{
		"$default -> NotFoundFunction",
		"ANY /app/{proxy+} -> ConsoleFunction",
		"DELETE /jobs/{id} -> JobsFunction",
		"DELETE /mcp -> MCPFunction",
		"GET /.well-known/jwks.json -> JwksFunction",
		"GET /.well-known/oauth-authorization-server -> OAuthFunction",
		"GET /.well-known/oauth-protected-resource -> OAuthFunction",
		"GET /.well-known/oauth-protected-resource/mcp -> OAuthFunction",
		"GET /.well-known/openid-configuration -> OAuthFunction",
		"GET /app -> ConsoleFunction",
		"GET /assets/{id} -> AssetsFunction",
		"GET /jobs -> JobsFunction",
		"GET /jobs/{id} -> JobsFunction",
		"GET /jobs/{id}/deliveries -> JobsFunction",
		"GET /jobs/{id}/details -> JobsFunction",
		"GET /mcp -> MCPFunction",
		"GET /openapi.json -> OpenAPIFunction",
		"GET /styles -> StylesFunction",
		"GET /styles/{id}/share/link -> StylesFunction",
		"GET /usage -> UsageFunction",
		"POST /app/forgot-password -> ConsoleFunction",
		"POST /app/reset-password -> ConsoleFunction",
		"POST /app/set-password -> ConsoleFunction",
		"POST /app/sign-in -> ConsoleFunction",
		"POST /app/sign-in/mfa -> ConsoleFunction",
		"POST /assets -> AssetsFunction",
		"POST /assets/uploads -> AssetsFunction",
		"POST /callbacks/{provider}/{job_id}/{token} -> CallbacksFunction",
		"POST /generate/{kind}/{vendor}/{model} -> GenerateFunction",
		"POST /mcp -> MCPFunction",
		"POST /oauth/register -> OAuthFunction",
		"POST /oauth/revoke -> OAuthFunction",
		"POST /oauth/token -> OAuthFunction",
		"POST /webhooks/stripe -> StripeWebhookFunction",
		"PUT /callbacks/cog/uploads/{name} -> CallbacksFunction",
	}
	if fmt.Sprint(keys) != fmt.Sprint(want) {
		t.Errorf("routes:\n%s\nwant:\n%s", strings.Join(keys, "\n"), strings.Join(want, "\n"))
	}
}

func TestTableMatchesTheStore(t *testing.T) {
	props := loadRepoTemplate(t).Resources["Table"].Properties
	in := schema.TableInput("x")
	keys := func(v any) string {
		var out []string
		for _, k := range v.([]any) {
			m := k.(map[string]any)
			out = append(out, fmt.Sprint(m["AttributeName"], ":", m["KeyType"]))
		}
		return strings.Join(out, ",")
	}
	var wantKeys []string
	for _, k := range in.KeySchema {
		wantKeys = append(wantKeys, aws.ToString(k.AttributeName)+":"+string(k.KeyType))
	}
	if got := keys(props["KeySchema"]); got != strings.Join(wantKeys, ",") {
		t.Errorf("table keys %s; the store uses %s", got, strings.Join(wantKeys, ","))
	}
	gsis := map[string]map[string]any{}
	for _, g := range props["GlobalSecondaryIndexes"].([]any) {
		m := g.(map[string]any)
		gsis[m["IndexName"].(string)] = m
	}
	if len(gsis) != len(in.GlobalSecondaryIndexes) {
		t.Errorf("template has %d indexes; the store %d", len(gsis), len(in.GlobalSecondaryIndexes))
	}
	for _, want := range in.GlobalSecondaryIndexes {
		got, ok := gsis[aws.ToString(want.IndexName)]
		if !ok {
			t.Errorf("index %s is missing from template.yaml", aws.ToString(want.IndexName))
			continue
		}
		var wk []string
		for _, k := range want.KeySchema {
			wk = append(wk, aws.ToString(k.AttributeName)+":"+string(k.KeyType))
		}
		if keys(got["KeySchema"]) != strings.Join(wk, ",") {
			t.Errorf("index %s keys differ from the store's", aws.ToString(want.IndexName))
		}
		proj := got["Projection"].(map[string]any)
		attrs := fmt.Sprint(proj["NonKeyAttributes"])
		if proj["NonKeyAttributes"] == nil { // KEYS_ONLY, ALL
			attrs = fmt.Sprint([]string{})
		}
		if proj["ProjectionType"] != string(want.Projection.ProjectionType) || attrs != fmt.Sprint(want.Projection.NonKeyAttributes) {
			t.Errorf("index %s projection %v; the store uses %s %v", aws.ToString(want.IndexName), proj, want.Projection.ProjectionType, want.Projection.NonKeyAttributes)
		}
	}
	if got := props["StreamSpecification"].(map[string]any)["StreamViewType"]; got != "NEW_AND_OLD_IMAGES" {
		t.Errorf("stream view type %v; want NEW_AND_OLD_IMAGES", got)
	}
}

func TestQueuesAndKeyFollowTheDecisions(t *testing.T) {
	res := loadRepoTemplate(t).Resources
	q := res["JobsQueue"].Properties
	if q["VisibilityTimeout"] != queue.VisibilityTimeoutSeconds {
		t.Errorf("jobs queue visibility timeout %v; want %d", q["VisibilityTimeout"], queue.VisibilityTimeoutSeconds)
	}
	if rp := q["RedrivePolicy"].(map[string]any); rp["maxReceiveCount"] != queue.MaxReceiveCount {
		t.Errorf("maxReceiveCount %v; want %d", rp["maxReceiveCount"], queue.MaxReceiveCount)
	}
	// By type, not by name: a rotation renames the key's resource.
	keys := 0
	for id, r := range res {
		if r.Type != "AWS::KMS::Key" {
			continue
		}
		keys++
		if k := r.Properties; k["KeySpec"] != "ECC_NIST_P256" || k["KeyUsage"] != "SIGN_VERIFY" {
			t.Errorf("signing key %s: %v/%v; want ECC_NIST_P256/SIGN_VERIFY", id, k["KeySpec"], k["KeyUsage"])
		}
		// Replaced or removed by a rotation, it must live on: the JWKS lists
		// it until its last signature has expired. Only the create that made
		// it may delete it, when rolled back.
		if r.DeletionPolicy != "RetainExceptOnCreate" || r.UpdateReplacePolicy != "Retain" {
			t.Errorf("signing key %s: DeletionPolicy %q, UpdateReplacePolicy %q; want RetainExceptOnCreate, Retain", id, r.DeletionPolicy, r.UpdateReplacePolicy)
		}
	}
	if keys != 2 {
		t.Errorf("%d KMS keys; want the webhook signing key and the access-token key", keys)
	}
}

// What a stack deletion or a replacement does to data is written down, not
// left to CloudFormation's default (delete): cfn-lint's rule I3011.
func TestStatefulResourcesHaveExplicitDeletionPolicies(t *testing.T) {
	stateful := map[string]bool{"AWS::DynamoDB::Table": true, "AWS::S3::Bucket": true, "AWS::SQS::Queue": true,
		"AWS::KMS::Key": true, "AWS::Logs::LogGroup": true}
	for id, r := range loadRepoTemplate(t).Resources {
		if !stateful[r.Type] {
			continue
		}
		if r.DeletionPolicy == "" || r.UpdateReplacePolicy == "" {
			t.Errorf("%s (%s): DeletionPolicy %q, UpdateReplacePolicy %q; both must be set", id, r.Type, r.DeletionPolicy, r.UpdateReplacePolicy)
		}
		// Kept when the stack is deleted or they leave it, replaced or not;
		// deleted when the create that made them is rolled back (they hold
		// nothing yet, and a retried first deploy would meet them).
		if r.Type == "AWS::DynamoDB::Table" || r.Type == "AWS::S3::Bucket" {
			if r.DeletionPolicy != "RetainExceptOnCreate" || r.UpdateReplacePolicy != "Retain" {
				t.Errorf("%s: DeletionPolicy %s, UpdateReplacePolicy %s; want RetainExceptOnCreate (the data outlives the stack, a failed first create leaves nothing) and Retain",
					id, r.DeletionPolicy, r.UpdateReplacePolicy)
			}
		}
	}
}

// NewAccountMemoryMB is the most memory an account new to Lambda may give
// a function (AWS starts new accounts with a reduced memory quota).
const NewAccountMemoryMB = 3008

// A first deploy with the parameters' defaults works on a new account.
func TestDefaultsFitANewAccount(t *testing.T) {
	for _, f := range loadRepoTemplate(t).Functions() {
		if f.MemorySize > NewAccountMemoryMB {
			t.Errorf("%s: MemorySize %d MB by default; a new account may use %d (raise it with a parameter)", f.LogicalID, f.MemorySize, NewAccountMemoryMB)
		}
	}
}

func TestPoliciesAreLeastPrivilege(t *testing.T) {
	for _, f := range loadRepoTemplate(t).Functions() {
		text := fmt.Sprint(f.Policies)
		for _, bad := range []string{"dynamodb:*", "sqs:*", "kms:*", "Resource:*", "FullAccess", "CrudPolicy"} {
			if strings.Contains(strings.ReplaceAll(text, " ", ""), bad) {
				t.Errorf("%s: policy grants %s: %s", f.LogicalID, bad, text)
			}
		}
	}
}

// The console's call of Stripe's API, every attempt and pause included,
// ends before the console's own deadline, with time left for its table
// calls: otherwise Lambda would end a top-up half-way, its Checkout Session
// made and the top-up never told.
func TestTheConsoleOutlastsItsStripeCall(t *testing.T) {
	for _, f := range loadRepoTemplate(t).Functions() {
		if f.LogicalID != "ConsoleFunction" {
			continue
		}
		deadline := time.Duration(f.Timeout)*time.Second - httpapi.AnswerMargin
		if left := deadline - checkout.MaxCallTime; left < 2*time.Second {
			t.Errorf("ConsoleFunction: %s to answer, a Stripe call may take %s: %s left for the table, want at least 2s",
				deadline, checkout.MaxCallTime, left)
		}
		return
	}
	t.Fatal("no ConsoleFunction in template.yaml")
}
