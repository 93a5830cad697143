package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"html"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"genjobs/infra/local/devstack/devstacktest"
	"genjobs/internal/billing"
	"genjobs/internal/catalog"
	"genjobs/internal/catalog/form"
	"genjobs/internal/job"
	"genjobs/internal/member"
	"genjobs/internal/store"
	"genjobs/internal/store/accountsdb"
	"genjobs/internal/store/assetsdb"
)

// playWorkspace is a workspace whose jobs stay backlogged (max_running 0):
// the playground's jobs and the API's are compared as created, and none of
// them runs to fetch the examples' images from outside the machine.
const playWorkspace = "ws_play"

// playStack serves a stack with playWorkspace (25 USD, its token) and a
// member of it signed in; the workspace has units compute units.
func playStack(t *testing.T, units billing.Units) (*devstacktest.Stack, *browser, string) {
	t.Helper()
	s := devstacktest.Start(t)
	token := s.Workspace(t, playWorkspace, 25*devstacktest.USD, 20, 1)
	// No running slot: every job stays backlogged.
	setRunning(t, s, playWorkspace, 0)
	if units > 0 {
		if _, err := accountsdb.New(s.Store).SetPlan(context.Background(), playWorkspace, units, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	person(t, s, "player@example.com", playWorkspace, member.Member)
	b := newBrowser(t, s)
	b.signIn("player@example.com", password)
	return s, b, token
}

// setRunning sets a workspace's max_running: 0 keeps every new job
// backlogged (CreateWorkspace takes 0 for the default, so the item is
// changed here); the sweeper promotes the backlog once there are slots.
func setRunning(t testing.TB, s *devstacktest.Stack, ws string, n int) {
	t.Helper()
	if _, err := s.Store.Client().UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName: aws.String(s.Local.Table),
		Key: map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: store.WorkspacePK(ws)},
			"SK": &types.AttributeValueMemberS{Value: "WS"}},
		UpdateExpression:          aws.String("SET max_running = :n"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":n": &types.AttributeValueMemberN{Value: strconv.Itoa(n)}},
	}); err != nil {
		t.Fatal(err)
	}
}

var keyField = regexp.MustCompile(`name="key" value="([^"]+)"`)

// playground opens a model's page and returns the form's hidden fields.
func (b *browser) playground(route string) (page, url.Values) {
	b.t.Helper()
	p := b.get("/app/models/" + route)
	if p.status != http.StatusOK {
		b.t.Fatalf("/app/models/%s: %d\n%s", route, p.status, p.body)
	}
	csrf, key := csrfField.FindStringSubmatch(p.body), keyField.FindStringSubmatch(p.body)
	if csrf == nil || key == nil {
		b.t.Fatalf("/app/models/%s has no CSRF token or key", route)
	}
	return p, url.Values{"csrf": {csrf[1]}, "key": {key[1]}, "workspace": {playWorkspace}}
}

// postMultipart sends a form as the playground's page does
// (multipart/form-data), with files by field.
func (b *browser) postMultipart(path string, values url.Values, files map[string][]byte) page {
	b.t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for k, vs := range values {
		for _, v := range vs {
			_ = mw.WriteField(k, v)
		}
	}
	for name, data := range files {
		// As a browser sends a .png file.
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", `form-data; name="`+name+`"; filename="upload.png"`)
		h.Set("Content-Type", "image/png")
		w, _ := mw.CreatePart(h)
		_, _ = w.Write(data)
	}
	_ = mw.Close()
	req, _ := http.NewRequest(http.MethodPost, b.stack.URL+path, &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Origin", b.origin)
	return b.do(req)
}

// typed is what a person types into the form for body: each field as
// text, a list one item a line, a ticked box "true", over the form's
// hidden fields.
func typed(t *testing.T, hidden url.Values, body []byte) url.Values {
	t.Helper()
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		t.Fatal(err)
	}
	v := url.Values{}
	for k, x := range hidden {
		v[k] = x
	}
	for name, raw := range fields {
		var s string
		var list []string
		switch {
		case json.Unmarshal(raw, &s) == nil:
			v.Set(name, s)
		case json.Unmarshal(raw, &list) == nil:
			v.Set(name, strings.Join(list, "\n"))
		case string(raw) == "false":
		default:
			v.Set(name, string(raw))
		}
	}
	return v
}

var jobLocation = regexp.MustCompile(`^/app/jobs/([0-9a-f-]{36})$`)

// read reads a job whole: its record and its request as accepted.
func read(t *testing.T, s *devstacktest.Stack, id string) *job.Job {
	t.Helper()
	ctx := context.Background()
	j, err := s.Store.Job(ctx, id)
	if err == nil {
		j.Request, err = s.Store.JobRequest(ctx, id)
	}
	if err != nil || len(j.Request) == 0 {
		t.Fatalf("job %s: %v, request %q", id, err, j.Request)
	}
	return j
}

// ran reads the job a Run redirected to.
func ran(t *testing.T, s *devstacktest.Stack, p page) *job.Job {
	t.Helper()
	m := jobLocation.FindStringSubmatch(p.location)
	if p.status != http.StatusSeeOther || m == nil {
		t.Fatalf("Run: %d %q; want a redirect to the job's page\n%s", p.status, p.location, p.body)
	}
	return read(t, s, m[1])
}

// restJob creates a job with the API token and reads it.
func restJob(t *testing.T, s *devstacktest.Stack, token, path string, body []byte) *job.Job {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.URL+path, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var rec struct {
		ID string `json:"job_id"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&rec); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %d %v", path, resp.StatusCode, err)
	}
	return read(t, s, rec.ID)
}

var priceUnits = regexp.MustCompile(`id="price"[^>]*data-units="([0-9]*)"`)

// shownUnits is the CU price a playground page shows ("" for none).
func shownUnits(t *testing.T, p page) string {
	t.Helper()
	m := priceUnits.FindStringSubmatch(p.body)
	if m == nil {
		t.Fatalf("no price on the page (%d)\n%s", p.status, p.body)
	}
	return m[1]
}

// setUnits sets the workspace's available compute units, as a month of
// runs would have left them.
func setUnits(t testing.TB, s *devstacktest.Stack, ws string, n int) {
	t.Helper()
	if _, err := s.Store.Client().UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName: aws.String(s.Local.Table),
		Key: map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: store.WorkspacePK(ws)},
			"SK": &types.AttributeValueMemberS{Value: "WS"}},
		UpdateExpression:          aws.String("SET cu_available = :n"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":n": &types.AttributeValueMemberN{Value: strconv.Itoa(n)}},
	}); err != nil {
		t.Fatal(err)
	}
}

func usdBalance(t *testing.T, s *devstacktest.Stack, ws string) billing.Balance {
	t.Helper()
	b, err := accountsdb.New(s.Store).Balance(context.Background(), ws)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func units(t *testing.T, s *devstacktest.Stack, ws string) billing.UnitBalance {
	t.Helper()
	u, _, err := accountsdb.New(s.Store).Units(context.Background(), ws)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func jobsOf(t *testing.T, s *devstacktest.Stack, ws string) []*job.Job {
	t.Helper()
	page, err := s.Store.ListJobs(context.Background(), ws, job.Query{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return page.Jobs
}

// TestEveryPlaygroundMakesTheJobTheAPIWould builds each of the 7 models'
// playground from its schema, types the endpoint's documented example
// into it and runs it as a member: the job is the one the same example
// sent to the API with a token makes (the same request as accepted, the
// same price), billed in compute units to the workspace and attributed
// to the person, at the CU price the form showed.
func TestEveryPlaygroundMakesTheJobTheAPIWould(t *testing.T) {
	s, b, token := playStack(t, 100000)
	cat, err := catalog.New()
	if err != nil {
		t.Fatal(err)
	}
	perUSD := int64(100)
	for _, e := range cat.Endpoints() {
		route := strings.TrimPrefix(e.Path(), "/generate/")
		t.Run(e.Model, func(t *testing.T) {
			p, hidden := b.playground(route)
			fields, err := form.Fields(e)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range fields {
				if !strings.Contains(p.body, `name="`+f.Name+`"`) {
					t.Errorf("the form has no input for %s", f.Name)
				}
			}
			values := typed(t, hidden, e.Example())
			values.Set("action", "price")
			priced := b.postMultipart("/app/models/"+route, values, nil)
			shown := shownUnits(t, priced)
			values.Del("action")

			before := units(t, s, playWorkspace)
			app := ran(t, s, b.postMultipart("/app/models/"+route, values, nil))
			api := restJob(t, s, token, e.Path(), e.Example())

			if !bytes.Equal(app.Request, api.Request) || app.Endpoint != api.Endpoint {
				t.Errorf("the playground's job asks for %s %s; the API's for %s %s", app.Endpoint, app.Request, api.Endpoint, api.Request)
			}
			if app.Price != api.Price || app.Price <= 0 {
				t.Errorf("the playground's job is priced %s USD; the API's %s", app.Price, api.Price)
			}
			if want := billing.ToUnits(api.Price, perUSD); app.Units != want || app.Units.String() != shown {
				t.Errorf("the job holds %d CU; the form showed %q, and %s USD is %d CU", app.Units, shown, api.Price, want)
			}
			if app.Currency != billing.CurrencyCU || app.Source != job.SourceApp || app.CreatedBy != "player@example.com" || app.PersonID == "" {
				t.Errorf("the playground's job: currency %q, source %q, by %q (%q)", app.Currency, app.Source, app.CreatedBy, app.PersonID)
			}
			if api.Currency != billing.CurrencyUSD || api.Source != job.SourceAPI {
				t.Errorf("the API's job: currency %q, source %q", api.Currency, api.Source)
			}
			if after := units(t, s, playWorkspace); after.Reserved-before.Reserved != app.Units || before.Available-after.Available != app.Units {
				t.Errorf("compute units %+v -> %+v; want %d CU held", before, after, app.Units)
			}
		})
	}
}

// TestThePlaygroundShowsTheAPIsRefusal sends values the API refuses: the
// page shows the API's own message beside the field, and nothing is
// created or held.
func TestThePlaygroundShowsTheAPIsRefusal(t *testing.T) {
	s, b, _ := playStack(t, 1000)
	const route = "image/vendor-b/model-e-4"
	_, hidden := b.playground(route)
	cat, _ := catalog.New()
	e, _ := cat.Lookup("image", "vendor-b", "model-e-4")
	before := units(t, s, playWorkspace)
	for _, c := range []struct {
		field  string
		values map[string]string
	}{
		{"width", map[string]string{"prompt": "a kite", "width": "5000", "height": "64"}},
		{"height", map[string]string{"prompt": "a kite", "width": "64", "height": "tall"}},
		{"prompt", map[string]string{"width": "64", "height": "64"}},
		{"style_images", map[string]string{"prompt": "a kite", "width": "64", "height": "64", "style_images": "ftp://example.com/a.png"}},
	} {
		values := url.Values{}
		for k, v := range hidden {
			values[k] = v
		}
		body := map[string]any{}
		for k, v := range c.values {
			values.Set(k, v)
			body[k] = v
		}
		// The API's own words for the same values.
		fields, _ := form.Fields(e)
		_, apiErr := e.Decode(form.Body(fields, values), time.Now())
		if apiErr == nil {
			t.Fatalf("%v: the API accepts it", c.values)
		}
		p := b.postMultipart("/app/models/"+route, values, nil)
		want := `id="problem-` + c.field + `" role="alert">` + html.EscapeString(apiErr.Error()) + `<`
		if p.status != http.StatusBadRequest || !strings.Contains(p.body, want) {
			t.Errorf("%v: %d; want 400 and the API's %q beside %s\n%s", c.values, p.status, apiErr, c.field, p.body)
		}
	}
	// No CSRF token: refused, nothing created.
	values := typed(t, url.Values{"workspace": {playWorkspace}, "key": hidden["key"]}, e.Example())
	if p := b.postMultipart("/app/models/"+route, values, nil); p.status != http.StatusForbidden {
		t.Errorf("a run without the CSRF token: %d; want 403", p.status)
	}
	if jobs := jobsOf(t, s, playWorkspace); len(jobs) != 0 {
		t.Errorf("refused runs made %d jobs", len(jobs))
	}
	if after := units(t, s, playWorkspace); after != before {
		t.Errorf("refused runs moved compute units: %+v -> %+v", before, after)
	}
}

// TestThePlaygroundOutOfComputeUnits runs a model in a workspace with USD
// on its API balance and no compute units: the page says so, no job is
// made, and the USD balance is not used instead.
func TestThePlaygroundOutOfComputeUnits(t *testing.T) {
	s, b, _ := playStack(t, 0)
	const route = "image/vendor-b/model-e-4"
	_, hidden := b.playground(route)
	usd, err := accountsdb.New(s.Store).Balance(context.Background(), playWorkspace)
	if err != nil {
		t.Fatal(err)
	}
	p := b.postMultipart("/app/models/"+route, typed(t, hidden, []byte(`{"prompt":"a kite","width":64,"height":64}`)), nil)
	if p.status != http.StatusPaymentRequired || !strings.Contains(p.body, `id="run-problem" role="alert">Your workspace has run out of compute units.<`) {
		t.Errorf("a run without compute units: %d; want 402 and the message\n%s", p.status, p.body)
	}
	if jobs := jobsOf(t, s, playWorkspace); len(jobs) != 0 {
		t.Errorf("a run without compute units made %d jobs", len(jobs))
	}
	after, err := accountsdb.New(s.Store).Balance(context.Background(), playWorkspace)
	if err != nil {
		t.Fatal(err)
	}
	if after != usd {
		t.Errorf("the USD balance moved: %+v -> %+v", usd, after)
	}
}

// TestASecondRunOfTheSameFormMakesOneJob sends the rendered form twice,
// as a double click does: both lead to the same job, held once.
func TestASecondRunOfTheSameFormMakesOneJob(t *testing.T) {
	s, b, _ := playStack(t, 1000)
	const route = "image/vendor-b/model-e-4"
	_, hidden := b.playground(route)
	values := typed(t, hidden, []byte(`{"prompt":"a kite","width":64,"height":64}`))
	first := ran(t, s, b.postMultipart("/app/models/"+route, values, nil))
	second := ran(t, s, b.postMultipart("/app/models/"+route, values, nil))
	if first.ID != second.ID {
		t.Errorf("two clicks made jobs %s and %s", first.ID, second.ID)
	}
	if jobs := jobsOf(t, s, playWorkspace); len(jobs) != 1 {
		t.Errorf("two clicks made %d jobs", len(jobs))
	}
	if u := units(t, s, playWorkspace); u.Reserved != first.Units {
		t.Errorf("%d CU held; want one job's %d", u.Reserved, first.Units)
	}
	// The page opened again has a new key: its Run is a new job.
	_, again := b.playground(route)
	if again.Get("key") == hidden.Get("key") {
		t.Error("a new page has the same key")
	}
}

// TestThePlaygroundStoresAnUploadedImage runs model-b-fast with a start
// image uploaded with the form: the job's start_image is an asset of the
// workspace holding the file.
func TestThePlaygroundStoresAnUploadedImage(t *testing.T) {
	s, b, _ := playStack(t, 100000)
	const route = "video/vendor-b/model-b-fast"
	_, hidden := b.playground(route)
	values := typed(t, hidden, []byte(`{"prompt":"a kite"}`))
	j := ran(t, s, b.postMultipart("/app/models/"+route, values, map[string][]byte{"start_image.file": tinyPNG}))
	var req struct {
		StartImage string `json:"start_image"`
	}
	_ = json.Unmarshal(j.Request, &req)
	if !strings.HasPrefix(req.StartImage, s.URL+"/assets/ast_") {
		t.Fatalf("start_image is %q; want an asset URL of the stack (%s)", req.StartImage, j.Request)
	}
	a, err := assetsdb.New(s.Store).Asset(context.Background(), strings.TrimPrefix(req.StartImage, s.URL+"/assets/"))
	if err != nil || a.WorkspaceID != playWorkspace || a.Size != int64(len(tinyPNG)) {
		t.Fatalf("the asset: %+v, %v", a, err)
	}
	obj, err := s.Local.S3.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(s.Local.AssetsBucket), Key: aws.String(a.Key)})
	if err != nil {
		t.Fatalf("the asset's bytes: %v", err)
	}
	stored, _ := io.ReadAll(obj.Body)
	obj.Body.Close()
	if !bytes.Equal(stored, tinyPNG) || aws.ToString(obj.ContentType) != "image/png" {
		t.Errorf("the assets bucket holds %d bytes of %s; want the uploaded PNG", len(stored), aws.ToString(obj.ContentType))
	}
	// A file that is not an image: the API's refusal, no job.
	n := len(jobsOf(t, s, playWorkspace))
	_, hidden = b.playground(route)
	p := b.postMultipart("/app/models/"+route, typed(t, hidden, []byte(`{"prompt":"a kite"}`)), map[string][]byte{"start_image.file": []byte("not an image")})
	if p.status != http.StatusBadRequest || !strings.Contains(p.body, "The request body is not a PNG, JPEG or WebP image.") {
		t.Errorf("a file that is no image: %d\n%s", p.status, p.body)
	}
	if len(jobsOf(t, s, playWorkspace)) != n {
		t.Error("a refused upload made a job")
	}
}

// tinyPNG is a 1x1 PNG.
var tinyPNG = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\xff\xff?\x00\x05\xfe\x02\xfe\xa7\x35\x81\x84\x00\x00\x00\x00IEND\xaeB`\x82")

// TestTheModelsPages lists every model with its price, fields and
// snippets from the schemas and the price list; an unknown model is the
// 404 page, for its page and its run.
func TestTheModelsPages(t *testing.T) {
	_, b, _ := playStack(t, 0)
	p := b.get("/app/models")
	if p.status != http.StatusOK {
		t.Fatalf("/app/models: %d\n%s", p.status, p.body)
	}
	cat, _ := catalog.New()
	for _, e := range cat.Endpoints() {
		fields, _ := form.Fields(e)
		for _, want := range []string{html.EscapeString(e.Summary), "POST " + e.Path(), e.ToolName(), `href="/app/models/` + strings.TrimPrefix(e.Path(), "/generate/") + `"`} {
			if !strings.Contains(p.body, want) {
				t.Errorf("/app/models does not show %s", want)
			}
		}
		for _, f := range fields {
			if !strings.Contains(p.body, "<code>"+f.Name+"</code>") || !strings.Contains(p.body, html.EscapeString(f.Bounds())) {
				t.Errorf("%s: the field %s or its bounds %q are missing", e.Model, f.Name, f.Bounds())
			}
		}
	}
	if !strings.Contains(p.body, "0.03 USD per job") || !strings.Contains(p.body, html.EscapeString(`-d '{"prompt":"A lighthouse at dusk, photographed on film","width":1024,"height":768,"seed":7}'`)) {
		t.Error("/app/models lacks model-e-4's price rule or its curl example")
	}
	if p := b.get("/app/models/image/vendor-b/no-such-model"); p.status != http.StatusNotFound || !strings.Contains(p.body, "There is no such page.") {
		t.Errorf("an unknown model's page: %d", p.status)
	}
	_, hidden := b.playground("image/vendor-b/model-e-4")
	if p := b.postMultipart("/app/models/image/vendor-b/no-such-model", hidden, nil); p.status != http.StatusNotFound {
		t.Errorf("a run of an unknown model: %d", p.status)
	}
}
