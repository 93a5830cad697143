// Package console is the web application's pages (docs/console.md): the jobs,
// sign-in, API tokens and access, billing by Stripe Checkout, usage, members,
// and the share link's page, rendered on the server as typed templ
// components (package pages) with embedded assets, working without
// JavaScript. Stripe's
// webhook, the only way a top-up reaches the balance, is a function of its
// own (package stripehook).
//
// Every page and form checks on the server, at each request, who is signed
// in (a session cookie, stored hashed), which workspace they act on (one of
// their memberships) and what their role allows (package member). Every
// form that changes something carries the session's CSRF token and must
// come from the console's own origin (net/http.CrossOriginProtection).
package console

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"genjobs/internal/auth"
	"genjobs/internal/authserver"
	"genjobs/internal/catalog"
	"genjobs/internal/clock"
	"genjobs/internal/cognito"
	"genjobs/internal/console/jobview"
	"genjobs/internal/console/money"
	"genjobs/internal/console/pages"
	"genjobs/internal/console/playground"
	"genjobs/internal/fault"
	"genjobs/internal/httpapi"
	"genjobs/internal/member"
	"genjobs/internal/style"
	"genjobs/internal/webhook"
)

// anyRole lets every role use a form, which still names its workspace.
func anyRole(member.Role) bool { return true }

// Base is the path the console is served under, on the API's own domain
// (template.yaml routes /app and /app/{proxy+} to it).
const Base = httpapi.AppPath

// The console's records, each through the store package that keeps it
// (consolefn builds them all on one table client).
type (
	// Jobs is the jobs pages' reads (jobview.Store) and "Deliver again"
	// (webhook.SendAgain): the jobs with their webhook deliveries
	// (deliveriesdb.DB).
	Jobs interface {
		jobview.Store
		Redeliver(ctx context.Context, d *webhook.Delivery, token string, now time.Time) error
	}
	// Sessions is the signed-in people's sessions, what their re-check
	// and a password change write, and the values shown once
	// (sessionsdb.DB).
	Sessions interface {
		CreateSession(ctx context.Context, s member.Session) error
		Session(ctx context.Context, hash string, now time.Time) (member.Session, error)
		UpdateSession(ctx context.Context, s member.Session) error
		DeleteSession(ctx context.Context, hash string) error
		SessionSecurity
		OnceStore
	}
	// Members is the workspaces' memberships, and the move of one to a
	// person's new user (recover.go) (membersdb.DB).
	Members interface {
		Memberships(ctx context.Context, user string) ([]member.Membership, error)
		Members(ctx context.Context, ws string) ([]member.Membership, error)
		AddMember(ctx context.Context, m member.Membership) error
		SetRole(ctx context.Context, ws, user string, role member.Role) (member.Membership, error)
		RemoveMember(ctx context.Context, ws, user string) error
		MoveMember(ctx context.Context, ws, from, to string) (member.Membership, error)
	}
	// Accounts is the workspace's record, API access and balances
	// (accountsdb.DB).
	Accounts interface {
		Workspace(ctx context.Context, id string) (auth.Workspace, error)
		SetAPIEnabled(ctx context.Context, id string, enabled bool) error
		money.Accounts
	}
	// Tokens is the workspace's API tokens (tokensdb.DB).
	Tokens interface {
		Tokens(ctx context.Context, ws string) ([]auth.Token, error)
		CreateToken(ctx context.Context, t auth.Token) error
		RevokeToken(ctx context.Context, ws, tokenID string, at time.Time) error
	}
	// Throttle is the sign-in throttle's counters (throttle.go,
	// throttledb.DB).
	Throttle interface {
		Failures(ctx context.Context, keys []string, window time.Time) (int, error)
		AddFailure(ctx context.Context, key string, window, expires time.Time) error
	}
	// Styles is the share link's page (stylesdb.DB).
	Styles interface {
		SharedStyle(ctx context.Context, token string) (style.Style, error)
	}
)

// Identity signs people in (cognito.Client).
type Identity interface {
	SignIn(ctx context.Context, email, password string) (cognito.Result, error)
	SetNewPassword(ctx context.Context, email, session, password string) (cognito.Result, error)
	EnsureUser(ctx context.Context, email string) (cognito.User, bool, error)
	Security
	// Getting back in (recover.go).
	ForgotPassword(ctx context.Context, email string) error
	ConfirmForgotPassword(ctx context.Context, email, code, password string) error
	ResetPassword(ctx context.Context, email string) (cognito.User, error)
}

// Prices is the API's price list (prices.List): the billing page's packs
// are priced at its compute_units_per_usd, the models pages show its
// rules, the playground prices what is filled in with it.
type Prices = playground.Prices

// Config builds a Console.
type Config struct {
	Jobs     Jobs
	Sessions Sessions
	Members  Members
	Accounts Accounts
	Tokens   Tokens
	TopUps   money.TopUps
	Ledger   money.Ledger
	Throttle Throttle
	Styles   Styles
	Identity Identity
	Payments money.Payments
	Prices   Prices
	Clock    clock.Clock
	Log      *slog.Logger
	// AppURL is the console's public address ({app_url}, ending in /app
	// when served by the API): Stripe's return URLs are made from it, and
	// its origin is trusted for forms besides the request's own host.
	// Empty, it is https://{the request's API domain}/app (httpapi.AppURL), and
	// forms are trusted from the request's own host only.
	AppURL string
	// Results mints the jobs pages' output URLs (presigned GETs of the
	// results bucket: s3url.ResultLinks); ResultsOrigin is the origin
	// they are on, which the CSP lets images and videos load from.
	Results       httpapi.ResultURLs
	ResultsOrigin string
	// The jobs pages: the GET URLs of uploaded inputs (s3url.AssetLinks),
	// the API's cancellation (lifecycle.Ender, as DELETE /jobs/{id}) and
	// the deliveries queue "Deliver again" sends to (queue.Deliveries).
	Assets   jobview.AssetURLs
	Cancel   httpapi.Canceller
	Webhooks webhook.Scheduler
	// The models pages: the API's catalog; API serves POST /generate/...
	// and POST /assets (the generate and assets functions' handlers, which
	// a run calls in process); APIURL is the snippets' (BASE_URL).
	API     http.Handler
	Catalog *catalog.Catalog
	APIURL  string
	// OAuth is the authorization server of MCP connections: the consent
	// page's checks and codes, the connections page's grants.
	OAuth *authserver.Server
}

// Console serves the pages.
type Console struct {
	Config
	secure bool // AppURL is https, or empty (API Gateway serves only HTTPS): Secure cookies, HSTS
	cop    *http.CrossOriginProtection
	css    string // the stylesheet's URL, with its hash for caching
	js     string
	jobsJS string // the jobs pages' script: live rows
	play   *playground.Pages
	money  *money.Pages
}

//go:embed assets/*
var files embed.FS

// New checks cfg and parses the templates. It does no I/O.
func New(cfg Config) (*Console, error) {
	if cfg.Jobs == nil || cfg.Sessions == nil || cfg.Members == nil || cfg.Accounts == nil || cfg.Tokens == nil || cfg.TopUps == nil ||
		cfg.Ledger == nil || cfg.Throttle == nil || cfg.Styles == nil || cfg.Identity == nil || cfg.Payments == nil || cfg.Prices == nil || cfg.Clock == nil || cfg.Log == nil || cfg.Results == nil ||
		cfg.Assets == nil || cfg.Cancel == nil || cfg.Webhooks == nil || cfg.API == nil || cfg.Catalog == nil || cfg.OAuth == nil || cfg.OAuth.Store == nil {
		return nil, errors.New("console: Jobs, Sessions, Members, Accounts, Tokens, TopUps, Ledger, Throttle, Styles, Identity, Payments, Prices, Clock, Log, Results, Assets, Cancel, Webhooks, API, Catalog and OAuth are required")
	}
	if o, err := url.Parse(cfg.ResultsOrigin); err != nil || (o.Scheme != "https" && o.Scheme != "http") || o.Host == "" || o.Path != "" || o.RawQuery != "" {
		return nil, fmt.Errorf("console: the results origin must be an http(s) origin, not %q", cfg.ResultsOrigin)
	}
	cfg.AppURL = strings.TrimSuffix(cfg.AppURL, "/")
	c := &Console{Config: cfg, secure: true, cop: http.NewCrossOriginProtection()}
	if cfg.AppURL != "" {
		u, err := url.Parse(cfg.AppURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return nil, fmt.Errorf("console: APP_URL must be an absolute http(s) URL, not %q", cfg.AppURL)
		}
		c.secure = u.Scheme == "https"
		if err := c.cop.AddTrustedOrigin(u.Scheme + "://" + u.Host); err != nil {
			return nil, fmt.Errorf("console: %w", err)
		}
	}
	c.cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.fail(w, r, http.StatusForbidden, "This form did not come from the console's own pages. Open the page again and resend it.")
	}))
	var err error
	if c.css, err = assetURL("app.css"); err != nil {
		return nil, err
	}
	if c.js, err = assetURL("copy.js"); err != nil {
		return nil, err
	}
	if c.jobsJS, err = assetURL("jobs.js"); err != nil {
		return nil, err
	}
	c.money = &money.Pages{Accounts: cfg.Accounts, TopUps: cfg.TopUps, Ledger: cfg.Ledger, Payments: cfg.Payments, Prices: cfg.Prices,
		Clock: cfg.Clock, AppURL: cfg.AppURL}
	c.play = &playground.Pages{Catalog: cfg.Catalog, Prices: cfg.Prices, API: cfg.API, APIURL: cfg.APIURL, Now: cfg.Clock.Now}
	if c.play.Script, err = assetURL("playground.js"); err != nil {
		return nil, err
	}
	return c, nil
}

// assetURL is an embedded asset's URL with a digest of its content, so that
// it can be cached for long and still change with a deploy.
func assetURL(name string) (string, error) {
	b, err := files.ReadFile("assets/" + name)
	if err != nil {
		return "", fmt.Errorf("console: %w", err)
	}
	sum := sha256.Sum256(b)
	return Base + "/assets/" + name + "?v=" + hex.EncodeToString(sum[:4]), nil
}

// Routes is the console's router: the pages under Base.
func (c *Console) Routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+Base, c.home)
	mux.HandleFunc("GET "+Base+"/{$}", c.home)
	mux.HandleFunc("GET "+Base+"/assets/{name}", c.asset)
	mux.HandleFunc("GET "+Base+"/sign-in", c.signInPage)
	mux.HandleFunc("POST "+Base+"/sign-in", c.signIn)
	mux.HandleFunc("POST "+Base+"/set-password", c.setPassword)
	mux.HandleFunc("GET "+Base+"/forgot-password", c.forgotPage)
	mux.HandleFunc("POST "+Base+"/forgot-password", c.forgotPassword)
	mux.HandleFunc("GET "+Base+"/reset-password", c.resetPage)
	mux.HandleFunc("POST "+Base+"/reset-password", c.confirmReset)
	mux.HandleFunc("POST "+Base+"/sign-out", c.form(c.signOut, nil))
	mux.HandleFunc("POST "+Base+"/workspace", c.switchWorkspace)
	c.securityRoutes(mux)

	mux.HandleFunc("GET "+Base+"/jobs", c.page(c.jobsPage))
	mux.HandleFunc("GET "+Base+"/jobs/poll", c.page(c.pollJobs))
	mux.HandleFunc("GET "+Base+"/jobs/{id}", c.page(c.jobPage))
	mux.HandleFunc("POST "+Base+"/jobs/{id}/cancel", c.form(c.cancelJob, anyRole))
	mux.HandleFunc("POST "+Base+"/jobs/{id}/deliver-again", c.form(c.deliverAgain, member.Role.ManagesJobs))

	mux.HandleFunc("GET "+Base+"/models", c.page(c.models(c.play.Models)))
	mux.HandleFunc("GET "+Base+"/models/{kind}/{vendor}/{model}", c.page(c.models(c.play.Playground)))
	mux.HandleFunc("GET "+Base+"/models/{kind}/{vendor}/{model}/price", c.page(c.priceRoute))
	mux.HandleFunc("POST "+Base+"/models/{kind}/{vendor}/{model}", playground.WithFiles(c.fail, c.form(c.models(c.play.Run), anyRole)))

	mux.HandleFunc("GET "+Base+"/settings/api-tokens", c.page(c.tokensPage))
	mux.HandleFunc("POST "+Base+"/settings/api-tokens", c.form(c.createToken, member.Role.ManagesTokens))
	mux.HandleFunc("GET "+Base+"/settings/api-tokens/{id}/revoke", c.page(c.revokePage))
	mux.HandleFunc("POST "+Base+"/settings/api-tokens/{id}/revoke", c.form(c.revokeToken, member.Role.ManagesTokens))
	mux.HandleFunc("POST "+Base+"/settings/api-access", c.form(c.setAPIAccess, member.Role.ManagesTokens))

	mux.HandleFunc("GET "+Base+"/settings/billing", c.page(c.moneyPage("billing", c.money.Billing)))
	mux.HandleFunc("POST "+Base+"/settings/billing/top-up", c.form(c.moneyPage("billing", c.money.TopUp), member.Role.AddsBalance))

	mux.HandleFunc("GET "+Base+"/settings/usage", c.page(c.moneyPage("usage", c.money.Usage)))
	mux.HandleFunc("GET "+Base+"/settings/usage.csv", c.page(c.moneyPage("usage", c.money.UsageCSV)))

	mux.HandleFunc("GET "+Base+"/settings/members", c.page(c.membersPage))
	mux.HandleFunc("POST "+Base+"/settings/members", c.form(c.addMember, member.Role.ManagesMembers))
	mux.HandleFunc("POST "+Base+"/settings/members/{user}/role", c.form(c.changeRole, member.Role.ManagesMembers))
	mux.HandleFunc("GET "+Base+"/settings/members/{user}/remove", c.page(c.removeMemberPage))
	mux.HandleFunc("POST "+Base+"/settings/members/{user}/remove", c.form(c.removeMember, member.Role.ManagesMembers))
	mux.HandleFunc("GET "+Base+"/settings/members/{user}/reset-password", c.page(c.resetMemberPage))
	mux.HandleFunc("POST "+Base+"/settings/members/{user}/reset-password", c.form(c.resetMember, member.Role.ManagesMembers))

	mux.HandleFunc("GET "+Base+"/oauth/authorize", c.page(c.authorizePage))
	mux.HandleFunc("POST "+Base+"/oauth/authorize", c.form(c.consent, anyRole))
	mux.HandleFunc("GET "+Base+"/settings/connections", c.page(c.connectionsPage))
	mux.HandleFunc("POST "+Base+"/settings/connections/{id}/revoke", c.form(c.revokeConnection, anyRole))

	mux.HandleFunc("GET "+Base+"/styles/shared/{token}", c.sharedStyle)

	mux.HandleFunc("/", c.notFound)
	return c.headers(c.cop.Handler(mux))
}

// headers sets what every answer carries: a strict CSP (no inline script
// or style; images from https for style covers, and from the results
// store, videos from the results store only), no framing, no referrer
// outside the console, no caching of pages that hold account data.
func (c *Console) headers(next http.Handler) http.Handler {
	csp := "default-src 'self'; " + mediaSources(c.ResultsOrigin) + "style-src 'self'; script-src 'self'; " +
		"object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("Referrer-Policy", "same-origin")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		if c.secure {
			h.Set("Strict-Transport-Security", "max-age=31536000; includeSubDomains")
		}
		if !strings.HasPrefix(r.URL.Path, Base+"/assets/") {
			h.Set("Cache-Control", "no-store")
		}
		next.ServeHTTP(w, r)
	})
}

// mediaSources is the CSP's img-src and media-src: https images (style
// covers, and the results bucket in AWS) and data URIs, and the results
// store's origin, named besides only when it is http (the local S3
// emulator); videos from the results store alone.
func mediaSources(results string) string {
	img := "img-src 'self' https: data:"
	if strings.HasPrefix(results, "http:") {
		img += " " + results
	}
	return img + "; media-src 'self' " + results + "; "
}

func (c *Console) asset(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	js := "text/javascript; charset=utf-8"
	types := map[string]string{"app.css": "text/css; charset=utf-8", "copy.js": js, "jobs.js": js, "playground.js": js, "logo.svg": "image/svg+xml"}
	ct, ok := types[name]
	if !ok {
		c.notFound(w, r)
		return
	}
	b, err := files.ReadFile("assets/" + name)
	if err != nil {
		c.notFound(w, r)
		return
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Cache-Control", "public, max-age=86400")
	_, _ = w.Write(b)
}

func (c *Console) home(w http.ResponseWriter, r *http.Request) {
	http.Redirect(w, r, Base+"/settings/api-tokens", http.StatusSeeOther)
}

func (c *Console) notFound(w http.ResponseWriter, r *http.Request) {
	c.fail(w, r, http.StatusNotFound, "There is no such page.")
}

// fail answers an error page with status and a message for people.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	c.show(w, r, status, &view{Title: http.StatusText(status)}, pages.Error(http.StatusText(status), msg))
}

// internalError logs err with the request's id and answers a fixed page. A
// dependency's outage (fault.IsUnavailable: DynamoDB or Cognito throttled,
// timed out, unreachable or failing, or this request's deadline) is a 503
// with Retry-After, as the API answers one, logged with the dependency's
// code; anything else is our bug, a 500.
func (c *Console) internalError(w http.ResponseWriter, r *http.Request, what string, err error) {
	if fault.IsUnavailable(err) {
		c.logger(r).Warn(what+": dependency unavailable", "code", fault.Code(err), "error", err.Error())
		w.Header().Set("Retry-After", strconv.Itoa(httpapi.RetryAfter))
		c.fail(w, r, http.StatusServiceUnavailable, "A service the console depends on did not answer just now, so this was not done. Try again in a moment.")
		return
	}
	c.logger(r).Error(what, "error", err.Error())
	c.fail(w, r, http.StatusInternalServerError, "Something went wrong on our side. Nothing was changed unless the page says so; try again in a moment.")
}

// logger is the request's logger (httpapi.Middleware's, with the request id).
func (c *Console) logger(r *http.Request) *slog.Logger { return httpapi.Logger(r.Context()) }
