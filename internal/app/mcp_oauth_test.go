package app_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	awskms "github.com/aws/aws-sdk-go-v2/service/kms"
	kmstypes "github.com/aws/aws-sdk-go-v2/service/kms/types"
	"github.com/golang-jwt/jwt/v5"

	"genjobs/internal/app/mcpfn"
	"genjobs/internal/awsclient"
	"genjobs/internal/billing"
	"genjobs/internal/clock"
	"genjobs/internal/emulator"
	"genjobs/internal/httpapi/lambdatest"
	"genjobs/internal/job"
	"genjobs/internal/member"
	"genjobs/internal/oauthtoken"
	"genjobs/internal/signing"
	"genjobs/internal/signing/kmssigner"
	"genjobs/internal/store/accountsdb"
	"genjobs/internal/store/membersdb"
	"genjobs/internal/store/oauthdb"
	"genjobs/internal/testenv"
)

// oauthStack is the MCP function on the stack, with a person who is a
// member of ws_a and a connection (a grant) of theirs to it, on a clock
// the test moves.
type oauthStack struct {
	*stack
	clock  *clock.Fixed
	signer *kmssigner.Signer // the access-token key, as the oauth function signs with it
	grant  oauthdb.Grant
	h      http.Handler
}

const (
	oauthPerson = "usr_ana"
	oauthEmail  = "ana@example.com"
	oauthBase   = "https://api.test"
)

func newOAuthStack(t *testing.T) *oauthStack {
	t.Helper()
	s := newStack(t)
	ctx := context.Background()
	clk := &clock.Fixed{T: time.Now().UTC().Truncate(time.Second)}
	s.d.Clock = clk
	o := &oauthStack{stack: s, clock: clk, signer: kmssigner.New(testenv.KMS(t), s.d.Signing.OAuthKeyID)}
	if err := membersdb.New(s.store).AddMember(ctx, member.Membership{WorkspaceID: "ws_a", UserID: oauthPerson,
		Email: oauthEmail, Role: member.Member, AddedAt: clk.T}); err != nil {
		t.Fatal(err)
	}
	db := oauthdb.New(s.store)
	if err := db.IssueCode(ctx, "code-1", oauthdb.Code{ClientID: "oc_1", RedirectURI: "https://assistant.test/cb",
		Challenge: "c", Resource: oauthBase + "/mcp", Scope: "jobs", UserID: oauthPerson, WorkspaceID: "ws_a", CreatedAt: clk.T}); err != nil {
		t.Fatal(err)
	}
	o.grant = oauthdb.Grant{ID: oauthdb.NewID("grt_"), ClientID: "oc_1", ClientName: "Assistant", RedirectURI: "https://assistant.test/cb",
		UserID: oauthPerson, WorkspaceID: "ws_a", Scope: "jobs", Resource: oauthBase + "/mcp", CreatedAt: clk.T}
	if err := db.Redeem(ctx, "code-1", o.grant, "refresh-1", clk.T); err != nil {
		t.Fatal(err)
	}
	o.h = s.build(mcpfn.Build)
	return o
}

// claims are a good access token's claims for the connection, issued now.
func (o *oauthStack) claims() oauthtoken.Claims {
	return oauthtoken.Claims{Issuer: oauthBase, Audience: oauthBase + "/mcp", Subject: oauthPerson, Workspace: "ws_a",
		Scope: "jobs", ClientID: "oc_1", Grant: o.grant.ID, ID: oauthdb.NewID("at_"), IssuedAt: o.clock.T}
}

func (o *oauthStack) issue(s signing.Signer, c oauthtoken.Claims) string {
	o.t.Helper()
	tok, err := oauthtoken.Issue(context.Background(), s, c)
	if err != nil {
		o.t.Fatal(err)
	}
	return tok
}

// call sends one tools/call to /mcp through the Lambda adapter with the
// Authorization header authz ("" for none).
func (o *oauthStack) call(authz, tool string, args map[string]any) answer {
	o.t.Helper()
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": tool, "arguments": args}})
	if err != nil {
		o.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), lambdaTimeout)
	defer cancel()
	req := httptest.NewRequest("POST", oauthBase+"/mcp", strings.NewReader(string(body))).WithContext(ctx)
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	rec := lambdatest.Serve(o.h, req)
	return answer{rec.Code, rec.Header(), rec.Body.String()}
}

func (o *oauthStack) jobs() []*job.Job {
	o.t.Helper()
	page, err := o.store.ListJobs(context.Background(), "ws_a", job.Query{Limit: 10})
	if err != nil {
		o.t.Fatal(err)
	}
	var out []*job.Job
	for _, j := range page.Jobs {
		full, err := o.store.Job(context.Background(), j.ID)
		if err != nil {
			o.t.Fatal(err)
		}
		out = append(out, full)
	}
	return out
}

const challengeNoToken = `Bearer resource_metadata="https://api.test/.well-known/oauth-protected-resource/mcp"`
const challengeBadToken = challengeNoToken + `, error="invalid_token"`

// want401 checks a refusal of /mcp: 401 with the challenge that leads a
// client to sign in, and nothing created.
func (o *oauthStack) want401(what string, call func() answer, challenge string) {
	o.t.Helper()
	before := len(o.jobs())
	out := call()
	if out.StatusCode != http.StatusUnauthorized || out.Headers.Get("WWW-Authenticate") != challenge {
		o.t.Errorf("%s: %d, WWW-Authenticate %q, %s; want 401 with %s", what, out.StatusCode, out.Headers.Get("WWW-Authenticate"), out.Body, challenge)
	}
	if n := len(o.jobs()) - before; n != 0 {
		o.t.Errorf("%s: %d jobs created; want none", what, n)
	}
}

// A tool called through an OAuth connection creates a job billed in compute
// units to the connection's workspace, attributed to the person, source
// mcp; the API balance is untouched. Out of compute units, the tool says so
// and creates nothing. The same call with the workspace's API token is
// billed in USD as before.
func TestAnOAuthConnectionsJobsAreBilledInComputeUnitsToThePerson(t *testing.T) {
	o := newOAuthStack(t)
	ctx := context.Background()
	bearer := "Bearer " + o.issue(o.signer, o.claims())

	isError, text := toolResult(t, o.call(bearer, "generate_image_model_e_4", smallImageArgs))
	if !isError || text != "Your workspace has run out of compute units." {
		t.Errorf("without compute units: isError %v, %q; want the out-of-units refusal", isError, text)
	}
	if n := len(o.jobs()); n != 0 {
		t.Fatalf("%d jobs after the refusal; want none", n)
	}
	wantBalance(t, o.stack, funded, 0)

	if _, err := accountsdb.New(o.store).SetPlan(ctx, "ws_a", 1000, o.clock.T); err != nil {
		t.Fatal(err)
	}
	if isError, text := toolResult(t, o.call(bearer, "generate_image_model_e_4", smallImageArgs)); isError {
		t.Fatalf("with compute units: %q", text)
	}
	jobs := o.jobs()
	if len(jobs) != 1 {
		t.Fatalf("%d jobs; want 1", len(jobs))
	}
	j := jobs[0]
	if j.Currency != billing.CurrencyCU || j.Units <= 0 || j.PersonID != oauthPerson || j.CreatedBy != oauthEmail || j.Source != job.SourceMCP {
		t.Errorf("the job: currency %q, %d units, person %q, created by %q, source %q; want cu, its price in units, %s, %s, mcp",
			j.Currency, j.Units, j.PersonID, j.CreatedBy, j.Source, oauthPerson, oauthEmail)
	}
	wantBalance(t, o.stack, funded, 0)
	units, _, err := accountsdb.New(o.store).Units(ctx, "ws_a")
	if err != nil || units.Reserved != j.Units {
		t.Errorf("compute units %+v, %v; want %d reserved", units, err, j.Units)
	}

	// The workspace's API token, on the same function instance: USD.
	if isError, text := toolResult(t, o.call("Bearer "+o.token, "generate_image_model_e_4", smallImageArgs)); isError {
		t.Fatalf("with the API token: %q", text)
	}
	var usd *job.Job
	for _, j := range o.jobs() {
		if j.Currency == billing.CurrencyUSD {
			usd = j
		}
	}
	if usd == nil || usd.PersonID != "" || usd.Source != job.SourceMCP {
		t.Errorf("the API token's job: %+v; want one billed in USD to no person", usd)
	}
}

// Without a token /mcp answers the challenge that sends a client to the
// protected resource metadata, and to signing in; with a token it cannot
// use, the same with error="invalid_token".
func TestMCPChallengesAClientToSignIn(t *testing.T) {
	o := newOAuthStack(t)
	for _, c := range []struct{ name, authz, challenge string }{
		{"no token", "", challengeNoToken},
		{"a token that is neither kind", "Bearer abc.def.ghi", challengeBadToken},
		{"an unknown API token", "Bearer gjs_" + strings.Repeat("a", 43), challengeBadToken},
	} {
		o.want401(c.name, func() answer { return o.call(c.authz, "generate_image_model_e_4", smallImageArgs) }, c.challenge)
	}
}

// An access token is taken only if it is this resource's: for its
// audience, from its issuer, unexpired, signed by the access-token key,
// typed at+jwt, and for the grant of its own person and workspace. Each
// other one is a 401 through the Lambda adapter, and creates nothing.
func TestMCPRefusesAnAccessTokenThatIsNotItsOwn(t *testing.T) {
	o := newOAuthStack(t)
	ctx := context.Background()
	if _, err := accountsdb.New(o.store).SetPlan(ctx, "ws_a", 1000, o.clock.T); err != nil {
		t.Fatal(err)
	}
	other, err := testenv.KMS(t).CreateKey(ctx, &awskms.CreateKeyInput{
		KeySpec: kmstypes.KeySpecEccNistP256, KeyUsage: kmstypes.KeyUsageTypeSignVerify,
	})
	if err != nil {
		t.Fatal(err)
	}
	otherKey := kmssigner.New(testenv.KMS(t), *other.KeyMetadata.Arn)
	// Another member of the workspace, who did not approve the connection.
	if err := membersdb.New(o.store).AddMember(ctx, member.Membership{WorkspaceID: "ws_a", UserID: "usr_other",
		Email: "bo@example.com", Role: member.Member, AddedAt: o.clock.T}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		token func() string
	}{
		{"another audience", func() string {
			c := o.claims()
			c.Audience = oauthBase + "/other"
			return o.issue(o.signer, c)
		}},
		{"another issuer", func() string {
			c := o.claims()
			c.Issuer = "https://elsewhere.test"
			return o.issue(o.signer, c)
		}},
		{"expired", func() string {
			c := o.claims()
			c.IssuedAt = o.clock.T.Add(-oauthtoken.Lifetime - time.Second)
			return o.issue(o.signer, c)
		}},
		{"signed by another key", func() string { return o.issue(otherKey, o.claims()) }},
		{"signed by another key under the key's own kid", func() string {
			// The header of a token of the access-token key, the claims
			// and signature of one of another key.
			good, forged := strings.Split(o.issue(o.signer, o.claims()), "."), strings.Split(o.issue(otherKey, o.claims()), ".")
			return good[0] + "." + forged[1] + "." + forged[2]
		}},
		{"a webhook token's type", func() string {
			c := o.claims()
			tok, err := signing.SignJWT(ctx, o.signer, "JWT", jwt.MapClaims{"iss": c.Issuer, "aud": c.Audience, "sub": c.Subject,
				"workspace": c.Workspace, "scope": c.Scope, "client_id": c.ClientID, "grant": c.Grant, "jti": c.ID,
				"iat": c.IssuedAt.Unix(), "exp": c.IssuedAt.Add(time.Hour).Unix()})
			if err != nil {
				t.Fatal(err)
			}
			return tok
		}},
		{"another member's grant", func() string {
			c := o.claims()
			c.Subject = "usr_other"
			return o.issue(o.signer, c)
		}},
		{"an unknown grant", func() string {
			c := o.claims()
			c.Grant = "grt_unknown"
			return o.issue(o.signer, c)
		}},
	}
	// The good token works: each refusal below is its difference alone.
	if isError, text := toolResult(t, o.call("Bearer "+o.issue(o.signer, o.claims()), "list_jobs", map[string]any{"limit": 1})); isError {
		t.Fatalf("a good token: %q", text)
	}
	for _, c := range cases {
		o.want401(c.name, func() answer { return o.call("Bearer "+c.token(), "generate_image_model_e_4", smallImageArgs) }, challengeBadToken)
	}
}

// A revoked connection, and the connection of a person removed from the
// workspace, are refused at most 5 seconds later (the cache API tokens
// have), through the Lambda adapter.
func TestMCPRefusesARevokedConnectionOrARemovedMemberWithinFiveSeconds(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(o *oauthStack) error
	}{
		{"revoked", func(o *oauthStack) error {
			return oauthdb.New(o.store).RevokeGrant(context.Background(), o.grant.ID, o.clock.T)
		}},
		{"member removed", func(o *oauthStack) error {
			return membersdb.New(o.store).RemoveMember(context.Background(), "ws_a", oauthPerson)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := newOAuthStack(t)
			bearer := "Bearer " + o.issue(o.signer, o.claims())
			args := map[string]any{"limit": 1}
			if isError, text := toolResult(t, o.call(bearer, "list_jobs", args)); isError {
				t.Fatalf("before: %q", text)
			}
			if err := c.change(o); err != nil {
				t.Fatal(err)
			}
			o.clock.T = o.clock.T.Add(5 * time.Second)
			o.want401("5 s after", func() answer { return o.call(bearer, "list_jobs", args) }, challengeBadToken)
		})
	}
}

// A connection's grant and its person's membership are read through the
// authentication cache: within 5 seconds of a read, calls read neither
// (an outage of the table's grant and membership items goes unnoticed);
// after that, the outage is the API's 503 with Retry-After, never a 401
// that would send the client to sign in again.
func TestAnAccessTokensConnectionIsReadOnceInFiveSecondsAndItsOutageIsA503(t *testing.T) {
	for _, item := range []string{"OAUTHGRANT#", "MEMBER#" + oauthPerson} {
		t.Run(item, func(t *testing.T) {
			o := newOAuthStack(t)
			bearer := "Bearer " + o.issue(o.signer, o.claims())
			args := map[string]any{"limit": 1}
			if isError, text := toolResult(t, o.call(bearer, "list_jobs", args)); isError {
				t.Fatalf("before: %q", text)
			}
			o.table.SetIf("GetItem", item, testenv.Unavailable)
			o.clock.T = o.clock.T.Add(5*time.Second - time.Millisecond)
			if isError, text := toolResult(t, o.call(bearer, "list_jobs", args)); isError {
				t.Errorf("within 5 s: %q", text)
			}
			if n := o.table.Failed("GetItem"); n != 0 {
				t.Errorf("within 5 s, %d reads of %s; want none", n, item)
			}
			o.clock.T = o.clock.T.Add(time.Millisecond)
			out := o.call(bearer, "list_jobs", args)
			want503(t, "the table down 5 s later", out)
			if o.table.Failed("GetItem") == 0 {
				t.Errorf("no read of %s was failed: the 503 came from elsewhere", item)
			}
		})
	}
}

// The access-token key's public half is read from KMS on the first access
// token, not at start: while KMS is down that call is the API's 503 (never
// a 401), API tokens work meanwhile, and the next call after KMS is back
// succeeds.
func TestTheAccessTokenKeyIsReadOnFirstUseAndItsOutageIsA503(t *testing.T) {
	o := newOAuthStack(t)
	kms := testenv.NewFaults(t, testenv.MotoEndpoint())
	o.d.AWS = emulator.FunctionConfig(awsclient.Endpoints{"DynamoDB": o.table.URL, "SQS": o.queues.URL, "S3": o.queues.URL, "KMS": kms.URL})
	kms.Set("GetPublicKey", testenv.Unavailable)
	o.h = o.build(mcpfn.Build) // no KMS call at start
	bearer := "Bearer " + o.issue(o.signer, o.claims())
	args := map[string]any{"limit": 1}
	if isError, text := toolResult(t, o.call("Bearer "+o.token, "list_jobs", args)); isError {
		t.Errorf("an API token while KMS is down: %q", text)
	}
	want503(t, "an access token while KMS is down", o.call(bearer, "list_jobs", args))
	if kms.Failed("GetPublicKey") == 0 {
		t.Error("no GetPublicKey was failed: the 503 came from elsewhere")
	}
	kms.Clear()
	if isError, text := toolResult(t, o.call(bearer, "list_jobs", args)); isError {
		t.Errorf("KMS back: %q", text)
	}
}
