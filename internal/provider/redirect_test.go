package provider_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"genjobs/internal/app/providerwire"
	"genjobs/internal/netguard"
	"genjobs/internal/provider/fal"
	"genjobs/internal/provider/providertest"
)

// refusingGuard refuses private destinations, as a deployment's guard
// does; what it would let through is recorded and failed, so that a
// guarded request connects nowhere.
func refusingGuard() (*netguard.Guard, func() []string) {
	var mu sync.Mutex
	var dialed []string
	g := &netguard.Guard{Connect: func(_, address string) error {
		mu.Lock()
		defer mu.Unlock()
		dialed = append(dialed, address)
		return errors.New("this test connects nowhere through the guard")
	}}
	return g, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), dialed...) }
}

// TestRedirectToAnotherRouteIsNotFollowed: two routes, a Replicate route
// and a Cog route on another loopback port, with private destinations
// refused. Replicate's API answers the submission with a 307 to the Cog
// route's server: the Replicate route's client trusts only its own host,
// so the redirect is a new destination the guard refuses; the Cog server
// is sent nothing, least of all the Replicate token, and the job goes on
// waiting for Replicate (the callbacks route is served through the Lambda
// adapter, as the functions' clients are built).
func TestRedirectToAnotherRouteIsNotFollowed(t *testing.T) {
	e := newEnv(t, mixedRoutes)
	guard, dialed := refusingGuard()
	clients := providerwire.RouteClients(e.runner.Routes, http.DefaultTransport, guard.Transport(), nil, nil)
	e.runner.Clients, e.cb.Clients = clients, clients
	e.rep.FailNext(providertest.Fault{Status: http.StatusTemporaryRedirect, Location: e.cog.URL + "/predictions/stolen/cancel"})

	j := e.create(videoB, videoBody)
	e.step()

	for _, r := range e.cog.Requests() {
		if strings.Contains(r.Authorization, e.rep.Token) {
			t.Errorf("the Cog route's server was sent the Replicate token: %s %s", r.Method, r.Path)
		}
	}
	if got := e.cog.Requests(); len(got) != 0 {
		t.Errorf("the redirect was followed to the Cog route's server: %v", got)
	}
	if got := dialed(); len(got) != 0 {
		t.Errorf("the guard let connections through to %v", got)
	}
	if !strings.Contains(e.logs.String(), "not allowed") {
		t.Errorf("the step's log does not say the guard refused the redirect:\n%s", e.logs.String())
	}
	if got := e.job(j.ID); got.Status.Terminal() {
		t.Errorf("the job ended %s on a refused redirect; want it retried", got.Status)
	}
}

// TestFalJWKSReachesOnlyItsHost: a fal route's signing keys are fetched
// from its jwks_url's host without the guard (here another loopback
// server than fal's queue, with private destinations refused), and a JWKS
// that redirects to another route's server (the Cog route's) is refused
// by the guard: that callback is not verified, and the Cog server is sent
// nothing.
func TestFalJWKSReachesOnlyItsHost(t *testing.T) {
	var keys, moved string
	e := newEnv(t, func(e *env) string {
		resp, err := http.Get(e.fal.JWKSURL)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		jwks, _ := io.ReadAll(resp.Body)
		keys = e.files.Put("/keys/jwks.json", providertest.File{ContentType: "application/json", Data: jwks})
		moved = e.files.Put("/moved/jwks.json", providertest.File{Redirect: e.cog.URL + "/predictions/x/cancel"})
		return fmt.Sprintf(`{
		%q: {"provider": "cog", "base_url": %q, "input": {"prompt": "prompt"}, "secret": "cog"},
		%q: {"provider": "fal", "base_url": %q, "jwks_url": %q, "model": "fal-ai/a", "input": {"prompt": "prompt"}, "secret": "fal"},
		%q: {"provider": "fal", "base_url": %q, "jwks_url": %q, "model": "fal-ai/b", "input": {"prompt": "prompt"}, "secret": "fal"}}`,
			imageEndpoint, e.cog.URL, videoB, e.fal.URL, keys, videoC, e.fal.URL, moved)
	})
	guard, dialed := refusingGuard()
	clients := providerwire.RouteClients(e.runner.Routes, http.DefaultTransport, guard.Transport(), nil, nil)
	e.runner.Clients, e.cb.Clients = clients, clients

	for _, c := range []struct {
		endpoint string
		want     int
	}{{videoB, http.StatusNoContent}, {videoC, http.StatusUnauthorized}} {
		j := e.create(c.endpoint, videoBody)
		id, ok := "", false
		for i := 0; i < 5 && !ok && e.step(); i++ { // the earlier job's steps come first
			id, ok = e.fal.ForJob(j.ID)
		}
		if !ok {
			t.Fatalf("%s: nothing was submitted to fal\n%s", c.endpoint, e.logs.String())
		}
		e.fal.Set(id, fal.Completed, nil, json.RawMessage(`{"images": []}`), 0, "")
		if got := e.fal.Callback(t, id); got != c.want {
			t.Errorf("%s: the signed webhook was answered %d; want %d\n%s", c.endpoint, got, c.want, e.logs.String())
		}
	}
	if got := e.cog.Requests(); len(got) != 0 {
		t.Errorf("the JWKS's redirect was followed to the Cog route's server: %v", got)
	}
	if got := dialed(); len(got) != 0 {
		t.Errorf("the guard let connections through to %v", got)
	}
}

// TestReplicateListPagesStayOnTheRoutesServer: looking for the prediction
// of a submission whose answer was lost, the Replicate route's client
// follows the list's next page only on its own server: a next page on the
// Cog route's server (a URL the answer gave, which a request would send
// the token to, not a redirect) is not requested, and the job waits.
func TestReplicateListPagesStayOnTheRoutesServer(t *testing.T) {
	e := newEnv(t, mixedRoutes)
	e.rep.Next = e.cog.URL + "/predictions?cursor=stolen"
	e.rep.FailNext(providertest.Fault{Lose: true})
	j := e.create(videoB, videoBody)
	e.step()
	e.clock.T = e.clock.T.Add(time.Minute) // past the wait for an answer in flight
	e.step()
	if got := e.cog.Requests(); len(got) != 0 {
		t.Errorf("the list's next page was requested on the Cog route's server: %v", got)
	}
	if !strings.Contains(e.logs.String(), "not on the route's server") {
		t.Errorf("the step's log does not say why the page was not followed:\n%s", e.logs.String())
	}
	if got := e.job(j.ID); got.Status.Terminal() || e.rep.Creates() != 1 {
		t.Errorf("job %s with %d predictions; want it waiting on its one prediction", got.Status, e.rep.Creates())
	}
}
