// Package generate serves POST /generate/{kind}/{vendor}/{model}: a request
// validated against its endpoint's schema, priced, and stored as a pending
// job in one transaction with its reservation. It stands apart from package
// httpapi, whose helpers it answers with, so that only the generate
// function links the catalog and the schema validator.
package generate

import (
	"cmp"
	"context"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"genjobs/internal/asset"
	"genjobs/internal/billing"
	"genjobs/internal/catalog"
	"genjobs/internal/clock"
	"genjobs/internal/httpapi"
	"genjobs/internal/job"
	"genjobs/internal/lifecycle"
	"genjobs/internal/metrics"
	"genjobs/internal/provider"
)

// JobCreator stores a new job with its reservation, deciding whether it is
// queued or backlogged (it sets j.Status), or refuses it
// (billing.ErrInsufficientFunds, job.ErrTooManyJobs, the Idempotency-Key
// outcomes of job). It reads jobs too, for a replayed creation.
type JobCreator interface {
	CreateJob(ctx context.Context, j *job.Job) error
	Job(ctx context.Context, id string) (*job.Job, error)
}

// Pricer prices a validated request (prices.List), in USD and, for a job
// billed in compute units, in units.
type Pricer interface {
	Price(path string, params map[string]any) (billing.Micros, error)
	Units(price billing.Micros) (billing.Units, error)
}

// Enqueuer hands a stored job to the workers.
type Enqueuer interface {
	Enqueue(ctx context.Context, j *job.Job) error
}

// AssetReader finds uploaded assets (store.Store).
type AssetReader interface {
	Asset(ctx context.Context, id string) (asset.Asset, error)
}

// Handler serves POST /generate/{kind}/{vendor}/{model}.
type Handler struct {
	Auth    httpapi.Authenticator
	Catalog *catalog.Catalog
	Jobs    JobCreator
	Prices  Pricer
	Results httpapi.ResultURLs // mints the result URLs of a replayed job
	Queue   Enqueuer
	Assets  AssetReader
	Clock   clock.Clock
	Metrics *metrics.Emitter // nil: none
	// BaseURL is the API's public address; empty means the request's own.
	BaseURL string
	// AllowHTTPWebhooks accepts http:// webhook URLs: only where private
	// destinations are allowed (local development).
	AllowHTTPWebhooks bool
	// Providers are the endpoints the deployment runs on a model provider: a
	// job of one is marked with its provider and deadline, and its message
	// goes to the provider queue. Nil routes nothing.
	Providers provider.Routes
}

// MaxWebhookURLLength bounds X-Webhook-URL (docs/api.md, "Webhooks").
const MaxWebhookURLLength = 2048

// MaxIdempotencyKeyLength bounds Idempotency-Key (docs/api.md, "Idempotent creation").
const MaxIdempotencyKeyLength = 255

// Fixed texts of creation refusals (docs/api.md, "Errors" and "Idempotent creation").
const (
	msgKeyReused     = "This Idempotency-Key was used with a different request."
	msgKeyInFlight   = "A request with this Idempotency-Key is in progress; retry shortly."
	msgNoCredits     = "You have run out of credits."
	msgNoCreditsHelp = "The API balance is separate from the workspace compute balance; top it up in the application's billing settings."
	msgNoUnits       = "Your workspace has run out of compute units."
)

// Routes is the generate function's router.
func (g *Handler) Routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /generate/{kind}/{vendor}/{model}", g.create)
	mux.Handle("/", httpapi.NotFound())
	return mux
}

func (g *Handler) create(w http.ResponseWriter, r *http.Request) {
	p, ok := httpapi.Authenticate(g.Auth, w, r)
	if !ok {
		return
	}
	ep, ok := g.Catalog.Lookup(r.PathValue("kind"), r.PathValue("vendor"), r.PathValue("model"))
	if !ok {
		httpapi.WriteError(w, http.StatusNotFound, httpapi.MsgNotFound)
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		httpapi.WriteError(w, http.StatusBadRequest, httpapi.InvalidBodyPrefix+"Content-Type must be application/json")
		return
	}
	// One byte over the cap is enough for Decode to refuse the body.
	body, err := io.ReadAll(io.LimitReader(r.Body, catalog.MaxBodyBytes+1))
	if err != nil {
		httpapi.InternalError(w, r, "read body", err)
		return
	}
	now := g.Clock.Now()
	req, err := ep.Decode(body, now)
	var invalid *catalog.InvalidError
	if errors.As(err, &invalid) {
		httpapi.WriteError(w, http.StatusBadRequest, invalid.Error())
		return
	}
	if err != nil {
		httpapi.InternalError(w, r, "decode request", err)
		return
	}
	base := httpapi.PublicBaseURL(g.BaseURL, r)
	if msg, err := g.foreignAsset(r.Context(), ep, req, base, p.WorkspaceID); err != nil {
		httpapi.InternalError(w, r, "read asset", err)
		return
	} else if msg != "" {
		httpapi.WriteError(w, http.StatusBadRequest, httpapi.InvalidBodyPrefix+msg)
		return
	}
	webhook, err := webhookURL(r, g.AllowHTTPWebhooks)
	if err != nil {
		httpapi.WriteError(w, http.StatusBadRequest, httpapi.InvalidHeaderPrefix+err.Error())
		return
	}
	key, err := idempotencyKey(r.Header)
	if err != nil {
		httpapi.WriteError(w, http.StatusBadRequest, httpapi.InvalidHeaderPrefix+err.Error())
		return
	}
	price, err := g.Prices.Price(ep.Path(), req.Params)
	if err != nil {
		httpapi.InternalError(w, r, "price request", err)
		return
	}

	j := &job.Job{
		ID:          job.NewID(now),
		WorkspaceID: p.WorkspaceID,
		Status:      job.Queued,
		CreatedAt:   now,
		Endpoint:    ep.Path(),
		Request:     req.JSON(),
		BaseURL:     base,
		WebhookURL:  webhook,
		Price:       price,
		Currency:    billing.CurrencyUSD,
		Source:      job.SourceAPI,
		CreatedBy:   p.TokenName,
	}
	// The currency is fixed here, once: a signed-in person's creation (the
	// application, an OAuth MCP connection: an in-process Origin) is billed
	// in compute units, a token's in USD.
	origin, _ := httpapi.OriginOf(r.Context())
	j.Source = cmp.Or(origin.Source, j.Source)
	if p.PersonID != "" {
		if j.Units, err = g.Prices.Units(price); err != nil {
			httpapi.InternalError(w, r, "price request in compute units", err)
			return
		}
		j.Currency, j.PersonID, j.CreatedBy = billing.CurrencyCU, p.PersonID, p.Email
		if origin.Source == "" {
			j.Source = job.SourceApp
		}
	}
	j.Lane = lifecycle.QueueFor(j)
	if rt, ok := g.Providers.For(j.Endpoint); ok {
		j.Provider, j.Deadline = rt.Provider, rt.Deadline()
		j.RouteModel = cmp.Or(rt.Model, rt.Version)
	}
	if key != "" {
		j.Idempotency = &job.Idempotency{
			Key: key, RequestHash: job.RequestHash(j.Endpoint, j.Request, webhook),
			Expires: now.Add(job.IdempotencyWindow),
		}
	}
	err = g.Jobs.CreateJob(r.Context(), j)
	var replayed *job.Replayed
	switch {
	case errors.As(err, &replayed):
		g.replay(w, r, p.WorkspaceID, replayed.JobID)
		return
	case errors.Is(err, billing.ErrInsufficientFunds):
		g.Metrics.Count(metrics.PaymentRequired, "", 1)
		httpapi.WriteJSON(w, http.StatusPaymentRequired, struct {
			Error   string `json:"error"`
			Message string `json:"message"`
		}{msgNoCredits, msgNoCreditsHelp})
		return
	case errors.Is(err, billing.ErrOutOfUnits):
		g.Metrics.Count(metrics.PaymentRequired, "", 1)
		httpapi.WriteError(w, http.StatusPaymentRequired, msgNoUnits)
		return
	case errors.Is(err, job.ErrTooManyJobs):
		g.Metrics.Count(metrics.TooManyRequests, "", 1)
		httpapi.WriteError(w, http.StatusTooManyRequests, httpapi.MsgTooManyJobs)
		return
	case errors.Is(err, job.ErrKeyReused):
		httpapi.WriteError(w, http.StatusUnprocessableEntity, msgKeyReused)
		return
	case errors.Is(err, job.ErrKeyInFlight):
		httpapi.WriteError(w, http.StatusConflict, msgKeyInFlight)
		return
	case err != nil:
		httpapi.InternalError(w, r, "create job", err)
		return
	}
	log := httpapi.Logger(r.Context()).With("job_id", j.ID, "workspace_id", j.WorkspaceID)
	// A backlogged job is enqueued when it is promoted.
	if j.Status == job.Queued {
		if err := g.Queue.Enqueue(r.Context(), j); err != nil {
			// The job is durable; the sweeper enqueues queued jobs that have no
			// message, so the client still gets its job.
			log.Error("enqueue failed; left for the sweeper", "error", err.Error())
		}
	}
	log.Info("job created", "endpoint", j.Endpoint, "status", string(j.Status), "price_micros", int64(j.Price),
		"currency", string(j.Currency), "price_units", int64(j.Units), "source", j.Source)
	g.Metrics.Count(metrics.JobsCreated, j.Model(), 1)
	setDeprecationHeaders(w.Header(), req.Deprecations)
	httpapi.WriteJSON(w, http.StatusOK, j.Record(nil))
}

// replay answers a creation whose Idempotency-Key and request match an
// earlier one: that job's current record, nothing new written.
func (g *Handler) replay(w http.ResponseWriter, r *http.Request, ws, id string) {
	j, err := g.Jobs.Job(r.Context(), id)
	if err == nil && j.WorkspaceID != ws { // keys are scoped by workspace: cannot happen
		err = errors.New("idempotency key names another workspace's job")
	}
	if err != nil {
		httpapi.InternalError(w, r, "read replayed job", err)
		return
	}
	rec, err := httpapi.Record(r.Context(), g.Results, j)
	if err != nil {
		httpapi.InternalError(w, r, "mint result URLs", err)
		return
	}
	httpapi.Logger(r.Context()).Info("creation replayed", "job_id", j.ID, "workspace_id", ws)
	w.Header().Set("Idempotent-Replayed", "true")
	httpapi.WriteJSON(w, http.StatusOK, rec)
}

// idempotencyKey reads Idempotency-Key: 1..255 printable ASCII characters.
// Repeated lines are joined with commas, as API Gateway joins them, so a
// key reads the same through net/http and through Lambda.
func idempotencyKey(h http.Header) (string, error) {
	values := h.Values("Idempotency-Key")
	if len(values) == 0 {
		return "", nil
	}
	key := strings.Join(values, ",")
	if key == "" || len(key) > MaxIdempotencyKeyLength {
		return "", errors.New("Idempotency-Key must have 1 to 255 characters")
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x20 || key[i] > 0x7e {
			return "", errors.New("Idempotency-Key must be printable ASCII")
		}
	}
	return key, nil
}

// foreignAsset names the first image value (by field name) that is an asset
// URL of this deployment but not an asset of the caller's workspace: a 400 at
// creation rather than a failed job later (docs/api.md, "Body rules").
func (g *Handler) foreignAsset(ctx context.Context, ep *catalog.Endpoint, req *catalog.Request, base, ws string) (string, error) {
	for _, ref := range ep.ImageRefs(req.Params) {
		id, ok := asset.IDFromURL(base, ref.Ref)
		if !ok {
			continue
		}
		a, err := g.Assets.Asset(ctx, id)
		if errors.Is(err, asset.ErrNotFound) || err == nil && a.WorkspaceID != ws {
			return ref.Name() + " is not an asset of this workspace", nil
		}
		if err != nil {
			return "", err
		}
	}
	return "", nil
}

// setDeprecationHeaders tells a client that used a deprecated alias when it
// was deprecated (RFC 9745) and when it stops working (RFC 8594).
func setDeprecationHeaders(h http.Header, ds []catalog.Deprecation) {
	if len(ds) == 0 {
		return
	}
	deprecated, sunset := ds[0].Deprecated, ds[0].Sunset
	for _, d := range ds[1:] {
		if d.Deprecated.Before(deprecated) {
			deprecated = d.Deprecated
		}
		if d.Sunset.Before(sunset) {
			sunset = d.Sunset
		}
	}
	h.Set("Deprecation", "@"+strconv.FormatInt(deprecated.Unix(), 10))
	h.Set("Sunset", sunset.UTC().Format(http.TimeFormat))
}

// webhookURL reads X-Webhook-URL byte for byte: the receiver compares the
// signature's aud with its own URL. A URL may hold commas, but two header
// lines (net/http) or their comma-joined value (API Gateway joins repeated
// headers) are a list, and a value with white space is refused.
func webhookURL(r *http.Request, allowHTTP bool) (string, error) {
	values := r.Header.Values("X-Webhook-URL")
	if len(values) > 1 {
		return "", errors.New("X-Webhook-URL must be one URL, not a list")
	}
	raw := strings.Join(values, "")
	if raw == "" {
		return "", nil
	}
	if len(raw) > MaxWebhookURLLength {
		return "", errors.New("X-Webhook-URL must be at most 2048 characters")
	}
	if strings.ContainsAny(raw, " \t\r\n") {
		return "", errors.New("X-Webhook-URL must not contain white space")
	}
	if strings.Contains(raw[1:], ",http://") || strings.Contains(raw[1:], ",https://") {
		return "", errors.New("X-Webhook-URL must be one URL, not a list")
	}
	u, err := url.Parse(raw)
	schemeOK := u != nil && (u.Scheme == "https" || allowHTTP && u.Scheme == "http")
	if err != nil || !schemeOK || u.Host == "" || u.Hostname() == "" || u.Opaque != "" {
		if allowHTTP {
			return "", errors.New("X-Webhook-URL must be an absolute http:// or https:// URL")
		}
		return "", errors.New("X-Webhook-URL must be an absolute https:// URL")
	}
	if u.User != nil {
		return "", errors.New("X-Webhook-URL must not contain user info")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return "", errors.New("X-Webhook-URL has a port outside 1..65535")
		}
	}
	return raw, nil
}
