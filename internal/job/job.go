// Package job holds the job record, its statuses and the rules that move a
// job between them. It imports no AWS package.
package job

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"time"

	"genjobs/internal/billing"
)

// Status is where a job stands. The order of the constants is the order a job
// moves in: a step may be skipped, never revisited, and a terminal status is
// final. Each constant says who moves a job into it and out of it; every
// writer goes through one conditional transition (store.Transition), which
// checks CanMoveTo on the stored status, so no writer can break these rules.
//
// The writers: creation (the generate handler); the lifecycle's Ender, which
// every end goes through and which promotes the backlog after it; the
// client's cancellation (DELETE /jobs/{id}, also the MCP cancel_job tool); a
// worker, while it holds the job's lease; the provider runner, a routed job's
// chain of steps, while it holds the job's lease (its hold), except that it
// fails a job whose endpoint is no longer routed without one; the provider
// callbacks, which move a routed job on as its provider reports it, without a
// lease; and the sweeper. A light worker's hand-over to the heavy lane changes
// no status: it gives up its lease, and the heavy worker's claim resumes the
// job where it stands.
type Status string

const (
	// Backlogged: created while every running slot of the workspace was taken.
	// In: creation. Out: to Queued by promotion, oldest first, when a job of
	// the workspace ends (the Ender promotes after every end; the sweeper
	// promotes any job a promotion missed); to Cancelled by the client. Never
	// run, so never failed: the sweeper's deadline starts at Queued.
	Backlogged Status = "backlogged"
	// Queued: holds a running slot and is (or is about to be) on the jobs or
	// provider queue. In: creation, promotion. Out: to Processing by the
	// worker's claim, or to Scheduled for a routed job by the provider runner when the
	// provider accepts it (or by a callback reporting it started); straight
	// to Completed or Failed by the provider runner when the provider's first
	// answer is the end; to Failed by the sweeper (deadline, or a message the
	// DLQ took); to Cancelled by the client.
	Queued Status = "queued"
	// Scheduled: a routed job's prediction is accepted and waits to start
	// (a job claimed by a worker before its claim started it, too). In: the
	// provider runner or a callback. Out: onward by the lease holder
	// (provider runner, or a worker's claim) or a callback; Failed by the
	// lease holder or the sweeper; Cancelled by the client.
	Scheduled Status = "scheduled"
	// Processing: the worker fetches inputs and starts the engine, or the
	// provider reports the prediction running. In: the worker's claim; the
	// provider runner, or a callback. Out: the lease holder (worker or
	// provider runner), or a callback (on to Sampling); Failed by the
	// sweeper; Cancelled by the client.
	Processing Status = "processing"
	// Sampling: output is being produced; progress rises. In and out: the
	// lease holder (worker or provider runner), or a callback (in, and its
	// progress raised); Failed by the sweeper; Cancelled by the client.
	Sampling Status = "sampling"
	// IntermediateComplete: previews may be in the result; the final output is
	// not. In and out: the worker that holds the lease (routed jobs never
	// reach it); Failed by the sweeper; Cancelled by the client.
	IntermediateComplete Status = "intermediate-complete"
	// Completed: terminal; the result holds the output and the job is billed.
	// In: the lease holder (the worker; for a routed job the provider runner,
	// once it copied the outputs), through the Ender, from Queued or later
	// (never from Backlogged).
	Completed Status = "completed"
	// Failed: terminal; error says why. Not billed. In, through the Ender: the
	// worker (the engine or an input failed), the provider runner (the
	// provider refused or failed the prediction, the route's deadline passed,
	// or the endpoint is no longer routed), the sweeper (the deadline passed,
	// or a message the DLQ took).
	Failed Status = "failed"
	// Cancelled: terminal; cancelled by the client (DELETE /jobs/{id}), from
	// any status before the end, through the Ender. Not billed.
	Cancelled Status = "cancelled"
)

// Statuses lists every status in order.
var Statuses = []Status{Backlogged, Queued, Scheduled, Processing, Sampling, IntermediateComplete, Completed, Failed, Cancelled}

// ParseStatus returns the status named s.
func ParseStatus(s string) (Status, bool) {
	for _, st := range Statuses {
		if string(st) == s {
			return st, true
		}
	}
	return "", false
}

// Terminal reports whether no further change can happen to a job in s.
func (s Status) Terminal() bool {
	return s == Completed || s == Failed || s == Cancelled
}

// Running reports whether a job in s holds one of its workspace's running
// slots: Queued or later, not yet terminal (docs/api.md, "Limits").
func (s Status) Running() bool {
	return s != Backlogged && !s.Terminal()
}

// rank orders statuses; every terminal status shares the last rank.
func (s Status) rank() int {
	for i, st := range Statuses[:6] {
		if st == s {
			return i
		}
	}
	return 6
}

// CanMoveTo reports whether a job in s may move to next: only forward, never
// out of a terminal status, and a backlogged job only to Queued (it must take
// a running slot before it runs) or to Failed or Cancelled.
func (s Status) CanMoveTo(next Status) bool {
	if s.Terminal() || next.rank() <= s.rank() {
		return false
	}
	if s == Backlogged {
		return next == Queued || next == Failed || next == Cancelled
	}
	return true
}

// From lists the statuses a job may move to next from, in order.
func (next Status) From() []Status {
	var out []Status
	for _, s := range Statuses {
		if s.CanMoveTo(next) {
			out = append(out, s)
		}
	}
	return out
}

// Error codes of a failed job (docs/api.md, "Error codes of a failed job").
const (
	CodeInvalidInput = "invalid_input" // an input could not be fetched or decoded
	CodeInputBlocked = "input_blocked" // an input URL was refused by the network policy
	CodeEngineError  = "engine_error"
	CodeTimeout      = "timeout"
	CodeProvider     = "provider_error" // the model provider refused the request or failed
	CodeInternal     = "internal"
)

// Error is the error object of a failed job (docs/api.md, "Error codes of a failed job").
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message,omitempty"`
}

// Record is the job record (docs/api.md, "The job record"): exactly these
// fields, nothing else.
type Record struct {
	ID          string          `json:"job_id"`
	Status      Status          `json:"status"`
	CreatedAt   Time            `json:"created_at"`
	CompletedAt *Time           `json:"completed_at"`
	Result      json.RawMessage `json:"result"`
	Error       *Error          `json:"error,omitempty"`
	Progress    *float64        `json:"progress"`
}

// MarshalJSON writes null for an empty result, as the creation response needs.
func (r Record) MarshalJSON() ([]byte, error) {
	type plain Record
	p := plain(r)
	if len(p.Result) == 0 {
		p.Result = json.RawMessage("null")
	}
	return marshal(p)
}

// marshal is json.Marshal without HTML escaping: presigned URLs keep their
// '&' as is, for people reading a record in curl's output.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Time is a UTC instant written with exactly three fractional digits
// (2026-11-21T20:33:00.120Z), so that timestamps sort as text.
type Time struct{ time.Time }

// TimeLayout is the layout of every timestamp the API writes.
const TimeLayout = "2006-01-02T15:04:05.000Z"

// TimeOf is t as the API shows it: UTC, truncated to the millisecond.
func TimeOf(t time.Time) Time { return Time{t.UTC().Truncate(time.Millisecond)} }

// String formats t with TimeLayout.
func (t Time) String() string { return t.UTC().Format(TimeLayout) }

// MarshalJSON writes t as a JSON string in TimeLayout.
func (t Time) MarshalJSON() ([]byte, error) { return json.Marshal(t.String()) }

// UnmarshalJSON reads a timestamp in RFC 3339.
func (t *Time) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return err
	}
	*t = TimeOf(v)
	return nil
}

// ParseTime reads a timestamp written by String.
func ParseTime(s string) (Time, error) {
	v, err := time.Parse(time.RFC3339Nano, s)
	return TimeOf(v), err
}

// NewID returns a version 7 UUID: its first 48 bits are the creation time in
// milliseconds, so ids of one millisecond's jobs still sort by creation.
func NewID(now time.Time) string {
	var b [16]byte
	if _, err := rand.Read(b[6:]); err != nil {
		panic("job: crypto/rand failed: " + err.Error()) // never happens on Linux
	}
	var ms [8]byte
	binary.BigEndian.PutUint64(ms[:], uint64(now.UnixMilli()))
	copy(b[:6], ms[2:])
	b[6] = b[6]&0x0f | 0x70
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// ValidID reports whether s is a UUID as a job id may be (docs/api.md, "The job record"): version 1 to 8
// and variant 8, 9, a or b, or the all-zero or all-f UUID. It guards lookups
// so that a malformed id costs no read.
func ValidID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < 36; i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
			continue
		}
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	if s == "00000000-0000-0000-0000-000000000000" || s == "ffffffff-ffff-ffff-ffff-ffffffffffff" {
		return true
	}
	v, variant := s[14], s[19]
	return v >= '1' && v <= '8' && (variant == '8' || variant == '9' || variant == 'a' || variant == 'b')
}

// Job is everything the service keeps about a job; Record is what a client sees.
type Job struct {
	ID          string
	WorkspaceID string
	Status      Status
	CreatedAt   time.Time
	UpdatedAt   time.Time
	QueuedAt    *time.Time // when it took a running slot; the 30-minute deadline runs from here
	EnqueuedAt  *time.Time // when the sweeper last re-sent its message
	CompletedAt *time.Time
	// Outputs are the blob keys of the result files (previews at
	// intermediate-complete); the record shows them as URLs minted when read.
	Outputs  []string
	Error    *Error
	Progress *float64
	Endpoint string          // the generation path, e.g. /generate/enhance/vendor-a/standard-enhance
	Request  json.RawMessage // the validated request, defaults filled
	// BaseURL is the API address the job was created at: asset URLs in the
	// request are recognised against it.
	BaseURL    string
	WebhookURL string // validated X-Webhook-URL, empty when none
	Lease      Lease  // the worker currently holding the job, if any
	Attempts   int    // how many times a worker has claimed it
	// Lane is the jobs queue that runs it, decided at creation
	// (lifecycle.QueueFor) and changed only by a light worker's hand-over
	// (Change.Lane); "" on a partial view and on older jobs.
	Lane string
	// Price is reserved from the workspace's balance at creation, charged
	// when the job completes and released when it ends otherwise.
	Price billing.Micros
	// Idempotency is the client's Idempotency-Key of the creation, if any;
	// only creation reads it.
	Idempotency *Idempotency
	// Provider names the model provider the job runs on (replicate, cog):
	// set at creation for an endpoint the deployment routes, empty for the
	// reference engines. Its messages go to the provider queue.
	Provider string
	// Deadline is how long the job may take from queued to its end when
	// it is not the default (a route's deadline_minutes).
	Deadline time.Duration
	// RouteModel is the provider's model (or version) a routed job was
	// sent to, recorded at creation for the job's details.
	RouteModel string
	// Currency is what the job is billed in, fixed at creation ("" on jobs
	// stored before compute units: USD). A CU job's price is Units, held
	// from and settled to the workspace's compute units; Price is then
	// its price in USD, which CU were converted from, and never touches
	// the API balance.
	Currency billing.Currency
	Units    billing.Units
	// Source is where the job was made (SourceAPI, SourceMCP, SourceApp);
	// CreatedBy who made it: the API token's name, or the person's email;
	// PersonID the person's user id for a job made by a signed-in person.
	// Recorded at creation for the job's details, never in its record.
	Source    string
	CreatedBy string
	PersonID  string
	// StartedAt is when the job first moved past queued (a worker's claim,
	// a provider accepting it); nil until then.
	StartedAt *time.Time
}

// Sources of a job (the details' "source").
const (
	SourceAPI = "api" // an API token, over REST
	SourceMCP = "mcp" // an MCP tool, with an API token or an OAuth connection
	SourceApp = "app" // the application, by a signed-in person
)

// InUnits reports whether j is billed in compute units.
func (j *Job) InUnits() bool { return j.Currency == billing.CurrencyCU }

// Submission is what the service knows of a routed job's prediction.
type Submission struct {
	// Marker is written before each submission is sent, so that a step
	// that finds it without a PredictionID knows an answer may be lost.
	Marker   string
	MarkedAt time.Time
	Tries    int // submissions sent
	// Key is a secret chosen with the first submission and kept: with the
	// job's id it makes the prediction id of a provider whose ids are the
	// client's (Cog), unguessable, the proof of the uploads it sends.
	Key string
	// PredictionID is the provider's id, once known.
	PredictionID string
	// TokenHashes are the hashes of the callback URLs' tokens: one per
	// submission, so the callbacks of each stay verifiable.
	TokenHashes []string
	// Callback is the blob key of the body of a verified callback that
	// ended the prediction, until a step has acted on it.
	Callback string
	// Cancelled: the provider has answered a cancellation.
	Cancelled bool
}

// Submitted reports whether a submission may have reached the provider.
func (s Submission) Submitted() bool { return s.Marker != "" }

// Idempotency ties a creation to the client's Idempotency-Key
// (docs/api.md, "Idempotent creation"): a retry with the same key and request gets the same
// job, one with the same key and another request is refused.
type Idempotency struct {
	Key         string
	RequestHash string    // RequestHash of the creation
	Expires     time.Time // the key is forgotten after this
}

// IdempotencyWindow is how long a key is kept (Stripe's 24 hours).
const IdempotencyWindow = 24 * time.Hour

// RequestHash identifies a creation request for Idempotency-Key matching:
// the endpoint, the validated request (defaults filled, so equal requests
// spelled differently match) and the webhook URL, which is part of what
// the client asked for.
func RequestHash(endpoint string, request []byte, webhookURL string) string {
	h := sha256.New()
	for _, part := range [][]byte{[]byte(endpoint), request, []byte(webhookURL)} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(part)))
		h.Write(n[:])
		h.Write(part)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Model is the last segment of the job's endpoint, e.g. standard-enhance.
func (j *Job) Model() string {
	return j.Endpoint[strings.LastIndexByte(j.Endpoint, '/')+1:]
}

// Record is the client's view of j; urls are its Outputs as fetchable URLs.
// A failed or cancelled job shows no result, not even the preview it had.
func (j *Job) Record(urls []string) Record {
	r := Record{
		ID:        j.ID,
		Status:    j.Status,
		CreatedAt: TimeOf(j.CreatedAt),
		Error:     j.Error,
		Progress:  shownProgress(j.Progress),
	}
	if len(urls) > 0 && j.Status != Failed && j.Status != Cancelled {
		r.Result, _ = marshal(struct {
			URLs []string `json:"urls"`
		}{urls})
	}
	if j.CompletedAt != nil {
		t := TimeOf(*j.CompletedAt)
		r.CompletedAt = &t
	}
	return r
}

// ProgressDigits is how many decimals of progress a record shows: engines
// report fractions such as 0.36796000000000006, which say nothing more than
// 0.368 and read as noise.
const ProgressDigits = 4

// shownProgress is p rounded to ProgressDigits decimals. Rounding keeps the
// order of values, so a progress that never decreases still never does; a
// job short of completion never shows 1.
func shownProgress(p *float64) *float64 {
	if p == nil {
		return nil
	}
	const scale = 1e4 // 10^ProgressDigits
	v := math.Round(*p*scale) / scale
	if v >= 1 && *p < 1 {
		v = 1 - 1/scale
	}
	return &v
}

// Lease is a worker's hold on a job: only its holder may move the job on,
// until it expires. A worker that crashed loses its lease, and the job's
// redelivered message lets another take it.
type Lease struct {
	ID    string
	Until time.Time
}

// Held reports whether the lease is in force at now.
func (l Lease) Held(now time.Time) bool { return l.ID != "" && now.Before(l.Until) }

// Change is one write to a job through the transition primitive.
type Change struct {
	// To is the status after the change. It may equal the current status of
	// a non-terminal job (a progress write); otherwise CanMoveTo must allow it.
	To       Status
	Progress *float64 // never lower than the stored progress
	Outputs  []string // replaces the outputs when non-nil
	Error    *Error   // with To == Failed
	// Holder is the lease the writer holds: a worker's writes fail once
	// another worker took the job or the job ended. Empty for the client and
	// the sweeper.
	Holder string
	// Lease claims the job (Holder empty: only when no lease is in force) or
	// extends the holder's lease (Holder == Lease.ID).
	Lease *Lease
	// Lane, when set, is the job's new lane: a worker handing the job to
	// another lane's queue records it, so that whoever sends the job again
	// (the sweeper, a retry) sends it where it now lives.
	Lane string
}

// Query selects a workspace's jobs, newest first.
type Query struct {
	Status Status // empty: any
	Limit  int    // 1..MaxListLimit
	Cursor string // a previous page's NextCursor; empty for the first page
}

// Page is one page of a job list.
type Page struct {
	Jobs       []*Job
	NextCursor string // empty on the last page
}

// Bounds of a job list page (docs/api.md, "Pages and cursors").
const (
	DefaultListLimit = 100
	MaxListLimit     = 1000
)

// Errors of job storage that callers act on.
var (
	ErrNotFound  = errors.New("job not found")
	ErrBadCursor = errors.New("cursor is not valid for this query")
	// ErrConflict: the job is not in a status the change may start from,
	// the writer's lease is gone, or the progress would go down.
	ErrConflict = errors.New("job changed meanwhile")
	// ErrTooManyJobs: the workspace already has max_concurrent jobs that
	// have not ended (429).
	ErrTooManyJobs = errors.New("workspace has reached its concurrent job limit")
	// ErrNoRunningSlot: every running slot of the workspace is taken, so a
	// backlogged job cannot be promoted yet.
	ErrNoRunningSlot = errors.New("no running slot free")
	// ErrKeyReused: the Idempotency-Key was first used with another
	// request (422).
	ErrKeyReused = errors.New("idempotency key used with a different request")
	// ErrKeyInFlight: the first request with the Idempotency-Key is still
	// being written (409).
	ErrKeyInFlight = errors.New("idempotency key in use by a request in progress")
)

// Replayed is returned by a creation whose Idempotency-Key and request
// match an earlier creation: JobID is that creation's job, and nothing new
// was written or reserved.
type Replayed struct{ JobID string }

func (r *Replayed) Error() string { return "idempotent replay of job " + r.JobID }

// Filter narrows a workspace's job list (the console's jobs page): each
// field empty means any. Endpoint is a path such as
// "/generate/image/vendor-b/model-e-4"; Source one of SourceAPI,
// SourceMCP, SourceApp; Person a person's user id (PersonID).
type Filter struct {
	Status   Status
	Endpoint string
	Source   string
	Person   string
}

// Matches reports whether j passes every field of f.
func (f Filter) Matches(j *Job) bool {
	source := j.Source
	if source == "" { // a job stored before sources were recorded
		source = SourceAPI
	}
	return (f.Status == "" || j.Status == f.Status) &&
		(f.Endpoint == "" || j.Endpoint == f.Endpoint) &&
		(f.Source == "" || source == f.Source) &&
		(f.Person == "" || j.PersonID == f.Person)
}
