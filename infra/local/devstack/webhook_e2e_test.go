package devstack_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"genjobs/internal/signing"
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
