// Package slotsdb reads a workspace's slot counters (docs/api.md,
// "Limits"), the concurrency limits on the workspace item: jobs_active
// counts jobs that have not ended (bounded by max_concurrent),
// jobs_running those of them past backlogged (bounded by max_running).
// They change only in the transaction of a job's creation, promotion or
// end (package store: CreateJob and Transition hold them to their limits),
// so they are exact; the operator's `workspace verify` recounts them from
// the jobs here.
package slotsdb

import (
	"context"
	"fmt"

	"genjobs/internal/job"
	"genjobs/internal/store"
)

// DB is the store with the slot counters' reads besides.
type DB struct {
	*store.Store
}

// New returns the slot counters on st's table. It does no I/O.
func New(st *store.Store) *DB { return &DB{Store: st} }

// Slots is a workspace's slot counters.
type Slots struct {
	Active  int `json:"active"`  // jobs that have not ended
	Running int `json:"running"` // of which past backlogged
}

// StoredSlots reads the counters on the workspace item.
func (d *DB) StoredSlots(ctx context.Context, ws string) (Slots, error) {
	var it store.WorkspaceItem
	if err := d.Get(ctx, store.WorkspacePK(ws), "WS", &it); err != nil {
		return Slots{}, fmt.Errorf("workspace %s: %w", ws, err)
	}
	return Slots{Active: it.Active, Running: it.Running}, nil
}

// CountSlots recounts the counters from the workspace's jobs themselves,
// reading its whole history through jobs-by-workspace (an operator check,
// not a hot path; the index is eventually consistent, so run it when the
// workspace is quiet).
func (d *DB) CountSlots(ctx context.Context, ws string) (Slots, error) {
	var n Slots
	err := d.EachJobStatus(ctx, ws, func(_ string, st job.Status) {
		if !st.Terminal() {
			n.Active++
		}
		if st.Running() {
			n.Running++
		}
	})
	return n, err
}
