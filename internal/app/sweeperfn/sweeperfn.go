// Package sweeperfn wires the sweeper function: on its schedule, it moves
// on the jobs and webhook attempts that nothing else will.
package sweeperfn

import (
	"genjobs/internal/app"
	"genjobs/internal/app/dynamodbwire"
	"genjobs/internal/app/sqswire"
	"genjobs/internal/queue"
	"genjobs/internal/sweeper"
)

// Build builds the sweeper function's handler of its schedule.
func Build(d app.Deps) (app.ScheduleHandler, error) {
	err := app.Require(map[string]string{"TABLE_NAME": d.Table, "JOBS_QUEUE_URL": d.JobsQueueURL, "JOBS_DLQ_URL": d.JobsDLQURL})
	if err != nil {
		return nil, err
	}
	st, c := dynamodbwire.Store(d), sqswire.Client(d)
	q := sqswire.JobQueue(d, c)
	s := &sweeper.Sweeper{
		Store:     st,
		Lifecycle: sqswire.Lifecycle(d, st, q),
		Queue:     q,
		Dead: queue.DeadLetterQueues{queue.NewDeadLetters(c, d.JobsDLQURL),
			queue.NewDeadLetters(c, d.LightJobsDLQURL)},
		Clock:        d.Clock,
		Log:          d.Log,
		Deadline:     sweeper.DefaultDeadline,
		RequeueAfter: sweeper.DefaultRequeueAfter,
		Lease:        st,
		LeaseFor:     sweeper.DefaultLeaseFor,
	}
	if d.DeliveriesQueueURL != "" { // re-sends overdue webhook attempts too
		s.Deliveries = st
		s.DeliveryQueue = queue.NewDeliveries(c, d.DeliveriesQueueURL, d.DeliveriesDLQURL)
	}
	if d.RequeueAfter > 0 {
		s.RequeueAfter = d.RequeueAfter
	}
	return s.Handle, nil
}
