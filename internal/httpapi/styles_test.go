package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"genjobs/internal/auth"
	"genjobs/internal/clock"
	"genjobs/internal/httpapi"
	"genjobs/internal/httpapi/lambdatest"
	"genjobs/internal/store"
	"genjobs/internal/store/accountsdb"
	"genjobs/internal/store/schema"
	"genjobs/internal/store/stylesdb"
	"genjobs/internal/store/tokensdb"
	"genjobs/internal/style"
	"genjobs/internal/testenv"
)

const testAppURL = "https://app.genjobs.test"

// countingStyles counts the share-link reads the handler asks for.
type countingStyles struct {
	*stylesdb.DB
	shareReads atomic.Int64
}

func (c *countingStyles) ShareLink(ctx context.Context, id, owner, token string, at time.Time) (string, bool, error) {
	c.shareReads.Add(1)
	return c.DB.ShareLink(ctx, id, owner, token, at)
}

// styleEnv is the styles function on its own table, with workspaces ws_a
// and ws_b (API enabled) and their tokens.
type styleEnv struct {
	t              *testing.T
	store          *store.Store
	styles         *countingStyles
	api            http.Handler
	tokenA, tokenB string
	at             time.Time
}

func newStyleEnv(t *testing.T) *styleEnv { t.Helper(); return newStyleEnvAt(t, testAppURL) }

// newStyleEnvAt is newStyleEnv with the styles handler's AppURL (APP_URL).
func newStyleEnvAt(t *testing.T, appURL string) *styleEnv {
	t.Helper()
	ctx := context.Background()
	db := testenv.DynamoDB(t)
	table := testenv.UniqueName(t, "styles")
	if err := schema.CreateTable(ctx, db, table); err != nil {
		t.Fatal(err)
	}
	e := &styleEnv{t: t, store: store.New(db, table), at: now}
	e.styles = &countingStyles{DB: stylesdb.New(e.store)}
	for _, ws := range []string{"ws_a", "ws_b"} {
		if err := accountsdb.New(e.store).CreateWorkspace(ctx, auth.Workspace{ID: ws, Name: ws, APIEnabled: true, CreatedAt: now}); err != nil {
			t.Fatal(err)
		}
		token, hash := auth.NewToken()
		if err := tokensdb.New(e.store).CreateToken(ctx, auth.Token{ID: "tok_" + ws, WorkspaceID: ws, Hash: hash, CreatedAt: now}); err != nil {
			t.Fatal(err)
		}
		if ws == "ws_a" {
			e.tokenA = token
		} else {
			e.tokenB = token
		}
	}
	h := &httpapi.Styles{Auth: auth.Authenticator{Dir: tokensdb.Directory(e.store)}, Styles: e.styles, Clock: &clock.Fixed{T: now}, AppURL: appURL}
	e.api = lambdatest.Handler(httpapi.Middleware(slog.New(slog.NewJSONHandler(io.Discard, nil)), h.Routes()))
	return e
}

// add stores a style of owner (nil: the service) one second after the last.
func (e *styleEnv) add(id string, owner *style.Caller, change func(*style.Style)) {
	e.t.Helper()
	e.at = e.at.Add(time.Second)
	st := style.Style{ID: id, Title: "Style " + id, Prompt: "p", Models: []string{"model-e-4"},
		URLs: []string{"https://img.test/" + id + ".png"}, CreatedAt: e.at, Owner: style.Owner{Kind: style.OwnerService}}
	if owner != nil {
		st.WorkspaceID = owner.WorkspaceID
		st.Owner = style.APIOwner(owner.WorkspaceID)
		if owner.UserID != style.APIUserID(owner.WorkspaceID) {
			st.Owner = style.Owner{Kind: style.OwnerApp, ID: owner.UserID, Name: "Ann"}
		}
	}
	if change != nil {
		change(&st)
	}
	if err := e.styles.CreateStyle(context.Background(), st); err != nil {
		e.t.Fatal(err)
	}
}

func (e *styleEnv) get(path, token string) response {
	e.t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	e.api.ServeHTTP(rec, req)
	b, _ := io.ReadAll(rec.Result().Body)
	return response{rec.Code, rec.Result().Header, b}
}

type stylePage struct {
	Items      []map[string]any `json:"items"`
	NextCursor *string          `json:"next_cursor"`
}

func (e *styleEnv) page(path, token string) stylePage {
	e.t.Helper()
	r := e.get(path, token)
	if r.status != http.StatusOK {
		e.t.Fatalf("GET %s: %d %s", path, r.status, r.body)
	}
	matchesSchema(e.t, "StyleList", r.body)
	var p stylePage
	if err := json.Unmarshal(r.body, &p); err != nil {
		e.t.Fatal(err)
	}
	return p
}

func ids(p stylePage) []string {
	var out []string
	for _, it := range p.Items {
		out = append(out, it["id"].(string))
	}
	return out
}

var (
	callerA = style.APICaller("ws_a")
	callerB = style.APICaller("ws_b")
	appUser = style.Caller{WorkspaceID: "ws_a", UserID: "3b0f1a2c-5d6e-4f70-8a9b-0c1d2e3f4a5b"}
)

func TestStyleListRecordsAndVisibility(t *testing.T) {
	e := newStyleEnv(t)
	e.add("a_own", &callerA, nil)
	e.add("app_private", &appUser, nil)
	e.add("app_shared", &appUser, func(s *style.Style) { s.Share("ws_a") })
	e.add("b_own", &callerB, nil)
	e.add("svc", nil, func(s *style.Style) { s.Public = true; s.URLs = nil })
	if _, _, err := e.styles.LikeStyle(context.Background(), callerA, "svc", now); err != nil {
		t.Fatal(err)
	}

	p := e.page("/styles", e.tokenA)
	if got, want := ids(p), []string{"svc", "app_shared", "a_own"}; !slices.Equal(got, want) || p.NextCursor != nil {
		t.Fatalf("A's styles %v (next %v); want %v and no cursor", got, p.NextCursor, want)
	}
	svc, own := p.Items[0], p.Items[2]
	if svc["owner"] != nil || svc["like_count"] != 1.0 || svc["cover_url"] != "" || svc["public"] != true {
		t.Errorf("service style %v; want owner null, 1 like, no cover, public", svc)
	}
	owner := own["owner"].(map[string]any)
	if owner["id"] != style.APIUserID("ws_a") || owner["name"] != "API" || owner["avatar_url"] != testAppURL+"/avatars/"+style.APIUserID("ws_a") {
		t.Errorf("the API user's style's owner %v", owner)
	}
	if own["cover_url"] != "https://img.test/a_own.png" || own["created_at"] != "2026-11-21T20:33:01.120Z" {
		t.Errorf("own style %v", own)
	}
	if got := ids(e.page("/styles", e.tokenB)); !slices.Equal(got, []string{"svc", "b_own"}) {
		t.Errorf("B's styles %v; want svc, b_own", got)
	}
	for path, want := range map[string][]string{
		"/styles?filter=user":                             {"a_own"},
		"/styles?filter=shared":                           {"app_shared"},
		"/styles?filter=service&liked=true":               {"svc"},
		"/styles?liked=false&filter=service":              {"svc"},
		"/styles?user=" + appUser.UserID:                  {"app_shared"},
		"/styles?user=" + strings.ToUpper(appUser.UserID): {"app_shared"},
		"/styles?user=api:ws_a":                           {"a_own"},
		"/styles?user=api:ws_b":                           nil,
		"/styles?ids=b_own,a_own,svc,nope,a_own":          {"svc", "a_own"},
		"/styles?model=model-c":                           nil,
		"/styles?model=model-e-4&filter=user":             {"a_own"},
	} {
		if got := ids(e.page(path, e.tokenA)); !slices.Equal(got, want) {
			t.Errorf("%s: %v; want %v", path, got, want)
		}
	}
}

func TestStyleCursorPagesOverHTTP(t *testing.T) {
	e := newStyleEnv(t)
	for _, id := range []string{"s1", "s2", "s3", "s4", "s5"} {
		e.add(id, &callerA, nil)
	}
	var got []string
	path := "/styles?filter=user&limit=2"
	var first string
	for pages := 1; ; pages++ {
		p := e.page(path, e.tokenA)
		got = append(got, ids(p)...)
		e.add("new"+string(rune('0'+pages)), &callerA, nil) // added during the walk
		if p.NextCursor == nil {
			if pages != 3 {
				t.Errorf("%d pages; want 3", pages)
			}
			break
		}
		if first == "" {
			first = *p.NextCursor
		}
		path = "/styles?filter=user&limit=2&cursor=" + *p.NextCursor
	}
	if want := []string{"s5", "s4", "s3", "s2", "s1"}; !slices.Equal(got, want) {
		t.Errorf("walked %v; want %v", got, want)
	}
	// The cursor goes on with another limit, not in another query or workspace.
	if p := e.page("/styles?cursor="+first+"&limit=100&filter=user", e.tokenA); !slices.Equal(ids(p), []string{"s3", "s2", "s1"}) {
		t.Errorf("with limit=100: %v", ids(p))
	}
	const bad = "The query is invalid: cursor is not valid for this workspace and query"
	for _, tc := range []struct{ path, token string }{
		{"/styles?filter=user&limit=2&cursor=" + first, e.tokenB},
		{"/styles?limit=2&cursor=" + first, e.tokenA},
		{"/styles?filter=user&limit=2&liked=true&cursor=" + first, e.tokenA},
		{"/styles?filter=user&cursor=" + first[:len(first)-2], e.tokenA},
		{"/styles?filter=user&cursor=%7B%7D", e.tokenA},
	} {
		r := e.get(tc.path, tc.token)
		if r.status != http.StatusBadRequest || r.errorText(t) != bad {
			t.Errorf("%s: %d %s; want 400 %q", tc.path, r.status, r.body, bad)
		}
	}
}

func TestStyleQueryErrors(t *testing.T) {
	e := newStyleEnv(t)
	const prefix = "The query is invalid: "
	filters := "filter must be one of all, user, community, service, shared, unapproved, editor, gallery, public"
	for query, want := range map[string]string{
		"limit=0":                                "limit must be an integer between 1 and 1000",
		"limit=1001":                             "limit must be an integer between 1 and 1000",
		"limit=1.5":                              "limit must be an integer between 1 and 1000",
		"limit=":                                 "limit must be an integer between 1 and 1000",
		"filter=popular":                         filters,
		"filter=ALL":                             filters,
		"filter=":                                filters,
		"liked=yes":                              "liked must be true or false",
		"liked=1":                                "liked must be true or false",
		"liked=":                                 "liked must be true or false",
		"ids=":                                   "ids must be style ids separated by commas",
		"ids=a,,b":                               "ids must be style ids separated by commas",
		"ids=a%20b":                              "ids must be style ids separated by commas",
		"ids=" + strings.Repeat("x,", 100) + "x": "ids has 101 ids; at most 100 are allowed",
		"ids=" + strings.Repeat("x", 129):        "ids must be style ids separated by commas",
		"user=bob":                               "user must be an owner id: a UUID, or api: followed by a workspace id",
		"user=api:":                              "user must be an owner id: a UUID, or api: followed by a workspace id",
		"model=model-x":                          "model must be one of standard-enhance, model-b-fast, model-c, model-d-flash-1.1, model-e-4, model-f-2.2, model-g-3.1-rapid",
		"cursor=":                                "cursor is not valid for this workspace and query",
		"cursor=abc":                             "cursor is not valid for this workspace and query",
		"colour=red":                             "colour is not a known query parameter",
		"Filter=all":                             "Filter is not a known query parameter",
		"limit=5&limit=6":                        "limit is given more than once",
		"filter=all&filter=all":                  "filter is given more than once",
		"a=%zz":                                  "the query string is not well formed",
		// The first broken rule by parameter name, whatever the order given.
		"zeta=1&filter=bogus":      filters,
		"limit=0&filter=bogus":     filters,
		"user=x&limit=0":           "limit must be an integer between 1 and 1000",
		"liked=maybe&ids=a,,":      "ids must be style ids separated by commas",
		"filter=bogus&cursor=abc":  "cursor is not valid for this workspace and query",
		"model=m&limit=1&limit=2":  "limit is given more than once",
		"unknown=1&user=x&model=m": "model must be one of standard-enhance, model-b-fast, model-c, model-d-flash-1.1, model-e-4, model-f-2.2, model-g-3.1-rapid",
	} {
		for range 3 { // the same answer every time
			r := e.get("/styles?"+query, e.tokenA)
			if r.status != http.StatusBadRequest || r.errorText(t) != prefix+want {
				t.Errorf("?%s: %d %s; want 400 %q", query, r.status, r.body, prefix+want)
				break
			}
		}
	}
	// Without a token: 401 before anything else.
	for _, path := range []string{"/styles", "/styles?filter=bogus", "/styles/sty_1/share/link", "/styles/" + strings.Repeat("x", 200) + "/share/link"} {
		r := e.get(path, "")
		if r.status != http.StatusUnauthorized || r.errorText(t) != "You are not authenticated." {
			t.Errorf("%s without a token: %d %s", path, r.status, r.body)
		}
	}
	if r := e.get("/styles/sty_1", e.tokenA); r.status != http.StatusNotFound || r.errorText(t) != "Not found." {
		t.Errorf("an unknown path: %d %s", r.status, r.body)
	}
}

var shareLinkPattern = regexp.MustCompile(`^` + regexp.QuoteMeta(testAppURL) + `/styles/shared/[A-Za-z0-9_-]{43}$`)

func (e *styleEnv) share(id, token string) (int, string, bool) {
	e.t.Helper()
	r := e.get("/styles/"+id+"/share/link", token)
	if r.status != http.StatusOK && r.status != http.StatusCreated {
		return r.status, r.errorText(e.t), false
	}
	matchesSchema(e.t, "ShareLink", r.body)
	var body struct {
		Link  string `json:"share_link"`
		IsNew bool   `json:"is_new"`
	}
	if err := json.Unmarshal(r.body, &body); err != nil {
		e.t.Fatal(err)
	}
	if !shareLinkPattern.MatchString(body.Link) {
		e.t.Errorf("share link %q; want %s/styles/shared/ and a 43-character token", body.Link, testAppURL)
	}
	return r.status, body.Link, body.IsNew
}

func TestShareLink(t *testing.T) {
	e := newStyleEnv(t)
	e.add("mine", &callerA, nil)
	e.add("app", &appUser, func(s *style.Style) { s.Share("ws_a") })
	e.add("theirs", &callerB, func(s *style.Style) { s.Share("ws_a") })
	e.add("svc", nil, nil)

	status, link, isNew := e.share("mine", e.tokenA)
	if status != http.StatusCreated || !isNew {
		t.Fatalf("first request: %d %s new=%v; want 201, new", status, link, isNew)
	}
	for range 2 {
		if s, again, n := e.share("mine", e.tokenA); s != http.StatusOK || n || again != link {
			t.Errorf("later request: %d %s new=%v; want 200, the same link, not new", s, again, n)
		}
	}
	const notFound = "Style not found or you are not the owner."
	for _, tc := range []struct{ id, token, why string }{
		{"mine", e.tokenB, "another workspace's style"},
		{"app", e.tokenA, "an application user's style, shared with the workspace"},
		{"theirs", e.tokenA, "a style shared with the workspace by another"},
		{"svc", e.tokenA, "the service's style"},
		{"nope", e.tokenA, "a missing style"},
		{strings.Repeat("x", 128), e.tokenA, "a missing style of the longest id"},
	} {
		if s, msg, _ := e.share(tc.id, tc.token); s != http.StatusNotFound || msg != notFound {
			t.Errorf("%s: %d %q; want 404 %q", tc.why, s, msg, notFound)
		}
	}
	// Ids no style can have are not found without reading anything.
	reads := e.styles.shareReads.Load()
	for _, id := range []string{strings.Repeat("x", 129), "sty.1", "sty%20x", "sty%2Fx", "st%C3%BF", "sty~1"} {
		if s, msg, _ := e.share(id, e.tokenA); s != http.StatusNotFound || msg != notFound {
			t.Errorf("id %q: %d %q; want 404", id, s, msg)
		}
	}
	if n := e.styles.shareReads.Load() - reads; n != 0 {
		t.Errorf("malformed ids made %d reads; want none", n)
	}
	st, err := e.styles.SharedStyle(context.Background(), link[strings.LastIndex(link, "/")+1:])
	if err != nil || st.ID != "mine" {
		t.Errorf("the link's token resolves to %q, %v; want mine", st.ID, err)
	}
}

// Two first requests at once: one answers 201 and is_new true, the other
// 200 and is_new false, with the same link.
func TestShareLinkTwoFirstRequestsAtOnce(t *testing.T) {
	e := newStyleEnv(t)
	for i := range 6 {
		id := "race" + string(rune('a'+i))
		e.add(id, &callerA, nil)
		type answer struct {
			status int
			link   string
			isNew  bool
		}
		var answers [2]answer
		start := make(chan struct{})
		var wg sync.WaitGroup
		for j := range answers {
			wg.Go(func() {
				<-start
				s, l, n := e.share(id, e.tokenA)
				answers[j] = answer{s, l, n}
			})
		}
		close(start)
		wg.Wait()
		a, b := answers[0], answers[1]
		if a.link != b.link || a.isNew == b.isNew || a.status+b.status != http.StatusOK+http.StatusCreated {
			t.Fatalf("%s: %+v and %+v; want one 201 is_new true, one 200 is_new false, one link", id, a, b)
		}
		if (a.status == http.StatusCreated) != a.isNew {
			t.Errorf("%+v: 201 goes with is_new true", a)
		}
	}
}

// Without APP_URL (the template's default), share links and avatars are
// under https://{the API domain the request reached}/app: API Gateway's
// requestContext.domainName, which the Lambda adapter makes the request's
// host.
func TestWithoutAnAppURLLinksAreOnTheRequestsAPIDomain(t *testing.T) {
	e := newStyleEnvAt(t, "")
	e.add("mine", &callerA, nil)
	const domain = "a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com"
	get := func(path string) response {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Host = domain
		req.Header.Set("Authorization", "Bearer "+e.tokenA)
		if ev := lambdatest.Event(req); ev.RequestContext.DomainName != domain {
			t.Fatalf("the event's domainName is %q", ev.RequestContext.DomainName)
		}
		rec := httptest.NewRecorder()
		e.api.ServeHTTP(rec, req)
		return response{rec.Code, rec.Result().Header, rec.Body.Bytes()}
	}
	app := "https://" + domain + "/app"
	r := get("/styles/mine/share/link")
	var link struct {
		ShareLink string `json:"share_link"`
	}
	if err := json.Unmarshal(r.body, &link); err != nil || r.status != http.StatusCreated || !strings.HasPrefix(link.ShareLink, app+"/styles/shared/") {
		t.Errorf("share link: %d %s; want 201 and a link under %s", r.status, r.body, app)
	}
	r = get("/styles?filter=all")
	if r.status != http.StatusOK || !strings.Contains(string(r.body), `"avatar_url":"`+app+"/avatars/"+style.APIUserID("ws_a")+`"`) {
		t.Errorf("list: %d %s; want the owner's avatar under %s", r.status, r.body, app)
	}
}
