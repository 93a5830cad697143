package devstack_test

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"

	"genjobs/internal/signing"
	"genjobs/internal/testenv"
)

// A job created with X-Webhook-URL pointing at a receiver on 127.0.0.1 runs
// through the local stack (worker, the table's stream into the notifier,
// the deliverer) and its receiver gets one signed POST that verifies
// against the API's own /.well-known/jwks.json.
func TestWebhookThroughTheLocalStack(t *testing.T) {
	local, api, _, token := servedStack(t, true)

	type hit struct {
		header http.Header
		body   []byte
	}
	hits := make(chan hit, 10)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		hits <- hit{r.Header.Clone(), b}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()
	hookURL := receiver.URL + "/hooks?tenant=demo"

	req, _ := http.NewRequest("POST", api.URL+"/generate/3d/vendor-g/model-g-3.1-rapid", bytes.NewReader([]byte(`{"prompt":"a teapot"}`)))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Webhook-URL", hookURL)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var created struct {
		ID string `json:"job_id"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&created)
	resp.Body.Close()
	if resp.StatusCode != 200 || created.ID == "" {
		t.Fatalf("create: %d", resp.StatusCode)
	}

	var got hit
	select {
	case got = <-hits:
	case <-time.After(90 * time.Second):
		t.Fatal("no webhook within 90 s")
	}
	// The body is the record as GET /jobs/{id} shows it.
	var rec struct {
		ID     string `json:"job_id"`
		Status string `json:"status"`
	}
	if err := json.Unmarshal(got.body, &rec); err != nil || rec.ID != created.ID || rec.Status != "completed" {
		t.Fatalf("webhook body %s", got.body)
	}
	jwksResp, err := http.Get(api.URL + "/.well-known/jwks.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := io.ReadAll(jwksResp.Body)
	jwksResp.Body.Close()
	if jwksResp.Header.Get("Cache-Control") != "public, max-age=300" {
		t.Errorf("JWKS Cache-Control %q", jwksResp.Header.Get("Cache-Control"))
	}
	keys, err := signing.ParseJWKS(doc)
	if err != nil {
		t.Fatalf("JWKS %s: %v", doc, err)
	}
	claims, err := signing.Verify(got.header.Get("X-Service-Webhook-Signature"), got.body, keys,
		signing.Expect{Audience: hookURL, Issuer: local.BaseURL, Now: time.Now(), Leeway: 5 * time.Second})
	if err != nil {
		t.Fatalf("the signature does not verify against the API's JWKS: %v", err)
	}
	// The key is moto's KMS key under the stack's alias: what signed is KMS.
	out, err := testenv.KMS(t).GetPublicKey(context.Background(), &kms.GetPublicKeyInput{KeyId: aws.String(local.SigningKeyAlias())})
	if err != nil {
		t.Fatal(err)
	}
	kmsKey, err := x509.ParsePKIXPublicKey(out.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	if k, ok := keys.Lookup(kidOf(t, got.header.Get("X-Service-Webhook-Signature"))); !ok || !k.Equal(kmsKey) {
		t.Errorf("the token's kid is not the KMS key %s of the JWKS", local.SigningKeyAlias())
	}
	// And jose, which shares no code with ours, agrees.
	joseVerify(t, doc, local.BaseURL, hookURL, got.header.Get("X-Service-Webhook-Signature"), got.body)
	if claims.Subject != created.ID || claims.ID != got.header.Get("X-Service-Webhook-Id") ||
		strconv.FormatInt(claims.IssuedAt.Unix(), 10) != got.header.Get("X-Service-Webhook-Timestamp") {
		t.Errorf("claims %+v do not match the headers %v", claims, got.header)
	}

	// One POST only, and the delivery log shows it.
	select {
	case extra := <-hits:
		t.Errorf("a second POST: %s", extra.body)
	case <-time.After(1500 * time.Millisecond):
	}
	req, _ = http.NewRequest("GET", api.URL+"/jobs/"+created.ID+"/deliveries", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var log2 struct {
		Items []struct {
			Attempt    int  `json:"attempt"`
			StatusCode *int `json:"status_code"`
		} `json:"items"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&log2)
	resp.Body.Close()
	if len(log2.Items) != 1 || log2.Items[0].StatusCode == nil || *log2.Items[0].StatusCode != 204 {
		t.Errorf("deliveries %+v; want one attempt answered 204", log2.Items)
	}
}

// kidOf reads the kid of a compact JWS's header.
func kidOf(t *testing.T, token string) string {
	t.Helper()
	head, _, _ := strings.Cut(token, ".")
	b, err := base64.RawURLEncoding.DecodeString(head)
	var h struct {
		Kid string `json:"kid"`
	}
	if err == nil {
		err = json.Unmarshal(b, &h)
	}
	if err != nil || h.Kid == "" {
		t.Fatalf("token header %q: %v", head, err)
	}
	return h.Kid
}

// joseVerify has the npm package jose verify one delivery against the JWKS
// document, with internal/signing's verifier script (make test installs
// jose there first).
func joseVerify(t *testing.T, jwks []byte, issuer, audience, token string, body []byte) {
	t.Helper()
	dir := filepath.Join(repo, "internal", "signing", "testdata")
	node := testenv.NodePackage(t, dir, "jose", "the independent check of a delivery's token")
	in, err := json.Marshal(map[string]any{
		"jwks": json.RawMessage(jwks), "issuer": issuer, "now": time.Now().Unix(),
		"cases": []map[string]any{{"name": "delivery", "token": token, "audience": audience, "body": body}},
	})
	if err != nil {
		t.Fatal(err)
	}
	input := filepath.Join(t.TempDir(), "input.json")
	if err := os.WriteFile(input, in, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "verify-jose.mjs", input)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("node verify-jose.mjs: %v\n%s", err, stderr.String())
	}
	var out struct {
		Results []struct {
			OK      bool   `json:"ok"`
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"results"`
	}
	if err := json.Unmarshal(stdout, &out); err != nil || len(out.Results) != 1 {
		t.Fatalf("jose output %s: %v", stdout, err)
	}
	if r := out.Results[0]; !r.OK {
		t.Fatalf("jose refuses the delivery: %s %s", r.Code, r.Message)
	}
}
