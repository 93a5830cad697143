// Package steps is the message of the provider queue: one step of one
// routed job, with the kind of step its sender asks for. It stands apart
// from package provider (which aliases it as provider.Message) so that the
// queue adapter every job-creating function links can send it without
// linking the provider adapters and the catalog.
package steps

import "genjobs/internal/job"

// Kind is what a step is asked to do.
type Kind string

// Kinds of steps, and who sends each.
const (
	// Submit: creation, promotion, and the sweeper's re-send of a job that
	// is still queued. A job already submitted goes on as for Poll.
	Submit Kind = "submit"
	// Poll: the chain's next check of a prediction (a read, or Cog's
	// resubmission), and the sweeper's re-send of a running job whose hold
	// lapsed.
	Poll Kind = "poll"
	// Copy: a verified callback ended the prediction and stashed its body:
	// copy the outputs now, even while a chain sleeps.
	Copy Kind = "copy"
	// Cancel: the job ended without its prediction (the client cancelled
	// it, or it timed out): ask the provider to cancel it.
	Cancel Kind = "cancel"
)

// Message is the body of a provider-queue message. Lease, when set, is the
// hold of the chain of steps that sent it: only that chain's messages act
// while the hold is in force, so duplicates and stale chains drop out.
type Message struct {
	Kind  Kind   `json:"kind"`
	JobID string `json:"job_id"`
	Lease string `json:"lease,omitempty"`
	// Failures counts the chain's failed tries in a row (a submission, a
	// read, a copy of the outputs): the backoff doubles with each.
	Failures int `json:"failures,omitempty"`
	// Answered is the marker of a submission the provider answered with an
	// error: nothing of it is in flight, so the next step need not wait
	// for its answer before looking for its prediction.
	Answered string `json:"answered,omitempty"`
}

// Resend is the step a routed job's (re-)sent message asks for: its
// submission while it is queued, else the next check.
func Resend(j *job.Job) Message {
	if j.Status == job.Queued || j.Status == job.Backlogged {
		return Message{Kind: Submit, JobID: j.ID}
	}
	return Message{Kind: Poll, JobID: j.ID}
}

// Valid reports whether m names a job and a known kind. A message without
// a kind was sent before kinds existed: Legacy reads it.
func (m Message) Valid() bool {
	if !job.ValidID(m.JobID) {
		return false
	}
	switch m.Kind {
	case Submit, Poll, Copy, Cancel, "":
		return true
	}
	return false
}

// Legacy gives a message sent without a kind the kind it meant then: a
// cancellation when its job has ended, a chain's check when it carries the
// chain's hold, else a step that acts on a stashed callback at once.
func (m Message) Legacy(j *job.Job) Message {
	switch {
	case m.Kind != "":
	case j.Status.Terminal():
		m.Kind = Cancel
	case m.Lease != "":
		m.Kind = Poll
	default:
		m.Kind = Copy
	}
	return m
}
