package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"genjobs/infra/local/devstack"
	"genjobs/infra/local/sam"
	"genjobs/internal/auth"
	"genjobs/internal/store"
	"genjobs/internal/store/accountsdb"
	"genjobs/internal/store/stylesdb"
	"genjobs/internal/style"
)

// The style listing's load: GET /styles?filter=all over a table of
// stylesTotal styles, of which the bench workspace's API user sees
// stylesVisible (its own, shared with it, the service's, the public
// listing) and not the rest (other workspaces' private styles, an
// application user's private ones, public ones not approved).
const (
	stylesTotal     = 10_000
	stylesWorkspace = "ws_bench_styles"
	stylesOther     = "ws_bench_styles_other"
	stylesClients   = 2
	stylesRequests  = 600
	stylesDuration  = 20 * time.Second
	stylesWarmup    = 30
	stylesWriters   = 8
)

// Application users of the bench's two workspaces.
const (
	stylesAppUser      = "9e8d7c6b-5a49-4382-9170-6f5e4d3c2b1a"
	stylesOtherAppUser = "9e8d7c6b-5a49-4382-9170-6f5e4d3c2b1b"
)

// stylesReport is the styles run.
type stylesReport struct {
	visible  int           // styles the bench workspace sees
	loadAvg  string        // the machine's load average before the requests
	populate time.Duration // storing stylesTotal styles
	list     loadStats     // GET /styles?filter=all, walking the pages
	walk     walkCheck     // one full walk, checked
}

type walkCheck struct {
	pages, styles int
	err           error
}

// benchStyle is style i of the bench's table; visible says whether the
// bench workspace's API user sees it.
func benchStyle(i int, base time.Time) (st style.Style, visible bool) {
	st = style.Style{
		ID: fmt.Sprintf("sty_bench_%05d", i), Title: fmt.Sprintf("Bench style %d", i), Prompt: "a prompt of a few words",
		URLs: []string{"https://images.example.com/styles/bench-" + strconv.Itoa(i) + ".jpg"}, Models: []string{"model-e-4", "model-f-2.2"},
		CreatedAt: base.Add(time.Duration(i) * time.Millisecond),
	}
	user := func(ws, id string) style.Owner {
		if id == "" {
			return style.APIOwner(ws)
		}
		return style.Owner{Kind: style.OwnerApp, ID: id, Name: "Bench user"}
	}
	switch i % 10 {
	case 0, 1: // its own
		st.WorkspaceID, st.Owner, visible = stylesWorkspace, user(stylesWorkspace, ""), true
	case 2: // an application user's, private: not seen through the API
		st.WorkspaceID, st.Owner = stylesWorkspace, user(stylesWorkspace, stylesAppUser)
	case 3: // an application user's, shared with the workspace
		st.WorkspaceID, st.Owner, st.SharedWith, visible = stylesWorkspace, user(stylesWorkspace, stylesAppUser), []string{stylesWorkspace}, true
	case 4: // another workspace's, private
		st.WorkspaceID, st.Owner = stylesOther, user(stylesOther, "")
	case 5, 6: // another workspace's, in the public listing
		st.WorkspaceID, st.Owner, st.Public, st.Approved, visible = stylesOther, user(stylesOther, ""), true, true, true
	case 7: // the service's
		st.Owner, visible = style.Owner{Kind: style.OwnerService}, true
	case 8: // the service's, public, some of them editor's picks
		st.Owner, st.Public, st.EditorsPick, visible = style.Owner{Kind: style.OwnerService}, true, i%20 == 8, true
	case 9: // another workspace's application user's, public, not approved yet
		st.WorkspaceID, st.Owner, st.Public = stylesOther, user(stylesOther, stylesOtherAppUser), true
	}
	return st, visible
}

// runStyles is `go run ./infra/bench styles`: the style listing's rows
// alone.
func runStyles(ctx context.Context, root string) error {
	tpl, err := sam.Load(filepath.Join(root, "template.yaml"))
	if err != nil {
		return err
	}
	before := loadAverage()
	rep, err := measureStylesStack(ctx, root, tpl)
	if err != nil {
		return err
	}
	r := &report{t: newReportTable(), host: runtime.GOOS + "/" + runtime.GOARCH}
	r.styles(rep)
	r.t.note("load average (1 min): %s before, %s after.", before, loadAverage())
	r.t.print(os.Stdout)
	if r.failed {
		return errors.New("some checks failed (see the table)")
	}
	return nil
}

// measureStylesStack starts emulators of its own (measureStack stops its
// pair when it returns) and measures the style listing on them.
func measureStylesStack(ctx context.Context, root string, tpl *sam.Template) (rep *stylesReport, err error) {
	err = withStack(ctx, root, "bench-styles-", func(clients *devstack.Stack) error {
		rep, err = measureStyles(ctx, tpl, clients)
		return err
	})
	return rep, err
}

// measureStyles stores the styles on a table of their own, serves the API
// and measures the style listing through it.
func measureStyles(ctx context.Context, tpl *sam.Template, local *devstack.Stack) (*stylesReport, error) {
	local.Table, local.JobsQueue = "genjobs-bench-styles", "genjobs-bench-styles-jobs"
	local.ResultsBucket, local.AssetsBucket = "genjobs-bench-styles-results", "genjobs-bench-styles-assets"
	if err := local.Provision(ctx); err != nil {
		return nil, err
	}
	if err := local.ProvisionQueues(ctx, tpl); err != nil {
		return nil, err
	}
	st := store.New(local.DynamoDB, local.Table)
	token, err := benchWorkspace(ctx, st, stylesWorkspace, 20)
	if err != nil {
		return nil, err
	}
	if err := accountsdb.New(st).CreateWorkspace(ctx, auth.Workspace{ID: stylesOther, Name: "Bench other", CreatedAt: time.Now()}); err != nil {
		return nil, err
	}
	rep := &stylesReport{}
	fmt.Fprintf(os.Stderr, "bench: storing %d styles (%d writers)...\n", stylesTotal, stylesWriters)
	begin := time.Now()
	if rep.visible, err = populateStyles(ctx, st); err != nil {
		return nil, err
	}
	rep.populate = time.Since(begin)

	served, err := serveAPI(tpl, local)
	if err != nil {
		return nil, err
	}
	defer served.close()
	c := newStylesClient(served.url, token)
	rep.walk = c.checkWalk(ctx, rep.visible)

	fmt.Fprintf(os.Stderr, "bench: GET /styles?filter=all (%d clients walking the pages)...\n", stylesClients)
	c.drive(ctx, stylesWarmup, stylesDuration)
	rep.loadAvg = loadAverage()
	rep.list = c.drive(ctx, stylesRequests, stylesDuration)
	return rep, ctx.Err()
}

// populateStyles stores the bench's styles through the store, as the CLI
// would, and returns how many the bench workspace sees.
func populateStyles(ctx context.Context, st *store.Store) (int, error) {
	base := time.Now().Add(-time.Hour)
	styles := stylesdb.New(st)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, stylesWriters)
	for w := range stylesWriters {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= stylesTotal || ctx.Err() != nil {
					return
				}
				s, _ := benchStyle(i, base)
				if err := styles.CreateStyle(ctx, s); err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	visible := 0
	for i := range stylesTotal {
		if _, v := benchStyle(i, base); v {
			visible++
		}
	}
	for _, err := range errs {
		if err != nil {
			return 0, fmt.Errorf("store the bench's styles: %w", err)
		}
	}
	return visible, nil
}

// stylesClient lists styles through the local API.
type stylesClient struct {
	http  *http.Client
	url   string
	token string
}

func newStylesClient(baseURL, token string) *stylesClient {
	return &stylesClient{
		http:  &http.Client{Timeout: startTimeout, Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: stylesClients}},
		url:   baseURL + "/styles?filter=all",
		token: token,
	}
}

// page gets one page: after the cursor, or the first.
func (c *stylesClient) page(ctx context.Context, cursor string) (ids []string, next string, err error) {
	u := c.url
	if cursor != "" {
		u += "&cursor=" + url.QueryEscape(cursor)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, "", err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, "", err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, "", fmt.Errorf("%d %s", resp.StatusCode, strings.TrimSpace(string(body)))
	}
	var p struct {
		Items []struct {
			ID string `json:"id"`
		} `json:"items"`
		Next *string `json:"next_cursor"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return nil, "", fmt.Errorf("not a style page: %w", err)
	}
	for _, it := range p.Items {
		ids = append(ids, it.ID)
	}
	if p.Next != nil {
		next = *p.Next
	}
	return ids, next, nil
}

// drive makes n requests (or runs for d) from stylesClients goroutines,
// each walking the pages from the first to the last and over again (from
// the first again after a failed page).
func (c *stylesClient) drive(ctx context.Context, n int, d time.Duration) loadStats {
	calls := make([]func(context.Context) error, stylesClients)
	for w := range calls {
		cursor := ""
		calls[w] = func(ctx context.Context) error {
			_, next, err := c.page(ctx, cursor)
			cursor = next // "" after an error
			return err
		}
	}
	return driveEach(ctx, n, d, calls)
}

// checkWalk walks every page once and checks that it shows each visible
// style exactly once.
func (c *stylesClient) checkWalk(ctx context.Context, want int) walkCheck {
	var w walkCheck
	seen := map[string]bool{}
	cursor := ""
	for {
		ids, next, err := c.page(ctx, cursor)
		if err != nil {
			w.err = err
			return w
		}
		w.pages++
		for _, id := range ids {
			if seen[id] {
				w.err = fmt.Errorf("style %s shown twice", id)
				return w
			}
			seen[id] = true
		}
		if next == "" {
			break
		}
		cursor = next
	}
	w.styles = len(seen)
	if w.styles != want {
		w.err = fmt.Errorf("the walk showed %d styles; the workspace sees %d", w.styles, want)
	}
	return w
}

func (r *report) styles(s *stylesReport) {
	note := fmt.Sprintf("%d clients walking the pages (limit 100), all 200", stylesClients)
	if len(s.list.errs) > 0 {
		note = r.fail("%d of %d not 200: %s", len(s.list.errs), len(s.list.lat)+len(s.list.errs), failureSummary(s.list.errs))
	}
	r.t.add("list styles, local API", "GET /styles?filter=all", strconv.Itoa(len(s.list.lat)),
		fmt.Sprintf("%.0f req/s", s.list.rate()), ms(percentile(s.list.lat, 50)), ms(percentile(s.list.lat, 99)), note)
	check := fmt.Sprintf("%d pages, each of the %s visible styles once", s.walk.pages, commas(int64(s.walk.styles)))
	if s.walk.err != nil {
		check = r.fail("%s", firstLine(s.walk.err.Error()))
	}
	r.t.add("style walk check, local API", "every page of filter=all", strconv.Itoa(s.walk.pages), "", "", "", check)
	r.t.note("list styles: own table, %s styles (%s visible to workspace %s: its own, shared with it, the service's, the public listing;",
		commas(stylesTotal), commas(int64(s.visible)), stylesWorkspace)
	r.t.note("  the rest: other workspaces' and an application user's private styles, public ones not approved), stored by %d writers in %.1f s;",
		stylesWriters, s.populate.Seconds())
	r.t.note("  each request = 4 Query of styles-by-set (merged) + BatchGetItem of the page's 101 styles in two calls; %d-request warm-up first;",
		stylesWarmup)
	r.t.note("  at most %d requests or %.0f s; 1-minute load average %s before them.", stylesRequests, stylesDuration.Seconds(), s.loadAvg)
}
