package authserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"genjobs/internal/clock"
	"genjobs/internal/netguard"
	"genjobs/internal/store/oauthdb"
)

// Client ID metadata documents: limits of the fetch.
const (
	DocumentTimeout  = 5 * time.Second
	MaxDocumentBytes = 64 << 10
	MaxDocumentAge   = 24 * time.Hour
	// MaxCachedDocuments bounds the documents one instance keeps.
	MaxCachedDocuments = 1000
)

// Documents fetches client ID metadata documents: a client_id that is an
// https URL names a JSON document there that describes the client. It goes
// through the network guard (no private destination, checked at connect
// time), follows no redirect, gives up after DocumentTimeout, reads at most
// MaxDocumentBytes, and keeps a document as long as its Cache-Control's
// max-age says, at most MaxDocumentAge (no max-age: not kept). (The worker's
// internal/fetch is for images: it sniffs and refuses everything else.)
type Documents struct {
	client *http.Client
	// allowHTTP accepts http client ids on a loopback host, for the local
	// stack, whose guard allows private destinations.
	allowHTTP bool
	clock     clock.Clock

	mu    sync.Mutex
	cache map[string]cachedDocument
}

type cachedDocument struct {
	client Client
	until  time.Time
}

// NewDocuments fetches documents through g. When g allows private
// destinations (the local stack), client ids may be http URLs on a loopback
// host too, so that tests can serve them.
func NewDocuments(g *netguard.Guard, c clock.Clock) *Documents {
	return &Documents{
		client: &http.Client{
			Transport: g.Transport(),
			Timeout:   DocumentTimeout,
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return errors.New("a client ID metadata document is not followed through a redirect")
			},
		},
		allowHTTP: g.AllowPrivate,
		clock:     c,
		cache:     map[string]cachedDocument{},
	}
}

// document is the part of a client ID metadata document the server reads.
type document struct {
	ClientID                string   `json:"client_id"`
	ClientName              string   `json:"client_name"`
	RedirectURIs            []string `json:"redirect_uris"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
}

// Client returns the client the document at id describes. Every refusal
// wraps ErrUnknownClient, with a reason the error page may show.
func (d *Documents) Client(ctx context.Context, id string) (Client, error) {
	now := d.clock.Now()
	d.mu.Lock()
	c, ok := d.cache[id]
	d.mu.Unlock()
	if ok && now.Before(c.until) {
		return c.client, nil
	}
	client, maxAge, err := d.fetch(ctx, id)
	if err != nil {
		if ctx.Err() != nil {
			return Client{}, ctx.Err()
		}
		return Client{}, fmt.Errorf("%w: client ID metadata document %s: %w", ErrUnknownClient, id, err)
	}
	d.mu.Lock()
	if len(d.cache) >= MaxCachedDocuments {
		// Anyone can name a document: the cache starts over rather than
		// grow with them.
		clear(d.cache)
	}
	if maxAge > 0 {
		d.cache[id] = cachedDocument{client: client, until: now.Add(maxAge)}
	} else {
		delete(d.cache, id)
	}
	d.mu.Unlock()
	return client, nil
}

func (d *Documents) fetch(ctx context.Context, id string) (Client, time.Duration, error) {
	if p := d.clientIDProblem(id); p != "" {
		return Client{}, 0, errors.New(p)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, id, nil)
	if err != nil {
		return Client{}, 0, err
	}
	req.Header.Set("Accept", "application/json")
	res, err := d.client.Do(req)
	if errors.Is(err, netguard.ErrBlocked) {
		return Client{}, 0, errors.New("its address is not allowed")
	}
	if err != nil {
		return Client{}, 0, fmt.Errorf("could not be fetched: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return Client{}, 0, fmt.Errorf("answered %d", res.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(res.Body, MaxDocumentBytes+1))
	if err != nil {
		return Client{}, 0, fmt.Errorf("could not be read: %w", err)
	}
	if len(body) > MaxDocumentBytes {
		return Client{}, 0, fmt.Errorf("is over %d bytes", MaxDocumentBytes)
	}
	var doc document
	if err := json.Unmarshal(body, &doc); err != nil {
		return Client{}, 0, errors.New("is not a JSON object")
	}
	if doc.ClientID != id {
		return Client{}, 0, fmt.Errorf("names another client_id (%q)", doc.ClientID)
	}
	if len(doc.RedirectURIs) == 0 || len(doc.RedirectURIs) > MaxRedirectURIs {
		return Client{}, 0, fmt.Errorf("must list 1 to %d redirect_uris", MaxRedirectURIs)
	}
	for i, u := range doc.RedirectURIs {
		if p := redirectURIProblem(u); p != "" {
			return Client{}, 0, fmt.Errorf("redirect_uris[%d] %s", i, p)
		}
	}
	if doc.TokenEndpointAuthMethod != "" && doc.TokenEndpointAuthMethod != oauthdb.AuthNone {
		return Client{}, 0, errors.New(`token_endpoint_auth_method must be "none": no secret is shared with a client named by a URL`)
	}
	name := doc.ClientName
	if len(name) > MaxClientNameLength {
		name = name[:MaxClientNameLength]
	}
	return Client{Client: oauthdb.Client{ID: id, Name: name, RedirectURIs: doc.RedirectURIs, AuthMethod: oauthdb.AuthNone}},
		maxAge(res.Header.Get("Cache-Control")), nil
}

// clientIDProblem says why id cannot name a document, or "": an https URL
// with a path, no fragment, no user information, no dot segments.
func (d *Documents) clientIDProblem(id string) string {
	if len(id) > MaxURILength {
		return fmt.Sprintf("the client_id is over %d characters", MaxURILength)
	}
	u, err := url.Parse(id)
	switch {
	case err != nil || u.Host == "" || u.Opaque != "":
		return "the client_id is not a URL"
	case u.Scheme != "https" && !(d.allowHTTP && u.Scheme == "http" && loopback(u.Hostname())):
		return "the client_id must be an https URL"
	case strings.Contains(id, "#") || u.User != nil:
		return "the client_id has a fragment or user information"
	case u.Path == "" || u.Path == "/":
		return "the client_id must have a path"
	}
	for _, seg := range strings.Split(u.Path, "/") {
		if seg == "." || seg == ".." {
			return "the client_id has a dot segment"
		}
	}
	return ""
}

// maxAge is how long Cache-Control lets a document be kept, at most
// MaxDocumentAge; 0 for no-store, no-cache or no max-age.
func maxAge(cc string) time.Duration {
	var age time.Duration
	for _, d := range strings.Split(cc, ",") {
		d = strings.ToLower(strings.TrimSpace(d))
		switch {
		case d == "no-store" || d == "no-cache":
			return 0
		case strings.HasPrefix(d, "max-age="):
			n, err := strconv.Atoi(strings.Trim(d[len("max-age="):], `"`))
			if err != nil || n <= 0 {
				return 0
			}
			age = time.Duration(min(n, int(MaxDocumentAge/time.Second))) * time.Second
		}
	}
	return age
}
