// Package sweeperfn wires the sweeper function: on its schedule, it moves
// on the jobs, webhook attempts and pending top-ups that nothing else will.
package sweeperfn

import (
	"cmp"

	"genjobs/internal/app"
	"genjobs/internal/app/dynamodbwire"
	"genjobs/internal/app/sqswire"
	"genjobs/internal/queue"
	"genjobs/internal/store/accountsdb"
	"genjobs/internal/store/deliveriesdb"
	"genjobs/internal/store/leasedb"
	"genjobs/internal/store/topupsdb"
	"genjobs/internal/sweeper"
)

// Build builds the sweeper function's handler of its schedule.
func Build(d app.Deps) (app.ScheduleHandler, error) {
	if err := app.Require(map[string]string{
		"TABLE_NAME": d.Table, "JOBS_QUEUE_URL": d.Queues.Jobs, "JOBS_DLQ_URL": d.Queues.JobsDLQ,
	}); err != nil {
		return nil, err
	}
	st, c := dynamodbwire.Store(d), sqswire.Client(d)
	q := sqswire.JobQueue(d, c)
	s := &sweeper.Sweeper{
		Store:     st,
		Lifecycle: sqswire.Lifecycle(d, st, q),
		Queue:     q,
		Dead: queue.DeadLetterQueues{queue.NewDeadLetters(c, d.Queues.JobsDLQ),
			queue.NewDeadLetters(c, d.Queues.LightJobsDLQ)},
		Clock:        d.Clock,
		Log:          d.Log,
		Deadline:     sweeper.DefaultDeadline,
		RequeueAfter: cmp.Or(d.Sweeper.RequeueAfter, sweeper.DefaultRequeueAfter),
		Lease:        leasedb.New(st),
		LeaseFor:     sweeper.DefaultLeaseFor,
		Plans:        accountsdb.New(st),
		TopUps:       topupsdb.New(st),
	}
	if d.Webhooks.Queue != "" { // re-sends overdue webhook attempts too
		s.Deliveries = deliveriesdb.New(st)
		s.DeliveryQueue = queue.NewDeliveries(c, d.Webhooks.Queue, d.Webhooks.DLQ)
	}
	return s.Handle, nil
}
