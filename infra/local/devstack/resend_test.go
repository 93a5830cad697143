package devstack_test

import (
	"context"
	"encoding/json"
	"sort"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"genjobs/internal/store/deliveriesdb"
	"genjobs/internal/webhook"
)

// fauxqs forgets its messages when it restarts: the stack sends the
// message of every delivery still due again, and only those.
func TestResendDeliveriesSendsWhatIsStillDue(t *testing.T) {
	ctx := context.Background()
	local, _, st, _ := stackWith(t)
	now := time.Now().UTC()
	pending := func(jobID string, next time.Time) *webhook.Delivery {
		d, err := deliveriesdb.New(st).CreateDelivery(ctx, &webhook.Delivery{JobID: jobID, WorkspaceID: "ws_resend", ID: webhook.NewID(),
			URL: "https://example.com/hook", State: webhook.Pending, NextAt: next, CreatedAt: now})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	pending("job_resend_due", now)
	pending("job_resend_later", now.Add(3*time.Second))
	done := pending("job_resend_done", now)
	if err := deliveriesdb.New(st).RecordAttempt(ctx, done.JobID, "", webhook.Attempt{Number: 1, At: now, StatusCode: 204}, webhook.Succeeded, time.Time{}); err != nil {
		t.Fatal(err)
	}

	n, err := local.ResendDeliveries(ctx, now)
	if err != nil || n != 2 {
		t.Fatalf("resent %d (%v), want the 2 pending deliveries", n, err)
	}
	var got []string
	deadline := time.Now().Add(15 * time.Second)
	for len(got) < 2 && time.Now().Before(deadline) {
		out, err := local.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(local.DeliveriesQueueURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages {
			var msg webhook.Message
			if err := json.Unmarshal([]byte(aws.ToString(m.Body)), &msg); err != nil {
				t.Fatal(err)
			}
			if msg.Attempt != 1 {
				t.Errorf("%s: attempt %d, want 1 (the one due)", msg.JobID, msg.Attempt)
			}
			got = append(got, msg.JobID)
		}
	}
	sort.Strings(got)
	if len(got) != 2 || got[0] != "job_resend_due" || got[1] != "job_resend_later" {
		t.Fatalf("messages for %v, want job_resend_due and job_resend_later", got)
	}
}
