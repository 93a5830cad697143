package sweeper_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"genjobs/internal/job"
	"genjobs/internal/queue"
	"genjobs/internal/store/deliveriesdb"
	"genjobs/internal/testenv"
	"genjobs/internal/webhook"
)

// A pending webhook delivery whose message was lost (or dropped by a
// deliverer that took its own claim for another's) has nothing to make its
// attempt in AWS: the sweeper finds it on deliveries-due, without a Scan,
// and sends its message again, unless an attempt is under way.
func TestOverdueWebhookAttemptsAreSentAgain(t *testing.T) {
	e := newEnv(t)
	url, dlq, err := queue.CreateDeliveries(e.ctx, e.sqs, testenv.UniqueName(t, "dlv"))
	if err != nil {
		t.Fatal(err)
	}
	e.sweep.Deliveries, e.sweep.DeliveryQueue = deliveriesdb.New(e.store), queue.NewDeliveries(e.sqs, url, dlq)
	deliver := func(ws string) string {
		id := job.NewID(t0)
		if _, err := deliveriesdb.New(e.store).CreateDelivery(e.ctx, &webhook.Delivery{JobID: id, WorkspaceID: ws, ID: webhook.NewID(),
			URL: "https://hooks.example.com/in", State: webhook.Pending, NextAt: t0, CreatedAt: t0}); err != nil {
			t.Fatal(err)
		}
		return id
	}
	lost, claimed, done := deliver("ws_a"), deliver("ws_b"), deliver("ws_c")
	if err := deliveriesdb.New(e.store).ClaimAttempt(e.ctx, claimed, 1, "msg-1", t0.Add(time.Hour), t0); err != nil {
		t.Fatal(err)
	}
	if err := deliveriesdb.New(e.store).ClaimAttempt(e.ctx, done, 1, "msg-2", t0.Add(time.Minute), t0); err != nil {
		t.Fatal(err)
	}
	if err := deliveriesdb.New(e.store).RecordAttempt(e.ctx, done, "msg-2", webhook.Attempt{Number: 1, At: t0, EndedAt: t0, StatusCode: 204},
		webhook.Succeeded, time.Time{}); err != nil {
		t.Fatal(err)
	}

	e.clock.T = t0.Add(time.Minute) // due, but not yet overdue
	if r := e.run(); r.WebhooksSent != 0 {
		t.Errorf("a minute after due: %+v; want nothing sent", r)
	}
	e.clock.T = t0.Add(3 * time.Minute)
	if r := e.run(); r.WebhooksSent != 1 {
		t.Errorf("three minutes after due: %+v; want the lost one sent", r)
	}
	out, err := e.sqs.ReceiveMessage(e.ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
	if err != nil {
		t.Fatal(err)
	}
	var got []webhook.Message
	for _, m := range out.Messages {
		var msg webhook.Message
		_ = json.Unmarshal([]byte(aws.ToString(m.Body)), &msg)
		got = append(got, msg)
	}
	if len(got) != 1 || got[0].JobID != lost || got[0].Attempt != 1 {
		t.Errorf("deliveries queue holds %+v; want attempt 1 of %s only", got, lost)
	}
}
