package authserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"genjobs/internal/authserver"
)

// docServer serves a client ID metadata document at /client.json on
// 127.0.0.1 and counts its fetches. edit changes the document before it is
// written; cacheControl is its Cache-Control.
type docServer struct {
	url     string
	fetches atomic.Int32
	conns   atomic.Int32 // connections accepted
}

func serveDocument(t *testing.T, cacheControl string, edit func(doc map[string]any)) *docServer {
	t.Helper()
	d := &docServer{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.fetches.Add(1)
		doc := map[string]any{"client_id": d.url, "client_name": "Doc Client", "redirect_uris": []string{redirect}}
		if edit != nil {
			edit(doc)
		}
		if cacheControl != "" {
			w.Header().Set("Cache-Control", cacheControl)
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(doc)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			d.conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	d.url = srv.URL + "/client.json"
	return d
}

// A client named by its document's URL connects without registering.
func TestAClientIDMetadataDocumentNamesAClientThatConnectsWithoutRegistering(t *testing.T) {
	e := newEnv(t)
	e.withDocuments(true)
	doc := serveDocument(t, "max-age=60", nil)
	c, err := e.srv.Client(context.Background(), doc.url)
	if err != nil || c.Name != "Doc Client" || c.Registered {
		t.Fatalf("Client = %+v, %v", c, err)
	}
	access, _ := e.tokens(codeForm(doc.url, e.approve(authorizeQuery(doc.url))))
	if claims, err := e.verify(access); err != nil || claims.ClientID != doc.url {
		t.Errorf("access token %+v, %v", claims, err)
	}
	if n := doc.fetches.Load(); n != 1 {
		t.Errorf("%d fetches within the document's max-age; want 1", n)
	}
	e.clock.T = t0.Add(61 * time.Second)
	if _, err := e.srv.Client(context.Background(), doc.url); err != nil {
		t.Fatal(err)
	}
	if n := doc.fetches.Load(); n != 2 {
		t.Errorf("%d fetches after the max-age; want 2", n)
	}
}

func TestADocumentIsKeptAtMostADayAndNotAtAllWithoutMaxAge(t *testing.T) {
	e := newEnv(t)
	e.withDocuments(true)
	year, none := serveDocument(t, "public, max-age=31536000", nil), serveDocument(t, "", nil)
	for _, at := range []time.Duration{0, time.Hour, 25 * time.Hour} {
		e.clock.T = t0.Add(at)
		for _, d := range []*docServer{year, none} {
			if _, err := e.srv.Client(context.Background(), d.url); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := year.fetches.Load(); n != 2 {
		t.Errorf("a year's max-age: %d fetches over 25 hours; want 2 (kept a day)", n)
	}
	if n := none.fetches.Load(); n != 3 {
		t.Errorf("no max-age: %d fetches for 3 lookups; want 3", n)
	}
}

// Bad input: a document over 64 KiB, naming another client_id, or not
// listing the redirect URI used; each an error page at the authorization
// step.
func TestADocumentThatIsTooLargeNamesAnotherClientOrLacksTheRedirectURIIsRefused(t *testing.T) {
	e := newEnv(t)
	e.withDocuments(true)
	for name, c := range map[string]struct {
		edit   func(map[string]any)
		reason string // what the refusal says; "" when the document is good but lacks the URI
	}{
		"over 64 KiB":            {func(d map[string]any) { d["padding"] = strings.Repeat("a", 64<<10) }, "is over 65536 bytes"},
		"another client_id":      {func(d map[string]any) { d["client_id"] = "https://elsewhere.test/client.json" }, "names another client_id"},
		"not the redirect URI":   {func(d map[string]any) { d["redirect_uris"] = []string{"https://assistant.test/other"} }, ""},
		"a javascript: redirect": {func(d map[string]any) { d["redirect_uris"] = []string{"javascript:alert(1)"} }, "redirect_uris[0]"},
		"a secret it cannot have": {func(d map[string]any) { d["token_endpoint_auth_method"] = "client_secret_post" },
			"token_endpoint_auth_method"},
	} {
		t.Run(name, func(t *testing.T) {
			doc := serveDocument(t, "", c.edit)
			_, err := e.srv.ParseAuthorize(context.Background(), base, authorizeQuery(doc.url))
			var pe *authserver.PageError
			if !errors.As(err, &pe) {
				t.Errorf("%v; want an error page", err)
			}
			if c.reason != "" {
				if _, err := e.srv.Client(context.Background(), doc.url); !errors.Is(err, authserver.ErrUnknownClient) ||
					!strings.Contains(err.Error(), c.reason) {
					t.Errorf("Client: %v; want ErrUnknownClient saying %q", err, c.reason)
				}
			}
		})
	}
	if n := e.items(); n != 0 {
		t.Errorf("%d items written for refused documents", n)
	}
}

// Bad input: a document on a private address, refused by the network guard
// before any connection is made (the local stack, whose guard allows
// private destinations, serves them; a deployment's does not).
func TestADocumentOnAPrivateAddressIsNeverFetched(t *testing.T) {
	e := newEnv(t)
	seen := e.withDocuments(false)
	doc := serveDocument(t, "max-age=60", nil)
	// Only loopback addresses here: a bug of the guard must not send a test's
	// traffic anywhere else (the guard's own tests cover the other ranges).
	for _, id := range []string{
		strings.Replace(doc.url, "http://", "https://", 1), // loopback, https
		strings.Replace(doc.url, "127.0.0.1", "localhost", 1),
		doc.url, // http: only where private destinations are allowed
	} {
		_, err := e.srv.Client(context.Background(), id)
		if !errors.Is(err, authserver.ErrUnknownClient) {
			t.Errorf("%s: %v; want ErrUnknownClient", id, err)
		}
	}
	if n := doc.conns.Load(); n != 0 {
		t.Errorf("%d connections reached the private document's server", n)
	}
	if s := seen.Seen(); len(s) != 0 {
		t.Errorf("connections were made: %v", s)
	}
}
