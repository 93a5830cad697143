package app_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"genjobs/internal/app/consolefn"
	"genjobs/internal/awsclient"
	"genjobs/internal/emulator"
	"genjobs/internal/httpapi/lambdatest"
	"genjobs/internal/member"
	"genjobs/internal/store"
	"genjobs/internal/store/accountsdb"
	"genjobs/internal/store/membersdb"
	"genjobs/internal/store/sessionsdb"
	"genjobs/internal/store/tokensdb"
	"genjobs/internal/testenv"
)

// The console's page of an outage.
const consoleUnavailable = "A service the console depends on did not answer just now, so this was not done."

// consoleStack is the console function on a stack whose table fails on
// demand: ws_a's owner signed in (a stored session, its cookie), and a
// second member, b, for the members' forms. Cognito and Stripe are never
// reached by these pages and forms (the session's person was checked just
// now: no re-check for RecheckEvery): their endpoints are moto's, which has
// neither the pool nor the secret, so a call to either would fail.
type consoleStack struct {
	*stack
	h      http.Handler
	cookie string
	csrf   string
}

func newConsoleStack(t *testing.T) *consoleStack {
	t.Helper()
	s := newStack(t)
	s.d.Console.UserPoolID, s.d.Console.ClientID, s.d.Console.StripeSecretID = "us-east-1_faults", "faults", "faults/stripe"
	s.d.AWS = emulator.FunctionConfig(awsclient.Endpoints{
		"DynamoDB": s.table.URL, "SQS": s.queues.URL, "S3": s.queues.URL, "KMS": testenv.MotoEndpoint(),
		"Secrets Manager": testenv.MotoEndpoint(), "Cognito Identity Provider": testenv.MotoEndpoint(),
	})
	c := &consoleStack{stack: s, h: s.build(consolefn.Build), cookie: member.NewSecret(), csrf: member.NewSecret()}
	ctx, now := context.Background(), time.Now()
	for _, m := range []member.Membership{
		{WorkspaceID: "ws_a", UserID: "u_owner", Email: "owner@example.com", Role: member.Owner, AddedAt: now},
		{WorkspaceID: "ws_a", UserID: "u_b", Email: "b@example.com", Role: member.Member, AddedAt: now},
	} {
		if err := membersdb.New(c.store).AddMember(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	if err := sessionsdb.New(c.store).CreateSession(ctx, member.Session{Hash: member.HashSecret(c.cookie), UserID: "u_owner", Email: "owner@example.com",
		WorkspaceID: "ws_a", CSRF: c.csrf, CreatedAt: now, SeenAt: now, CheckedAt: now}); err != nil {
		t.Fatal(err)
	}
	return c
}

// visit sends a page's GET, or a form's POST (form not nil, with the
// session's CSRF token and ws_a added) from the console's origin, through
// the Lambda adapter, with the session's cookie.
func (c *consoleStack) visit(method, path string, form url.Values) answer {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), lambdaTimeout)
	defer cancel()
	var body string
	if form != nil {
		form.Set("csrf", c.csrf)
		form.Set("workspace", "ws_a")
		body = form.Encode()
	}
	req := httptest.NewRequest(method, "https://app.test"+path, strings.NewReader(body)).WithContext(ctx)
	req.AddCookie(&http.Cookie{Name: "console_session", Value: c.cookie})
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", "https://app.test")
	}
	rec := lambdatest.Serve(c.h, req)
	return answer{rec.Code, rec.Header(), rec.Body.String()}
}

// items are the table's items of partition pk whose sort key starts with
// prefix, read past the fault proxy.
func (c *consoleStack) items(pk, prefix string) int {
	c.t.Helper()
	out, err := c.store.Client().Query(context.Background(), &dynamodb.QueryInput{
		TableName:              aws.String(c.store.Table()),
		KeyConditionExpression: aws.String("PK = :pk AND begins_with(SK, :p)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": &types.AttributeValueMemberS{Value: pk}, ":p": &types.AttributeValueMemberS{Value: prefix}},
	})
	if err != nil {
		c.t.Fatal(err)
	}
	return len(out.Items)
}

// Every console page and form whose table read or write fails answers the
// console's page of an outage, 503 with Retry-After, within its deadline;
// a form so answered has written nothing; and the same request succeeds
// once the table is back.
func TestEveryConsolePathAnswers503WhenTheTableFails(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name         string
		method, path string
		form         url.Values
		op, where    string // the failed calls: operation and a fragment of their bodies
		fault        testenv.Fault
		unchanged    func(c *consoleStack) error // nothing of the form was written
		after        int                         // the status once the table is back
	}{
		{"session", "GET", "/app/settings/api-tokens", nil, "GetItem", "SESSION#", testenv.Unavailable, nil, 200},
		{"memberships", "GET", "/app/settings/billing", nil, "Query", "USER#u_owner", testenv.Drop, nil, 200},
		{"tokens page", "GET", "/app/settings/api-tokens", nil, "Query", "TOKEN#", testenv.Throttle, nil, 200},
		{"billing page", "GET", "/app/settings/billing", nil, "Query", "TOPUP#", testenv.Unavailable, nil, 200},
		{"usage page", "GET", "/app/settings/usage?days=30", nil, "Query", "SK BETWEEN", testenv.Freeze, nil, 200},
		{"usage CSV", "GET", "/app/settings/usage.csv?days=7", nil, "Query", "SK BETWEEN", testenv.Unavailable, nil, 200},
		{"members page", "GET", "/app/settings/members", nil, "Query", "WS#ws_a", testenv.Unavailable, nil, 200},
		{"revoke page", "GET", "/app/settings/api-tokens/tok_a/revoke", nil, "Query", "TOKEN#", testenv.Unavailable, nil, 200},
		{"remove member page", "GET", "/app/settings/members/u_b/remove", nil, "Query", "WS#ws_a", testenv.Unavailable, nil, 200},
		{"shared style page", "GET", "/app/styles/shared/no-such-link", nil, "GetItem", "LINK", testenv.Freeze, nil, 404},
		{"create token", "POST", "/app/settings/api-tokens", url.Values{"name": {"ci"}}, "TransactWriteItems", "TOKEN#", testenv.Unavailable,
			func(c *consoleStack) error {
				if n := c.items(store.WorkspacePK("ws_a"), "TOKEN#"); n != 1 {
					return errors.New("a token was written")
				}
				if n := c.items("SESSION#"+member.HashSecret(c.cookie), "ONCE#"); n != 0 {
					return errors.New("the new token's value is still held")
				}
				return nil
			}, 303},
		{"hold a new token's value", "POST", "/app/settings/api-tokens", url.Values{"name": {"ci"}}, "PutItem", "ONCE#", testenv.Unavailable,
			func(c *consoleStack) error {
				if n := c.items(store.WorkspacePK("ws_a"), "TOKEN#"); n != 1 {
					return errors.New("a token was written whose value nobody can be shown")
				}
				return nil
			}, 303},
		{"revoke token", "POST", "/app/settings/api-tokens/tok_a/revoke", url.Values{}, "TransactWriteItems", "", testenv.Throttle,
			func(c *consoleStack) error {
				ts, err := tokensdb.New(c.store).Tokens(ctx, "ws_a")
				if err != nil || len(ts) != 1 || ts[0].RevokedAt != nil {
					return errors.New("the token was revoked")
				}
				return nil
			}, 303},
		{"API access", "POST", "/app/settings/api-access", url.Values{"enabled": {"false"}}, "UpdateItem", "api_enabled", testenv.Unavailable,
			func(c *consoleStack) error {
				if w, err := accountsdb.New(c.store).Workspace(ctx, "ws_a"); err != nil || !w.APIEnabled {
					return errors.New("API access was switched off")
				}
				return nil
			}, 303},
		{"top-up", "POST", "/app/settings/billing/top-up", url.Values{"amount": {"25"}}, "TransactWriteItems", "TOPUP#", testenv.Unavailable,
			func(c *consoleStack) error {
				if n := c.items(store.WorkspacePK("ws_a"), "TOPUP#"); n != 0 {
					return errors.New("a top-up was recorded")
				}
				return nil
			}, 0}, // Stripe's keys are not on this stack: the retry is not tried
		{"change role", "POST", "/app/settings/members/u_b/role", url.Values{"role": {"admin"}}, "TransactWriteItems", "", testenv.Unavailable,
			func(c *consoleStack) error {
				if m, err := membersdb.New(c.store).Membership(ctx, "ws_a", "u_b"); err != nil || m.Role != member.Member {
					return errors.New("the role changed")
				}
				return nil
			}, 303},
		{"remove member", "POST", "/app/settings/members/u_b/remove", url.Values{}, "TransactWriteItems", "", testenv.Drop,
			func(c *consoleStack) error {
				if _, err := membersdb.New(c.store).Membership(ctx, "ws_a", "u_b"); err != nil {
					return errors.New("the member was removed")
				}
				return nil
			}, 303},
		// The jobs pages, on a queued job of ws_a ({job} in the path).
		{"jobs page", "GET", "/app/jobs", nil, "Query", "jobs-by-workspace", testenv.Unavailable, nil, 200},
		{"jobs page's jobs", "GET", "/app/jobs?status=queued", nil, "BatchGetItem", "JOB#", testenv.Throttle, nil, 200},
		{"job page", "GET", "/app/jobs/{job}", nil, "GetItem", `"S":"JOB"}`, testenv.Unavailable, nil, 200},
		{"job page's request", "GET", "/app/jobs/{job}", nil, "GetItem", `"S":"REQUEST"}`, testenv.Drop, nil, 200},
		{"job page's deliveries", "GET", "/app/jobs/{job}", nil, "GetItem", `"S":"WEBHOOK"}`, testenv.Unavailable, nil, 200},
		{"switch workspace", "POST", "/app/workspace", url.Values{"back": {"/app/settings/usage"}}, "UpdateItem", "SESSION#", testenv.Unavailable, nil, 303},
		{"sign out", "POST", "/app/sign-out", url.Values{}, "DeleteItem", "SESSION#", testenv.Unavailable,
			func(c *consoleStack) error {
				if _, err := sessionsdb.New(c.store).Session(ctx, member.HashSecret(c.cookie), time.Now()); err != nil {
					return errors.New("the session ended")
				}
				return nil
			}, 303},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newConsoleStack(t)
			path := tc.path
			if strings.HasPrefix(path, "/app/jobs") {
				path = strings.ReplaceAll(path, "{job}", c.queuedJob("").ID)
			}
			c.table.SetIf(tc.op, tc.where, tc.fault)
			out := c.visit(tc.method, path, tc.form)
			if out.StatusCode != http.StatusServiceUnavailable || out.Headers.Get("Retry-After") != "2" ||
				!strings.Contains(out.Body, consoleUnavailable) || !strings.HasPrefix(out.Headers.Get("Content-Type"), "text/html") {
				t.Errorf("during the outage: %d, Retry-After %q, %s; want the console's 503 page with Retry-After 2",
					out.StatusCode, out.Headers.Get("Retry-After"), out.Body)
			}
			if c.table.Failed(tc.op) == 0 {
				t.Errorf("no %s call was failed: the 503 came from elsewhere", tc.op)
			}
			if len(c.logs.lines(`"request_id":"`+out.RequestID()+`"`, "dependency unavailable", `"code":"`)) == 0 {
				t.Errorf("no log line with the request id and the error code:\n%s", c.logs.lines())
			}
			c.table.Clear()
			if tc.unchanged != nil {
				if err := tc.unchanged(c); err != nil {
					t.Errorf("after the refused form: %v", err)
				}
			}
			if tc.after == 0 {
				return
			}
			if out := c.visit(tc.method, path, tc.form); out.StatusCode != tc.after {
				t.Errorf("after the outage: %d; want %d\n%s", out.StatusCode, tc.after, out.Body)
			}
		})
	}
}
