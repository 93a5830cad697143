package provider

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"genjobs/internal/catalog"
)

// Names of the providers a route may name.
const (
	Replicate = "replicate"
	Cog       = "cog"
	Fal       = "fal"
)

// Defaults of routes that name no base_url or jwks_url.
const (
	// DefaultReplicateURL is Replicate's API.
	DefaultReplicateURL = "https://api.replicate.com"
	// DefaultFalURL is fal's queue.
	DefaultFalURL = "https://queue.fal.run"
	// DefaultFalJWKS holds the public keys of fal's webhook signatures.
	DefaultFalJWKS = "https://rest.alpha.fal.ai/.well-known/jwks.json"
)

// Deadlines of a route: how long a routed job may take from queued to its end.
const (
	DefaultDeadline = 30 * time.Minute
	MaxDeadline     = 120 * time.Minute
)

// Route sends one endpoint's jobs to a model provider.
type Route struct {
	Endpoint string `json:"-"` // the generation path the route is keyed by
	Provider string `json:"provider"`
	BaseURL  string `json:"base_url"`
	// Model ("owner/name") or Version (64 hex digits): Replicate's model;
	// fal's app id with its optional path ("fal-ai/flux/dev").
	Model   string `json:"model"`
	Version string `json:"version"`
	// JWKSURL holds the keys that sign fal's webhooks (DefaultFalJWKS).
	JWKSURL string `json:"jwks_url"`
	// Input maps our request's fields (defaults applied) to the provider's
	// input names; only these are sent.
	Input     map[string]string `json:"input"`
	Constants map[string]any    `json:"constants"`
	// Secret names the secret holding the credentials (token,
	// webhook_secret, webhook_token); optional for cog.
	Secret          string `json:"secret"`
	DeadlineMinutes int    `json:"deadline_minutes"`
}

// Deadline is how long a job of the route may take from queued to its end.
func (r *Route) Deadline() time.Duration {
	if r.DeadlineMinutes == 0 {
		return DefaultDeadline
	}
	return time.Duration(r.DeadlineMinutes) * time.Minute
}

// Routes are the deployment's routes by endpoint path. A nil Routes routes
// nothing.
type Routes map[string]*Route

// For returns the route of an endpoint path.
func (rs Routes) For(endpoint string) (*Route, bool) {
	r, ok := rs[endpoint]
	return r, ok
}

// The names a route gives are checked in plain Go: compiling regular
// expressions for them (and for Progress) at init took about 0.13 ms of
// every cold start of the functions that link this package.

// modelName reports whether s is a Replicate model, owner/name: two
// segments of lower-case letters, digits, '.', '_' and '-', each starting
// with a letter or digit.
func modelName(s string) bool {
	owner, name, ok := strings.Cut(s, "/")
	return ok && nameSegment(owner, false) && nameSegment(name, false)
}

// falModel reports whether s is a fal app id: owner/app, then any number of
// /path segments, each of letters, digits, '.', '_' and '-', starting with a
// letter or digit.
func falModel(s string) bool {
	n := 0
	for seg := range strings.SplitSeq(s, "/") {
		if !nameSegment(seg, true) {
			return false
		}
		n++
	}
	return n >= 2
}

// nameSegment reports whether s is a letter or digit, then letters, digits,
// '.', '_' and '-'; upper-case letters only if upper.
func nameSegment(s string, upper bool) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
		case upper && 'A' <= c && c <= 'Z':
		case i > 0 && (c == '.' || c == '_' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// versionID reports whether s is 64 lower-case hexadecimal digits.
func versionID(s string) bool {
	return len(s) == 64 && strings.Trim(s, "0123456789abcdef") == ""
}

// inputName reports whether s is a letter or '_', then letters, digits and
// '_'.
func inputName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || i > 0 && '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// ParseRoutes reads and checks a routes document (PROVIDER_ROUTES) against
// the catalog. An empty document routes nothing. An error names the entry
// and what is wrong with it.
func ParseRoutes(doc string, cat *catalog.Catalog) (Routes, error) {
	if strings.TrimSpace(doc) == "" {
		return Routes{}, nil
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(doc), &raw); err != nil {
		return nil, fmt.Errorf("provider routes: not a JSON object of routes: %w", err)
	}
	out := Routes{}
	for _, path := range slices.Sorted(func(yield func(string) bool) {
		for k := range raw {
			if !yield(k) {
				return
			}
		}
	}) {
		r, err := parseRoute(path, raw[path], cat)
		if err != nil {
			return nil, fmt.Errorf("provider routes: %q: %w", path, err)
		}
		out[path] = r
	}
	return out, nil
}

func parseRoute(path string, raw json.RawMessage, cat *catalog.Catalog) (*Route, error) {
	ep, ok := cat.ByPath(path)
	if !ok {
		return nil, fmt.Errorf("no such endpoint")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	r := &Route{}
	if err := dec.Decode(r); err != nil {
		return nil, fmt.Errorf("not a route: %w", err)
	}
	r.Endpoint = path
	switch r.Provider {
	case Replicate:
		if r.BaseURL == "" {
			r.BaseURL = DefaultReplicateURL
		}
		switch {
		case r.Model == "" && r.Version == "":
			return nil, fmt.Errorf("a replicate route needs model (owner/name) or version")
		case r.Model != "" && r.Version != "":
			return nil, fmt.Errorf("give model or version, not both")
		case r.Model != "" && !modelName(r.Model):
			return nil, fmt.Errorf("model %q is not owner/name", r.Model)
		case r.Version != "" && !versionID(r.Version):
			return nil, fmt.Errorf("version %q is not 64 hexadecimal digits", r.Version)
		case r.Secret == "":
			return nil, fmt.Errorf("a replicate route needs secret (the name of the secret with its token)")
		}
	case Cog:
		if r.BaseURL == "" {
			return nil, fmt.Errorf("a cog route needs base_url")
		}
		if r.Model != "" || r.Version != "" {
			return nil, fmt.Errorf("a cog route takes no model or version: base_url names the server")
		}
	case Fal:
		if r.BaseURL == "" {
			r.BaseURL = DefaultFalURL
		}
		if r.JWKSURL == "" {
			r.JWKSURL = DefaultFalJWKS
		}
		switch {
		case r.Model == "":
			return nil, fmt.Errorf("a fal route needs model (the app id, e.g. fal-ai/flux/dev)")
		case r.Version != "":
			return nil, fmt.Errorf("a fal route takes no version: model names the app and its path")
		case !falModel(r.Model):
			return nil, fmt.Errorf("model %q is not a fal app id (owner/app, then an optional path)", r.Model)
		case r.Secret == "":
			return nil, fmt.Errorf("a fal route needs secret (the name of the secret with its key)")
		}
		if u, err := url.Parse(r.JWKSURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			return nil, fmt.Errorf("jwks_url %q is not an http(s) URL", r.JWKSURL)
		}
	case "":
		return nil, fmt.Errorf("provider is missing (replicate, fal or cog)")
	default:
		return nil, fmt.Errorf("unknown provider %q (replicate, fal or cog)", r.Provider)
	}
	if r.JWKSURL != "" && r.Provider != Fal {
		return nil, fmt.Errorf("jwks_url is for fal routes only")
	}
	u, err := url.Parse(r.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("base_url %q is not an http(s) URL without query or credentials", r.BaseURL)
	}
	r.BaseURL = strings.TrimSuffix(r.BaseURL, "/")
	if len(r.Input) == 0 {
		return nil, fmt.Errorf("input maps no field: name at least one of the endpoint's fields")
	}
	for field, name := range r.Input {
		if !ep.HasField(field) {
			return nil, fmt.Errorf("input maps field %q, which the endpoint's request schema does not have", field)
		}
		if !inputName(name) {
			return nil, fmt.Errorf("input maps field %q to %q, which is not an input name", field, name)
		}
	}
	for name := range r.Constants {
		if !inputName(name) {
			return nil, fmt.Errorf("constant %q is not an input name", name)
		}
	}
	switch {
	case r.DeadlineMinutes < 0:
		return nil, fmt.Errorf("deadline_minutes must be positive")
	case time.Duration(r.DeadlineMinutes)*time.Minute > MaxDeadline:
		return nil, fmt.Errorf("deadline_minutes %d is over the maximum of %d", r.DeadlineMinutes, int(MaxDeadline/time.Minute))
	}
	return r, nil
}

// LoadRoutes reads and checks a deployment's PROVIDER_ROUTES document
// against the catalog; routes need the provider queue (PROVIDER_QUEUE_URL).
// A bad document stops the function at init, naming the entry.
func LoadRoutes(doc, queueURL string, cat *catalog.Catalog) (Routes, error) {
	routes, err := ParseRoutes(doc, cat)
	if err != nil {
		return nil, fmt.Errorf("PROVIDER_ROUTES: %w", err)
	}
	if len(routes) > 0 && queueURL == "" {
		return nil, fmt.Errorf("PROVIDER_ROUTES routes endpoints but PROVIDER_QUEUE_URL is not set")
	}
	return routes, nil
}
