package authserver_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/kms/types"

	"genjobs/internal/authserver"
	"genjobs/internal/clock"
	"genjobs/internal/httpapi"
	"genjobs/internal/httpapi/lambdatest"
	"genjobs/internal/netguard"
	"genjobs/internal/oauthtoken"
	"genjobs/internal/signing"
	"genjobs/internal/signing/kmssigner"
	"genjobs/internal/store/oauthdb"
	"genjobs/internal/store/storetest"
	"genjobs/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

var t0 = time.Date(2026, 11, 27, 20, 0, 0, 0, time.UTC)

const (
	base     = "https://api.test"
	resource = "https://api.test/mcp"
	redirect = "https://assistant.test/callback"
	verifier = "dBjftJeZ4CVP-mJ92K1ZzKK3r0n3oDE-0aVVd3LS8Xk-verifier"
)

var challenge = func() string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}()

// env is an authorization server on a table of its own, signing with a
// key of moto's KMS, its clock fixed at t0.
type env struct {
	t     *testing.T
	srv   *authserver.Server
	db    *oauthdb.DB
	clock *clock.Fixed
	h     http.Handler
	keys  *signing.KeySet
}

func newEnv(t *testing.T) *env {
	t.Helper()
	out, err := testenv.KMS(t).CreateKey(context.Background(), &kms.CreateKeyInput{
		KeySpec: types.KeySpecEccNistP256, KeyUsage: types.KeyUsageTypeSignVerify,
	})
	if err != nil {
		t.Fatal(err)
	}
	key := kmssigner.New(testenv.KMS(t), aws.ToString(out.KeyMetadata.Arn))
	pub, err := key.PublicKey(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, db: oauthdb.New(storetest.New(t)), clock: &clock.Fixed{T: t0}, keys: signing.NewKeySet(pub)}
	e.srv = &authserver.Server{BaseURL: base, AppURL: base + "/app", Store: e.db, Signer: key, Clock: e.clock}
	e.h = httpapi.Middleware(slog.New(slog.DiscardHandler), e.srv.Handler())
	return e
}

// withDocuments lets the server fetch client ID metadata documents through
// a guard that allows private destinations (the local stack's), or not.
func (e *env) withDocuments(allowPrivate bool) *testenv.Loopback {
	l := testenv.LoopbackOnly(e.t)
	e.srv.Documents = authserver.NewDocuments(&netguard.Guard{AllowPrivate: allowPrivate, Connect: l.Connect}, e.clock)
	return l
}

// do serves one request through the Lambda adapter.
func (e *env) do(method, path, contentType, body string) *httptest.ResponseRecorder {
	e.t.Helper()
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	return lambdatest.Serve(e.h, r)
}

func (e *env) post(path string, form url.Values) *httptest.ResponseRecorder {
	e.t.Helper()
	return e.do("POST", path, "application/x-www-form-urlencoded", form.Encode())
}

func decode(t *testing.T, rec *httptest.ResponseRecorder) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
		t.Fatalf("%d %q: %v", rec.Code, rec.Body.String(), err)
	}
	return m
}

// wantError checks an RFC 6749 error answer.
func wantError(t *testing.T, rec *httptest.ResponseRecorder, status int, code string) {
	t.Helper()
	m := decode(t, rec)
	if rec.Code != status || m["error"] != code {
		t.Errorf("answer %d %s; want %d with error %q", rec.Code, rec.Body.String(), status, code)
	}
}

// register registers a client with body and returns its id and secret.
func (e *env) register(body string) (id, secret string) {
	e.t.Helper()
	rec := e.do("POST", "/oauth/register", "application/json", body)
	if rec.Code != http.StatusCreated {
		e.t.Fatalf("registration: %d %s", rec.Code, rec.Body.String())
	}
	m := decode(e.t, rec)
	id, _ = m["client_id"].(string)
	secret, _ = m["client_secret"].(string)
	return id, secret
}

func (e *env) publicClient() string {
	id, _ := e.register(`{"client_name":"Assistant","redirect_uris":["` + redirect + `"]}`)
	return id
}

func authorizeQuery(clientID string) url.Values {
	return url.Values{
		"response_type": {"code"}, "client_id": {clientID}, "redirect_uri": {redirect}, "state": {"st-1"},
		"code_challenge": {challenge}, "code_challenge_method": {"S256"}, "resource": {resource}, "scope": {"jobs"},
	}
}

// approve runs the authorization step for clientID as the consent page
// will and returns the code.
func (e *env) approve(q url.Values) string {
	e.t.Helper()
	req, err := e.srv.ParseAuthorize(context.Background(), base, q)
	if err != nil {
		e.t.Fatal(err)
	}
	loc, err := e.srv.Approve(context.Background(), req, "usr_1", "ws_1")
	if err != nil {
		e.t.Fatal(err)
	}
	u, err := url.Parse(loc)
	if err != nil {
		e.t.Fatal(err)
	}
	if u.Query().Get("state") != "st-1" || !strings.HasPrefix(loc, q.Get("redirect_uri")+"?") {
		e.t.Fatalf("approval sends the browser to %s", loc)
	}
	return u.Query().Get("code")
}

func codeForm(clientID, code string) url.Values {
	return url.Values{"grant_type": {"authorization_code"}, "client_id": {clientID}, "code": {code},
		"redirect_uri": {redirect}, "code_verifier": {verifier}, "resource": {resource}}
}

func refreshForm(clientID, token string) url.Values {
	return url.Values{"grant_type": {"refresh_token"}, "client_id": {clientID}, "refresh_token": {token}}
}

// tokens posts form to the token endpoint and wants tokens back.
func (e *env) tokens(form url.Values) (access, refresh string) {
	e.t.Helper()
	rec := e.post("/oauth/token", form)
	if rec.Code != http.StatusOK {
		e.t.Fatalf("token endpoint: %d %s", rec.Code, rec.Body.String())
	}
	if rec.Header().Get("Cache-Control") != "no-store" {
		e.t.Errorf("tokens answered with Cache-Control %q", rec.Header().Get("Cache-Control"))
	}
	m := decode(e.t, rec)
	access, _ = m["access_token"].(string)
	refresh, _ = m["refresh_token"].(string)
	if m["token_type"] != "Bearer" || m["expires_in"] != 3600.0 || m["scope"] != "jobs" || access == "" || refresh == "" {
		e.t.Fatalf("token answer %s", rec.Body.String())
	}
	return access, refresh
}

func (e *env) verify(access string) (oauthtoken.Claims, error) {
	return oauthtoken.Verify(access, e.keys, oauthtoken.Expect{Issuer: base, Audience: resource, Now: e.clock.T})
}

// items counts the table's items.
func (e *env) items() int {
	e.t.Helper()
	out, err := e.db.Client().Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(e.db.Table())})
	if err != nil {
		e.t.Fatal(err)
	}
	return len(out.Items)
}
