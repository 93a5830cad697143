package provider_test

import (
	"errors"
	"net/http"
	"net/url"
	"sync"
	"testing"

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
