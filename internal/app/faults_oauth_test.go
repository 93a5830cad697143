package app_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awskms "github.com/aws/aws-sdk-go-v2/service/kms"
	kmstypes "github.com/aws/aws-sdk-go-v2/service/kms/types"

	"genjobs/internal/app/oauthfn"
	"genjobs/internal/authserver"
	"genjobs/internal/awsclient"
	"genjobs/internal/clock"
	"genjobs/internal/emulator"
	"genjobs/internal/httpapi/lambdatest"
	"genjobs/internal/store/oauthdb"
	"genjobs/internal/testenv"
)

// The oauth function, built as Lambda builds it: a client registers, and
// while KMS cannot sign, its code exchange is a 503 that leaves the code
// good, so that the retry after the outage connects (spending the code
// first would make the retry a replay, which revokes the connection).
func TestTheOAuthFunctionAnswers503WhileKMSIsDownAndTheCodeStaysGood(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	key, err := testenv.KMS(t).CreateKey(ctx, &awskms.CreateKeyInput{
		KeySpec: kmstypes.KeySpecEccNistP256, KeyUsage: kmstypes.KeyUsageTypeSignVerify,
	})
	if err != nil {
		t.Fatal(err)
	}
	kms := testenv.NewFaults(t, testenv.MotoEndpoint())
	s.d.Signing.OAuthKeyID = aws.ToString(key.KeyMetadata.Arn)
	s.d.AWS = emulator.FunctionConfig(awsclient.Endpoints{"DynamoDB": s.table.URL, "KMS": kms.URL})
	h := s.build(oauthfn.Build)
	post := func(path, contentType, body string) answer {
		t.Helper()
		r := httptest.NewRequest("POST", "https://api.test"+path, strings.NewReader(body))
		r.Header.Set("Content-Type", contentType)
		rec := lambdatest.Serve(h, r)
		return answer{rec.Code, rec.Header(), rec.Body.String()}
	}
	reg := post("/oauth/register", "application/json", `{"client_name":"A","redirect_uris":["https://a.test/cb"]}`)
	var client struct {
		ID string `json:"client_id"`
	}
	if err := json.Unmarshal([]byte(reg.Body), &client); err != nil || reg.StatusCode != 201 {
		t.Fatalf("registration: %d %s", reg.StatusCode, reg.Body)
	}
	if out := lambdatest.Serve(h, httptest.NewRequest("GET", "https://api.test/.well-known/oauth-protected-resource/mcp", nil)); out.Code != 200 ||
		!strings.Contains(out.Body.String(), `"resource":"https://api.test/mcp"`) {
		t.Errorf("protected resource metadata: %d %s", out.Code, out.Body.String())
	}

	verifier := strings.Repeat("v", 43)
	sum := sha256.Sum256([]byte(verifier))
	consent := &authserver.Server{Store: oauthdb.New(s.store), Clock: clock.System{}}
	req, err := consent.ParseAuthorize(ctx, "https://api.test", url.Values{
		"response_type": {"code"}, "client_id": {client.ID}, "redirect_uri": {"https://a.test/cb"},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"},
	})
	if err != nil {
		t.Fatal(err)
	}
	loc, err := consent.Approve(ctx, req, "usr_1", "ws_a")
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(loc)
	form := url.Values{"grant_type": {"authorization_code"}, "client_id": {client.ID}, "code": {u.Query().Get("code")},
		"redirect_uri": {"https://a.test/cb"}, "code_verifier": {verifier}}.Encode()

	kms.Set("Sign", testenv.Unavailable)
	want503(t, "KMS down", post("/oauth/token", "application/x-www-form-urlencoded", form))
	kms.Clear()
	out := post("/oauth/token", "application/x-www-form-urlencoded", form)
	if out.StatusCode != 200 || !strings.Contains(out.Body, `"access_token"`) {
		t.Errorf("KMS back: %d %s; want the tokens for the same code", out.StatusCode, out.Body)
	}
}
