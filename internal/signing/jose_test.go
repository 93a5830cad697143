package signing_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"genjobs/internal/signing"
	"genjobs/internal/signing/kmssigner"
	"genjobs/internal/testenv"
)

// joseCase is one token for both verifiers, and the outcome both must reach.
type joseCase struct {
	Name     string `json:"name"`
	Token    string `json:"token"`
	Audience string `json:"audience"`
	Body     []byte `json:"body"` // base64 in JSON
	valid    bool
	joseCode string // why jose must refuse an invalid one
}

type joseResult struct {
	Name    string `json:"name"`
	OK      bool   `json:"ok"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Sub     string `json:"sub"`
	JTI     string `json:"jti"`
}

// TestJoseVerifies has the npm package jose, an implementation that shares
// no code with ours, verify webhook tokens signed by moto's KMS against our
// JWKS: the
// current key and a previous one as during a rotation, signatures with short
// r or s among them, and the tokens a receiver must refuse. It also
// recomputes every kid as an RFC 7638 thumbprint.
func TestJoseVerifies(t *testing.T) {
	node := testenv.NodePackage(t, "testdata", "jose", "the independent JOSE check")

	client, _ := motoKMS(t)
	cur := kmssigner.New(client, newKey(t))
	prev := kmssigner.New(client, newKey(t))
	stranger := kmssigner.New(client, newKey(t)) // not in the JWKS
	ctx := context.Background()
	doc, err := signing.JWKS(pubOf(t, cur), pubOf(t, prev))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)

	var cases []joseCase
	add := func(name string, s signing.Signer, c signing.WebhookClaims, checkAud string, body []byte, joseCode string) string {
		t.Helper()
		tok, err := signing.WebhookToken(ctx, s, c)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		cases = append(cases, joseCase{Name: name, Token: tok, Audience: checkAud, Body: body, valid: joseCode == "", joseCode: joseCode})
		return tok
	}
	webhook := func(i int, iat time.Time, aud string, body []byte) signing.WebhookClaims {
		return signing.WebhookClaims{Issuer: issuer, Audience: aud, Subject: "job_" + itoa(int64(i)),
			ID: "wh_" + itoa(int64(i)), IssuedAt: iat, Body: body}
	}

	// Valid tokens from the current key until some carry a short r or s.
	short := 0
	for i := 0; i < 100 || short < 4; i++ {
		if i == 5000 {
			t.Fatalf("5,000 signatures and only %d with a short r or s", short)
		}
		body := []byte(`{"id":"job_` + itoa(int64(i)) + `","status":"completed","note":"é ✓"}`)
		tok := add("current "+itoa(int64(i)), cur, webhook(i, now.Add(-time.Duration(i%300)*time.Second), audience, body), audience, body, "")
		sig, _ := base64.RawURLEncoding.DecodeString(tok[strings.LastIndexByte(tok, '.')+1:])
		if sig[0] == 0 || sig[32] == 0 {
			short++
		}
	}
	for i := range 20 {
		body := []byte(`{"id":"job_p` + itoa(int64(i)) + `"}`)
		add("previous key "+itoa(int64(i)), prev, webhook(i, now, audience, body), audience, body, "")
	}
	for i, aud := range []string{
		"https://hooks.example.com/",
		"https://hooks.example.com:8443/a/b?c=d%20e&f=g,h",
		"https://hooks.example.com/ünïcode/路径",
		"http://127.0.0.1:9000/webhook",
	} {
		add("audience "+aud, cur, webhook(i, now, aud, nil), aud, nil, "")
	}
	big := []byte(strings.Repeat(`{"k":"v"}`, 8000))
	add("72 kB body", cur, webhook(0, now, audience, big), audience, big, "")
	add("empty body", cur, webhook(0, now, audience, []byte{}), audience, []byte{}, "")

	body := []byte(`{"id":"job_x","status":"failed"}`)
	add("wrong audience", cur, webhook(0, now, audience, body), audience+"/", body, "ERR_JWT_CLAIM_VALIDATION_FAILED")
	add("expired", cur, webhook(0, now.Add(-301*time.Second), audience, body), audience, body, "ERR_JWT_EXPIRED")
	add("issued in the future", cur, webhook(0, now.Add(time.Minute), audience, body), audience, body, "ERR_JWT_CLAIM_VALIDATION_FAILED")
	add("another body", cur, webhook(0, now, audience, body), audience, []byte(`{"id":"job_x","status":"completed"}`), "BODY_MISMATCH")
	add("key not in the JWKS", stranger, webhook(0, now, audience, body), audience, body, "ERR_JWKS_NO_MATCHING_KEY")
	other := webhook(0, now, audience, body)
	other.Issuer = "https://other.example.com"
	add("another issuer", cur, other, audience, body, "ERR_JWT_CLAIM_VALIDATION_FAILED")
	tok := add("flipped signature", cur, webhook(0, now, audience, body), audience, body, "ERR_JWS_SIGNATURE_VERIFICATION_FAILED")
	// A character in the middle of the signature: the last one may carry
	// only padding bits, which a lenient decoder ignores.
	i := len(tok) - 20
	cases[len(cases)-1].Token = tok[:i] + flip(tok[i:])

	// Our own Verify reaches the intended outcome on every case...
	keys, err := signing.ParseJWKS(doc)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		_, err := signing.Verify(c.Token, c.Body, keys, signing.Expect{Audience: c.Audience, Issuer: issuer, Now: now})
		if (err == nil) != c.valid {
			t.Fatalf("%s: our Verify says %v, want valid=%v", c.Name, err, c.valid)
		}
	}

	// ...and so does jose.
	out := runJose(t, node, doc, now, cases)
	if len(out.Results) != len(cases) {
		t.Fatalf("jose answered %d cases of %d", len(out.Results), len(cases))
	}
	for i, r := range out.Results {
		c := cases[i]
		if r.Name != c.Name {
			t.Fatalf("jose result %d is %q, want %q", i, r.Name, c.Name)
		}
		if r.OK != c.valid || r.Code != c.joseCode {
			t.Errorf("%s: jose says ok=%v (%s %s), want ok=%v (%s)", c.Name, r.OK, r.Code, r.Message, c.valid, c.joseCode)
		}
		if r.OK && (r.Sub == "" || r.JTI == "") {
			t.Errorf("%s: jose found no sub or jti", c.Name)
		}
	}
	if len(out.Thumbprints) != 2 {
		t.Fatalf("jose saw %d keys, want 2", len(out.Thumbprints))
	}
	for _, tp := range out.Thumbprints {
		if tp.Kid != tp.Thumbprint {
			t.Errorf("kid %s is not jose's RFC 7638 thumbprint %s", tp.Kid, tp.Thumbprint)
		}
	}
	t.Logf("jose checked %d tokens, %d with a short r or s", len(cases), short)
}

func flip(s string) string {
	if s[0] == 'A' {
		return "B" + s[1:]
	}
	return "A" + s[1:]
}

type joseOutput struct {
	Thumbprints []struct {
		Kid        string `json:"kid"`
		Thumbprint string `json:"thumbprint"`
	} `json:"thumbprints"`
	Results []joseResult `json:"results"`
}

func runJose(t *testing.T, node string, jwks []byte, now time.Time, cases []joseCase) joseOutput {
	t.Helper()
	in, err := json.Marshal(map[string]any{
		"jwks": json.RawMessage(jwks), "issuer": issuer, "now": now.Unix(), "cases": cases,
	})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "input.json")
	if err := os.WriteFile(path, in, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "verify-jose.mjs", path)
	cmd.Dir = "testdata"
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			t.Fatalf("node verify-jose.mjs: %v\n%s", err, stderr.String())
		}
		t.Fatalf("node verify-jose.mjs: %v", err)
	}
	var out joseOutput
	if err := json.Unmarshal(stdout, &out); err != nil {
		t.Fatalf("jose output: %v\n%s", err, stdout)
	}
	return out
}
