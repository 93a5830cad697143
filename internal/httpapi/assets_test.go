package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"genjobs/internal/asset"
	"genjobs/internal/auth"
	"genjobs/internal/blob"
	"genjobs/internal/clock"
	"genjobs/internal/httpapi"
	"genjobs/internal/httpapi/lambdatest"
	"genjobs/internal/store"
	"genjobs/internal/store/accountsdb"
	"genjobs/internal/store/assetsdb"
	"genjobs/internal/store/schema"
	"genjobs/internal/store/tokensdb"
	"genjobs/internal/testenv"
)

// assetBase is the configured public address in these tests.
const assetBase = "http://127.0.0.1:3000"

// Sample bodies of each accepted type: their signature, then filler.
var (
	pngBytes  = imageBytes("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", 5000)
	jpegBytes = imageBytes("\xff\xd8\xff\xe0\x00\x10JFIF\x00", 7000)
	webpBytes = imageBytes("RIFF\x24\x00\x00\x00WEBPVP8 \x18\x00\x00\x00", 3000)
)

func imageBytes(signature string, n int) []byte {
	b := []byte(signature)
	for i := 0; len(b) < n; i++ {
		b = append(b, byte(i*7))
	}
	return b
}

// assetEnv is one test's assets API on its own table and bucket, with two
// workspaces (ws_a and ws_b) and one whose API access is off (ws_off).
type assetEnv struct {
	t        *testing.T
	db       *dynamodb.Client
	s3       *s3.Client
	store    *store.Store
	bucket   string
	handler  *httpapi.Assets
	api      http.Handler
	tokenA   string
	tokenB   string
	tokenOff string
}

func newAssetEnv(t *testing.T) *assetEnv {
	t.Helper()
	e := &assetEnv{t: t, db: testenv.DynamoDB(t), s3: testenv.S3(t), bucket: testenv.NewBucket(t)}
	table := testenv.UniqueName(t, "assets")
	if err := schema.CreateTable(context.Background(), e.db, table); err != nil {
		t.Fatal(err)
	}
	e.store = store.New(e.db, table)
	e.tokenA = e.workspace("ws_a", true)
	e.tokenB = e.workspace("ws_b", true)
	e.tokenOff = e.workspace("ws_off", false)
	e.handler = &httpapi.Assets{
		Auth:    auth.Authenticator{Dir: tokensdb.Directory(e.store)},
		Assets:  assetsdb.New(e.store),
		Blobs:   blob.New(e.s3, "results-unused", e.bucket),
		Clock:   &clock.Fixed{T: now},
		BaseURL: assetBase,
	}
	e.api = lambdatest.Handler(httpapi.Middleware(slog.New(slog.NewJSONHandler(io.Discard, nil)), e.handler.Routes()))
	return e
}

func (e *assetEnv) workspace(id string, enabled bool) string {
	e.t.Helper()
	ctx := context.Background()
	if err := accountsdb.New(e.store).CreateWorkspace(ctx, auth.Workspace{ID: id, Name: id, APIEnabled: enabled, CreatedAt: now}); err != nil {
		e.t.Fatal(err)
	}
	token, hash := auth.NewToken()
	if err := tokensdb.New(e.store).CreateToken(ctx, auth.Token{ID: "tok_" + id, WorkspaceID: id, Hash: hash, CreatedAt: now}); err != nil {
		e.t.Fatal(err)
	}
	return token
}

type assetResponse struct {
	status int
	header http.Header
	body   []byte
}

// fields decodes a JSON object answer.
func (r assetResponse) fields(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("answer %d is not a JSON object: %q", r.status, r.body)
	}
	return m
}

// wantError checks an error answer: its status and exactly {"error": msg}.
func (r assetResponse) wantError(t *testing.T, what string, status int, msg string) {
	t.Helper()
	want, _ := json.Marshal(map[string]string{"error": msg})
	if r.status != status || !bytes.Equal(r.body, want) {
		t.Errorf("%s: %d %s; want %d %s", what, r.status, r.body, status, want)
	}
}

// do sends a request through the Lambda adapter; contentType "" sends none.
// (Through API Gateway a body's length is always known: it reads the body
// whole before invoking the function.)
func (e *assetEnv) do(method, path, token, contentType string, body []byte) assetResponse {
	e.t.Helper()
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	rec := httptest.NewRecorder()
	e.api.ServeHTTP(rec, req)
	b, _ := io.ReadAll(rec.Result().Body)
	return assetResponse{rec.Code, rec.Result().Header, b}
}

// written counts asset records in the table and objects in the bucket.
func (e *assetEnv) written() (records, objects int) {
	e.t.Helper()
	ctx := context.Background()
	out, err := e.db.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(e.store.Table())})
	if err != nil {
		e.t.Fatal(err)
	}
	for _, item := range out.Items {
		if pk, ok := item["PK"].(*types.AttributeValueMemberS); ok && strings.HasPrefix(pk.Value, "ASSET#") {
			records++
		}
	}
	list, err := e.s3.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(e.bucket)})
	if err != nil {
		e.t.Fatal(err)
	}
	return records, len(list.Contents)
}

// assetID checks an asset URL of this deployment and returns its id.
func assetIDOf(t *testing.T, base, u string) string {
	t.Helper()
	id, ok := asset.IDFromURL(base, u)
	if !ok || u != base+"/assets/"+id {
		t.Fatalf("asset_url %q is not %s/assets/{id}", u, base)
	}
	return id
}

// download fetches a URL with no credentials, as a client following the
// redirect does.
func download(t *testing.T, u string) (int, string, []byte) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), b
}

// presignedQuery parses a presigned S3 URL and checks it names the asset's
// object in the test's bucket.
func (e *assetEnv) presignedQuery(u, key string) url.Values {
	e.t.Helper()
	parsed, err := url.Parse(u)
	if err != nil {
		e.t.Fatal(err)
	}
	if parsed.Path != "/"+e.bucket+"/"+key || parsed.Query().Get("X-Amz-Signature") == "" {
		e.t.Errorf("URL %s is not a presigned URL of s3://%s/%s", u, e.bucket, key)
	}
	return parsed.Query()
}

func TestPostAssetStoresTheImageForItsWorkspace(t *testing.T) {
	e := newAssetEnv(t)
	for ct, data := range map[string][]byte{asset.PNG: pngBytes, asset.JPEG: jpegBytes, asset.WebP: webpBytes} {
		resp := e.do("POST", "/assets", e.tokenA, ct, data)
		if resp.status != 201 {
			t.Fatalf("POST /assets %s: %d %s", ct, resp.status, resp.body)
		}
		m := resp.fields(t)
		u, _ := m["asset_url"].(string)
		if len(m) != 1 {
			t.Errorf("POST /assets answered %s; want only asset_url", resp.body)
		}
		id := assetIDOf(t, assetBase, u)
		if loc := resp.header.Get("Location"); loc != u {
			t.Errorf("Location %q; want the asset URL %q", loc, u)
		}
		a, err := assetsdb.New(e.store).Asset(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if a.WorkspaceID != "ws_a" || a.Key != "assets/ws_a/"+id || a.ContentType != ct || a.Size != int64(len(data)) || !a.CreatedAt.Equal(now) {
			t.Errorf("stored record %+v", a)
		}

		got := e.do("GET", "/assets/"+id, e.tokenA, "", nil)
		loc := got.header.Get("Location")
		if got.status != 302 || loc == "" {
			t.Fatalf("GET /assets/%s by its owner: %d %s; want 302 with a Location", id, got.status, got.body)
		}
		if cc := got.header.Get("Cache-Control"); cc != "no-store" {
			t.Errorf("Cache-Control of the redirect %q; want no-store", cc)
		}
		if exp := e.presignedQuery(loc, a.Key).Get("X-Amz-Expires"); exp != "300" {
			t.Errorf("the redirect target lives %s s; want 300 (5 minutes)", exp)
		}
		status, gotType, body := download(t, loc)
		if status != 200 || gotType != ct || !bytes.Equal(body, data) {
			t.Errorf("following the redirect: %d %s, %d bytes; want 200 %s and the %d bytes posted", status, gotType, len(body), ct, len(data))
		}
	}
	if records, objects := e.written(); records != 3 || objects != 3 {
		t.Errorf("%d records and %d objects; want 3 of each", records, objects)
	}
}

func TestPostAssetSizeLimit(t *testing.T) {
	e := newAssetEnv(t)
	atLimit := imageBytes("\x89PNG\r\n\x1a\n", asset.MaxDirectBytes)
	if resp := e.do("POST", "/assets", e.tokenA, "image/png", atLimit); resp.status != 201 {
		t.Fatalf("POST /assets of exactly 4 MiB: %d %s", resp.status, resp.body)
	}
	over := imageBytes("\x89PNG\r\n\x1a\n", asset.MaxDirectBytes+1)
	const msg = "The image is larger than 4 MiB; use POST /assets/uploads."
	e.do("POST", "/assets", e.tokenA, "image/png", over).wantError(t, "4 MiB + 1 byte", 413, msg)
	// A body over Lambda's payload limit never reaches the function: API
	// Gateway answers 413 itself.
	huge := e.do("POST", "/assets", e.tokenA, "image/png", imageBytes("\x89PNG\r\n\x1a\n", 10<<20))
	if huge.status != 413 || string(huge.body) != `{"message":"Request Entity Too Large"}` {
		t.Errorf("10 MiB: %d %s; want API Gateway's 413", huge.status, huge.body)
	}
	if records, objects := e.written(); records != 1 || objects != 1 {
		t.Errorf("%d records and %d objects after the refusals; want only the accepted image's", records, objects)
	}
}

func TestPostAssetRefusesWhatIsNotAnImageOfItsType(t *testing.T) {
	e := newAssetEnv(t)
	const msg = "The request body is not a PNG, JPEG or WebP image."
	cases := []struct {
		name, contentType string
		body              []byte
	}{
		{"no Content-Type", "", pngBytes},
		{"application/octet-stream", "application/octet-stream", pngBytes},
		{"application/json", "application/json", []byte(`{"image":"x"}`)},
		{"a GIF", "image/gif", []byte("GIF89a\x01\x00\x01\x00\x00\x00\x00")},
		{"image/png, empty body", "image/png", nil},
		{"image/png, text", "image/png", []byte("not an image at all")},
		{"image/png, JPEG bytes", "image/png", jpegBytes},
		{"image/webp, PNG bytes", "image/webp", pngBytes},
		{"image/jpeg, a WAV", "image/jpeg", []byte("RIFF\x24\x00\x00\x00WAVEfmt \x10\x00\x00\x00")},
		{"an SVG", "image/svg+xml", []byte(`<svg xmlns="http://www.w3.org/2000/svg"/>`)},
		{"a malformed Content-Type", "image/png; =", pngBytes},
	}
	for _, c := range cases {
		e.do("POST", "/assets", e.tokenA, c.contentType, c.body).wantError(t, c.name, 400, msg)
	}
	// Parameters and letter case of the media type are no reason to refuse.
	if resp := e.do("POST", "/assets", e.tokenA, "Image/PNG; name=a.png", pngBytes); resp.status != 201 {
		t.Errorf("Image/PNG with a parameter: %d %s", resp.status, resp.body)
	}
	if records, objects := e.written(); records != 1 || objects != 1 {
		t.Errorf("%d records and %d objects after the refusals; want only the accepted image's", records, objects)
	}
}

func TestAssetUploadIssuesAPresignedPut(t *testing.T) {
	e := newAssetEnv(t)
	data := imageBytes("\xff\xd8\xff\xe0\x00\x10JFIF\x00", 6<<20) // over the direct limit
	resp := e.do("POST", "/assets/uploads", e.tokenA, "application/json",
		[]byte(fmt.Sprintf(`{"content_type":"image/jpeg","size":%d}`, len(data))))
	if resp.status != 201 {
		t.Fatalf("POST /assets/uploads: %d %s", resp.status, resp.body)
	}
	m := resp.fields(t)
	if len(m) != 3 {
		t.Errorf("answer %s; want exactly upload_url, asset_url, expires_at", resp.body)
	}
	if m["expires_at"] != "2026-11-21T20:48:00.120Z" {
		t.Errorf("expires_at %v; want 15 minutes after now, as 2026-11-21T20:48:00.120Z", m["expires_at"])
	}
	id := assetIDOf(t, assetBase, fmt.Sprint(m["asset_url"]))
	upload := fmt.Sprint(m["upload_url"])
	q := e.presignedQuery(upload, "assets/ws_a/"+id)
	if q.Get("X-Amz-Expires") != "900" {
		t.Errorf("upload URL lives %s s; want 900", q.Get("X-Amz-Expires"))
	}
	// S3 refuses an upload whose signed headers differ; fauxqs checks no
	// signature, so the binding is checked on the URL.
	if sh := q.Get("X-Amz-SignedHeaders"); sh != "content-length;content-type;host" {
		t.Errorf("signed headers %q; want content-length;content-type;host", sh)
	}
	// The record exists at once, with the declared type and size.
	a, err := assetsdb.New(e.store).Asset(context.Background(), id)
	if err != nil || a.WorkspaceID != "ws_a" || a.ContentType != "image/jpeg" || a.Size != int64(len(data)) {
		t.Fatalf("record after POST /assets/uploads: %+v, %v", a, err)
	}

	// A client uploads with plain HTTP, then reads its asset back.
	req, _ := http.NewRequest("PUT", upload, bytes.NewReader(data))
	req.Header.Set("Content-Type", "image/jpeg")
	put, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	put.Body.Close()
	if put.StatusCode != 200 {
		t.Fatalf("PUT to the upload URL: %d", put.StatusCode)
	}
	got := e.do("GET", "/assets/"+id, e.tokenA, "", nil)
	if got.status != 302 {
		t.Fatalf("GET /assets/%s: %d %s", id, got.status, got.body)
	}
	if status, ct, body := download(t, got.header.Get("Location")); status != 200 || ct != "image/jpeg" || !bytes.Equal(body, data) {
		t.Errorf("following the redirect: %d %s, %d bytes; want the %d bytes uploaded", status, ct, len(body), len(data))
	}

	// The largest size allowed.
	if resp := e.do("POST", "/assets/uploads", e.tokenA, "application/json", []byte(`{"size":52428800,"content_type":"image/webp"}`)); resp.status != 201 {
		t.Errorf("size 52428800: %d %s", resp.status, resp.body)
	}
}

func TestAssetUploadRefusesInvalidBodies(t *testing.T) {
	e := newAssetEnv(t)
	const p = "The request body is invalid: "
	cases := []struct{ body, want string }{
		{``, "the body must be a JSON object"},
		{`[]`, "the body must be a JSON object"},
		{`{"content_type":"image/png",`, "the body is not valid JSON"},
		{`{"content_type":"image/png","size":1}{}`, "the body must be a single JSON object"},
		{`{"content_type":"image/png","size":1,"size":2}`, "size was given more than once"},
		{`{"size":100}`, "content_type is required"},
		{`{"content_type":"image/png"}`, "size is required"},
		{`{}`, "content_type is required"},
		{`{"content_type":"image/gif","size":100}`, "content_type must be one of image/png, image/jpeg, image/webp"},
		{`{"content_type":"IMAGE/PNG","size":100}`, "content_type must be one of image/png, image/jpeg, image/webp"},
		{`{"content_type":7,"size":100}`, "content_type must be one of image/png, image/jpeg, image/webp"},
		{`{"content_type":"image/png","size":0}`, "size must be an integer between 1 and 52428800"},
		{`{"content_type":"image/png","size":52428801}`, "size must be an integer between 1 and 52428800"},
		{`{"content_type":"image/png","size":-1}`, "size must be an integer between 1 and 52428800"},
		{`{"content_type":"image/png","size":1.5}`, "size must be an integer between 1 and 52428800"},
		{`{"content_type":"image/png","size":"100"}`, "size must be an integer between 1 and 52428800"},
		{`{"content_type":"image/png","size":1e999}`, "size must be an integer between 1 and 52428800"},
		{`{"content_type":"image/png","size":null}`, "size must be an integer between 1 and 52428800"},
		{`{"content_type":"image/png","size":100,"colour":"red"}`, "colour is not a known field"},
		{`{"content_type":"image/png","size":100,"a b":1}`, `"a b" is not a known field`},
		// Several broken fields: the first by name, on every call.
		{`{"size":0,"content_type":"image/gif","zz":1}`, "content_type must be one of image/png, image/jpeg, image/webp"},
		{`{"size":0,"content_type":"image/png","aa":1}`, "aa is not a known field"},
		{`{"content_type":"image/png","size":100,"x":"` + strings.Repeat("y", 5000) + `"}`, "the body is larger than 4096 bytes"},
	}
	for _, c := range cases {
		e.do("POST", "/assets/uploads", e.tokenA, "application/json", []byte(c.body)).wantError(t, c.body, 400, p+c.want)
	}
	e.do("POST", "/assets/uploads", e.tokenA, "text/plain", []byte(`{"content_type":"image/png","size":1}`)).
		wantError(t, "text/plain", 400, p+"Content-Type must be application/json")
	e.do("POST", "/assets/uploads", e.tokenA, "", []byte(`{"content_type":"image/png","size":1}`)).
		wantError(t, "no Content-Type", 400, p+"Content-Type must be application/json")
	// Integral numbers in any spelling are integers.
	for _, size := range []string{"1024.0", "1e3", "52428800"} {
		if resp := e.do("POST", "/assets/uploads", e.tokenA, "application/json", []byte(`{"content_type":"image/png","size":`+size+`}`)); resp.status != 201 {
			t.Errorf("size %s: %d %s", size, resp.status, resp.body)
		}
	}
	if records, objects := e.written(); records != 3 || objects != 0 {
		t.Errorf("%d records and %d objects; want only the 3 accepted uploads' records", records, objects)
	}
}

func TestAssetsAreVisibleToTheirWorkspaceOnly(t *testing.T) {
	e := newAssetEnv(t)
	resp := e.do("POST", "/assets", e.tokenA, "image/png", pngBytes)
	if resp.status != 201 {
		t.Fatalf("POST /assets: %d %s", resp.status, resp.body)
	}
	id := assetIDOf(t, assetBase, fmt.Sprint(resp.fields(t)["asset_url"]))
	const msg = "Asset not found."
	e.do("GET", "/assets/"+id, e.tokenB, "", nil).wantError(t, "another workspace's asset", 404, msg)
	for _, bad := range []string{asset.NewID(), strings.ToUpper(id), "ast_nope", "uploads", "..%2Fws_b", id + "x"} {
		e.do("GET", "/assets/"+bad, e.tokenA, "", nil).wantError(t, "GET /assets/"+bad, 404, msg)
	}
	if got := e.do("GET", "/assets/"+id, e.tokenA, "", nil); got.status != 302 {
		t.Errorf("the owner: %d %s; want 302", got.status, got.body)
	}

	// Each workspace's files sit under its own prefix.
	respB := e.do("POST", "/assets", e.tokenB, "image/webp", webpBytes)
	idB := assetIDOf(t, assetBase, fmt.Sprint(respB.fields(t)["asset_url"]))
	list, err := e.s3.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(e.bucket)})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range list.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	slices.Sort(keys)
	want := []string{"assets/ws_a/" + id, "assets/ws_b/" + idB}
	if !slices.Equal(keys, want) {
		t.Errorf("bucket holds %v; want %v", keys, want)
	}
	e.do("GET", "/assets/"+idB, e.tokenA, "", nil).wantError(t, "ws_b's asset read by ws_a", 404, msg)
}

func TestAssetsNeedAValidToken(t *testing.T) {
	e := newAssetEnv(t)
	id := asset.NewID()
	requests := []struct{ method, path, contentType, body string }{
		{"POST", "/assets", "image/png", string(pngBytes)},
		{"POST", "/assets/uploads", "application/json", `{"content_type":"image/png","size":1}`},
		{"GET", "/assets/" + id, "", ""},
	}
	for _, r := range requests {
		what := r.method + " " + r.path
		e.do(r.method, r.path, "", r.contentType, []byte(r.body)).wantError(t, what+" without a token", 401, "You are not authenticated.")
		e.do(r.method, r.path, "gjs_"+strings.Repeat("A", 43), r.contentType, []byte(r.body)).wantError(t, what+" unknown token", 401, "You are not authenticated.")
		e.do(r.method, r.path, e.tokenOff, r.contentType, []byte(r.body)).wantError(t, what+" API disabled", 401, "API access is not enabled for this workspace.")
	}
	e.do("DELETE", "/assets/"+id, e.tokenA, "", nil).wantError(t, "DELETE /assets/{id}", 404, "Not found.")
	if records, objects := e.written(); records != 0 || objects != 0 {
		t.Errorf("%d records and %d objects; want none", records, objects)
	}
}

// API Gateway delivers a binary body base64-encoded; the adapter decodes
// it, and without a configured base URL the asset URL takes the domain the
// request reached.
func TestPostAssetThroughLambdaBase64Body(t *testing.T) {
	e := newAssetEnv(t)
	e.handler.BaseURL = ""
	const domain = "abc123.execute-api.us-east-1.amazonaws.com"
	req := httptest.NewRequest("POST", "https://"+domain+"/assets", bytes.NewReader(pngBytes))
	req.Header.Set("Authorization", "Bearer "+e.tokenA)
	req.Header.Set("Content-Type", "image/png")
	if ev := lambdatest.Event(req); !ev.IsBase64Encoded || ev.RequestContext.DomainName != domain {
		t.Fatalf("the event: base64 %v, domain %q", ev.IsBase64Encoded, ev.RequestContext.DomainName)
	}
	rec := httptest.NewRecorder()
	e.api.ServeHTTP(rec, req)
	if rec.Code != 201 {
		t.Fatalf("Lambda answer %d %s", rec.Code, rec.Body)
	}
	var m map[string]string
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	id := assetIDOf(t, "https://"+domain, m["asset_url"])
	a, err := assetsdb.New(e.store).Asset(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	obj, err := e.s3.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(e.bucket), Key: aws.String(a.Key)})
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Body.Close()
	if stored, _ := io.ReadAll(obj.Body); !bytes.Equal(stored, pngBytes) {
		t.Errorf("stored %d bytes; want the %d raw bytes, not their base64", len(stored), len(pngBytes))
	}
}
