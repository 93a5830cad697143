package cogserver

import (
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Cog's webhook events.
const (
	eventStart     = "start"
	eventOutput    = "output"
	eventLogs      = "logs"
	eventCompleted = "completed"
)

// retryStatuses are the answers to a completed webhook that Cog retries
// (besides connection errors).
var retryStatuses = map[int]bool{429: true, 500: true, 502: true, 503: true, 504: true}

// hooks sends one prediction's webhooks, one at a time and in order.
type hooks struct {
	p      *prediction
	url    string
	events map[string]bool // webhook_events_filter
	queue  chan delivery

	mu       sync.Mutex
	last     time.Time // when the last event was queued, for the logs' interval
	finished bool      // the completed event is queued: nothing follows it
}

type delivery struct {
	event string
	st    snapshot
}

// emit queues a webhook with the prediction's current state, unless the
// filter excludes event. As Cog does, a start or logs event within the
// logs interval of the previous event is dropped (the next one, or the
// completed one, carries the logs), and output events are never dropped.
func (p *prediction) emit(event string) {
	h := p.hooks
	if h == nil || !h.events[event] {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.finished {
		return
	}
	now := time.Now() // an interval between real sends, not a timestamp
	if event != eventOutput && !h.last.IsZero() && now.Sub(h.last) < p.s.opt.LogsInterval {
		return
	}
	h.last = now
	d := delivery{event: event, st: p.snapshot(false)}
	if event == eventOutput {
		h.queue <- d
		return
	}
	select {
	case h.queue <- d:
	default: // the receiver is slow: dropped like a throttled one
	}
}

// finish queues the completed event, the last.
func (h *hooks) finish(st snapshot) {
	h.mu.Lock()
	h.finished = true
	h.mu.Unlock()
	if h.events[eventCompleted] {
		h.queue <- delivery{event: eventCompleted, st: st}
	}
	close(h.queue)
}

// send delivers the queued webhooks until the completed one.
func (h *hooks) send() {
	for d := range h.queue {
		if d.event == eventCompleted {
			h.sendCompleted(d.st)
			continue
		}
		if status, err := h.post(d.st); err != nil || status/100 != 2 {
			h.p.log.Warn("a webhook was not accepted; Cog does not retry it", "event", d.event, "status", status, "error", errText(err))
		}
	}
}

// sendCompleted delivers the completed webhook, retried as Cog retries it:
// on 429, 500, 502, 503, 504 and connection errors, MaxRetries times, after
// RetryBase x 2^attempt (the exponent at most 10).
func (h *hooks) sendCompleted(st snapshot) {
	opt := h.p.s.opt
	for attempt := 0; ; {
		status, err := h.post(st)
		if err == nil && status/100 == 2 {
			h.p.log.Info("completed webhook delivered", "status", status, "attempts", attempt+1)
			return
		}
		if err == nil && !retryStatuses[status] {
			h.p.log.Error("the completed webhook was refused; not retried", "status", status)
			return
		}
		attempt++
		if attempt > opt.MaxRetries {
			h.p.log.Error("the completed webhook failed after every retry", "status", status, "error", errText(err))
			return
		}
		wait := opt.RetryBase * time.Duration(1<<min(attempt, 10))
		h.p.log.Warn("the completed webhook failed; retrying", "status", status, "error", errText(err), "attempt", attempt, "backoff_ms", wait.Milliseconds())
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-h.p.s.closing.Done():
			t.Stop()
			return
		}
	}
}

// post sends one webhook request with st as its body, streamed.
func (h *hooks) post(st snapshot) (int, error) {
	s := h.p.s
	size, err := st.size()
	if err != nil {
		return 0, err
	}
	pr, pw := io.Pipe()
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		pw.CloseWithError(st.write(pw))
	}()
	defer func() {
		pr.Close() // unblocks the writer if the request stopped reading
		<-wrote
	}()
	req, err := http.NewRequestWithContext(s.closing, http.MethodPost, h.url, pr)
	if err != nil {
		return 0, err
	}
	req.ContentLength = size
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "genjobs-cogserver")
	if s.opt.WebhookToken != "" {
		req.Header.Set("Authorization", "Bearer "+s.opt.WebhookToken)
	}
	resp, err := s.opt.Webhooks.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, nil
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// contentLength is what Content-Length says for st, as a header value.
func contentLength(st snapshot) (string, bool) {
	n, err := st.size()
	if err != nil {
		return "", false
	}
	return strconv.FormatInt(n, 10), true
}
