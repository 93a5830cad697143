package app_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"genjobs/internal/app/consolefn"
	"genjobs/internal/store/accountsdb"
)

var playgroundFields = regexp.MustCompile(`name="(csrf|key)" value="([^"]+)"`)

// run opens a model's playground through the Lambda adapter and sends its
// form with values, as the owner of ws_a.
func (cs *cognitoStack) run(cookie, route string, values url.Values) page {
	cs.t.Helper()
	p := cs.visit("GET", "/app/models/"+route, "198.51.100.1", cookie, nil, 10*time.Second)
	if p.status != http.StatusOK {
		cs.t.Fatalf("GET /app/models/%s: %d\n%s", route, p.status, excerpt(p.body))
	}
	form := url.Values{"workspace": {"ws_a"}}
	for _, m := range playgroundFields.FindAllStringSubmatch(p.body, -1) {
		form.Set(m[1], m[2])
	}
	if form.Get("csrf") == "" || form.Get("key") == "" {
		cs.t.Fatalf("/app/models/%s has no CSRF token or key", route)
	}
	for k, v := range values {
		form[k] = v
	}
	return cs.visit("POST", "/app/models/"+route, "198.51.100.1", cookie, form, 10*time.Second)
}

// The console builds the playground's generate handler on its first run,
// not at init: a start reads no provider route. A PROVIDER_ROUTES the
// generate function refuses at init leaves every other page of the console
// working, and a run answers the fixed error page, logged with the
// request id; with the deployment's routes, the first run of an instance
// creates the job.
func TestThePlaygroundsGenerateHandlerIsBuiltByItsFirstRun(t *testing.T) {
	t.Parallel()
	cs := newCognitoStack(t)
	if _, err := accountsdb.New(cs.store).SetPlan(context.Background(), "ws_a", 100_000, time.Now()); err != nil {
		t.Fatal(err)
	}
	const route = "image/vendor-b/model-e-4"
	kite := url.Values{"prompt": {"a kite"}, "width": {"64"}, "height": {"64"}}

	good := cs.stack.d.Providers.Routes
	cs.stack.d.Providers.Routes = `{"/generate/image/vendor-z/nope": {"provider": "cog", "base_url": "http://127.0.0.1:5000", "input": {"prompt": "prompt"}}}`
	broken := *cs
	broken.h = cs.build(consolefn.Build) // failed here before: the routes were read at init
	cs.stack.d.Providers.Routes = good

	cookie, _ := broken.signIn()
	if p := broken.visit("GET", "/app/settings/billing", "198.51.100.1", cookie, nil, 10*time.Second); p.status != http.StatusOK {
		t.Errorf("billing with unreadable provider routes: %d; want 200\n%s", p.status, excerpt(p.body))
	}
	p := broken.run(cookie, route, kite)
	if p.status != http.StatusInternalServerError || !strings.Contains(p.body, internalPage) {
		t.Errorf("a run with unreadable provider routes: %d; want 500 and the fixed page\n%s", p.status, excerpt(p.body))
	}
	if lines := cs.logs.lines("build the generate handler", "vendor-z/nope", `"request_id":"`); len(lines) != 1 {
		t.Errorf("want one log line of the failed build with the request id; got\n%s", cs.logs.lines())
	}

	if p := cs.run(cookie, route, kite); p.status != http.StatusSeeOther || !strings.HasPrefix(p.location, "/app/jobs/") {
		t.Errorf("the first run of an instance: %d %q; want a redirect to the job's page\n%s", p.status, p.location, excerpt(p.body))
	}
}
