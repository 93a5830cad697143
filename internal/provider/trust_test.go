package provider_test

import (
	"errors"
	"net/http"
	"net/netip"
	"net/url"
	"sync"
	"testing"
	"time"

	"genjobs/internal/netguard"
	"genjobs/internal/provider"
	"genjobs/internal/provider/providertest"
)

// A provider's API is trusted at exactly its host and port; a redirect it
// answers is judged anew, by the guard, as is the same host name at
// another port. The guard's dialer records and fails, so nothing but the
// trusted server is ever connected to.
func TestTrustedHostsJudgeEveryRedirect(t *testing.T) {
	var mu sync.Mutex
	var dialed []string
	guard := &netguard.Guard{Connect: func(_, address string) error {
		mu.Lock()
		defer mu.Unlock()
		dialed = append(dialed, address)
		return errors.New("this test connects nowhere through the guard")
	}}
	api, elsewhere := providertest.NewFiles(t), providertest.NewFiles(t)
	u, _ := url.Parse(api.URL)
	client := &http.Client{Transport: &provider.TrustedHosts{
		Hosts: []string{provider.HostPort(u)}, Trusted: http.DefaultTransport, Guarded: guard.Transport(),
	}}
	ok := api.Put("/v1/ok", providertest.File{ContentType: "application/json", Data: []byte(`{}`)})
	moved := api.Put("/v1/moved", providertest.File{Redirect: elsewhere.Put("/secret", providertest.File{Data: []byte("x")})})
	back := elsewhere.Put("/back", providertest.File{Redirect: ok})

	resp, err := client.Get(ok)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("the trusted host: %v %v", resp, err)
	}
	resp.Body.Close()
	for _, target := range []string{moved, back} {
		if resp, err := client.Get(target); !errors.Is(err, netguard.ErrBlocked) {
			if resp != nil {
				resp.Body.Close()
			}
			t.Errorf("GET %s: %v; want refused by the guard", target, err)
		}
	}
	if n := elsewhere.Hits("/secret") + elsewhere.Hits("/back"); n != 0 {
		t.Errorf("the other port was contacted %d times", n)
	}
	if len(dialed) != 0 {
		t.Errorf("the guard let connections through to %v", dialed)
	}
}

func TestHostPortNamesTheServer(t *testing.T) {
	for raw, want := range map[string]string{
		"https://API.Replicate.com":        "api.replicate.com:443",
		"https://api.replicate.com:443/v1": "api.replicate.com:443",
		"http://127.0.0.1:5000/x":          "127.0.0.1:5000",
		"http://127.0.0.1/x":               "127.0.0.1:80",
		"http://[::1]:8080/":               "[::1]:8080",
		"ftp://example.com/":               "",
	} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if got := provider.HostPort(u); got != want {
			t.Errorf("HostPort(%s) = %q; want %q", raw, got, want)
		}
	}
}

// A redirect to the same host name at another port (another route's
// server on the same machine), which net/http would send the
// Authorization header to, arrives without it when the guard lets it
// through; a redirect within the server keeps it.
func TestRedirectElsewhereDropsCredentials(t *testing.T) {
	var mu sync.Mutex
	got := map[string]string{}
	record := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			got[name+r.URL.Path] = r.Header.Get("Authorization")
			mu.Unlock()
		})
	}
	other := providertest.Listen(t, record("other"))
	api := providertest.Listen(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, other.URL+"/stolen", http.StatusFound)
		case "/within":
			http.Redirect(w, r, "/kept", http.StatusFound)
		default:
			record("api").ServeHTTP(w, r)
		}
	}))
	ou, _ := url.Parse(other.URL)
	au, _ := url.Parse(api.URL)
	exempt := netip.MustParseAddrPort(ou.Host) // the other server, let through the guard
	guard := &netguard.Guard{Exempt: []netip.AddrPort{exempt}}
	client := provider.HTTPClient([]string{provider.HostPort(au)}, http.DefaultTransport, guard.Transport(), nil, 5*time.Second)
	for _, path := range []string{"/away", "/within"} {
		req, _ := http.NewRequest(http.MethodGet, api.URL+path, nil)
		req.Header.Set("Authorization", "Bearer route-token")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		resp.Body.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	if a, ok := got["other/stolen"]; !ok || a != "" {
		t.Errorf("the other server got the redirect %v with Authorization %q; want it without", ok, a)
	}
	if got["api/kept"] != "Bearer route-token" {
		t.Errorf("a redirect within the route's server lost its credentials: %q", got["api/kept"])
	}
}
