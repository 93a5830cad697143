package webhook

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Redelivery is what sending a delivery again reads and writes
// (deliveriesdb.DB).
type Redelivery interface {
	Delivery(ctx context.Context, jobID string) (*Delivery, error)
	// Redeliver makes d's next attempt due at now (one more for a failed
	// delivery) under token, on the condition that nothing was attempted
	// since d was read and no attempt is claimed; ErrDelivered or
	// ErrClaimed otherwise, ErrNotFound without a delivery.
	Redeliver(ctx context.Context, d *Delivery, token string, now time.Time) error
}

// Scheduler sends a delivery's message (queue.Deliveries).
type Scheduler interface {
	Schedule(ctx context.Context, jobID string, attempt int, delay time.Duration) error
}

// ErrNotSent: the attempt is due, but its message could not be sent; the
// sweeper sends the message of an overdue attempt within 3 minutes.
var ErrNotSent = errors.New("webhook: the attempt is due but its message was not sent")

// SendAgain sends job jobID's webhook now instead of after its retry
// wait, for the operator's `webhook redeliver` and the console's "Deliver
// again" alike: the delivery's next attempt is made due at once, then its
// message is sent without delay. The deliverer treats it as any message of
// a due attempt, so a message that was already waiting finds the attempt
// made and sends nothing twice. It returns the delivery as it was read and
// the attempt made due; ErrDelivered for a delivery that succeeded (nothing
// written), ErrNotFound without one.
func SendAgain(ctx context.Context, st Redelivery, q Scheduler, jobID, token string, now time.Time) (*Delivery, int, error) {
	d, err := st.Delivery(ctx, jobID)
	if err != nil {
		return nil, 0, err
	}
	if d.State == Succeeded {
		return d, 0, ErrDelivered
	}
	n := d.Due()
	if err := st.Redeliver(ctx, d, token, now); err != nil {
		return d, 0, err
	}
	if err := q.Schedule(ctx, jobID, n, 0); err != nil {
		return d, n, fmt.Errorf("%w: %w", ErrNotSent, err)
	}
	return d, n, nil
}
