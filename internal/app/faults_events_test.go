package app_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	awskms "github.com/aws/aws-sdk-go-v2/service/kms"
	kmstypes "github.com/aws/aws-sdk-go-v2/service/kms/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"genjobs/internal/app"
	"genjobs/internal/app/delivererfn"
	"genjobs/internal/app/jwksfn"
	"genjobs/internal/app/notifierfn"
	"genjobs/internal/app/sweeperfn"
	"genjobs/internal/app/workerfn"
	"genjobs/internal/billing"
	"genjobs/internal/clock"
	"genjobs/internal/emulator"
	"genjobs/internal/fault"
	"genjobs/internal/job"
	"genjobs/internal/store/deliveriesdb"
	"genjobs/internal/store/ledgerdb"
	"genjobs/internal/testenv"
	"genjobs/internal/webhook"
)

// invocation is an event invocation's context, with a deadline as Lambda
// gives one.
func invocation(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// A worker that cannot record its job's end (the settlement transaction
// fails) reports the message for another delivery and leaves the job
// unfinished and uncharged; the next delivery completes it, charged once.
func TestAWorkerThatCannotEndItsJobReportsTheMessage(t *testing.T) {
	s := newStack(t)
	h := s.handler(app.Function{SQS: workerfn.Build}).SQS
	j := s.queuedJob("")
	ev := events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m1", Body: `{"job_id":"` + j.ID + `"}`}}}
	s.table.Set("TransactWriteItems", testenv.Unavailable)
	resp, err := h(invocation(t), ev)
	if err != nil || len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "m1" {
		t.Fatalf("%+v, %v; want m1 reported failed", resp, err)
	}
	ctx := context.Background()
	stored, err := s.store.Job(ctx, j.ID)
	if err != nil || stored.Status.Terminal() || stored.Lease.Held(time.Now()) {
		t.Fatalf("after the failed end: %+v, %v; want it unfinished with its lease given up", stored, err)
	}
	charges := func() int {
		entries, err := ledgerdb.New(s.store).LedgerEntries(ctx, "ws_a")
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range entries {
			if e.Kind == billing.Charge && e.JobID == j.ID {
				n++
			}
		}
		return n
	}
	if n := charges(); n != 0 {
		t.Errorf("%d charges before the job completed", n)
	}

	s.table.Clear()
	if resp, err := h(invocation(t), ev); err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("the next delivery: %+v, %v; want it done", resp, err)
	}
	if stored, err := s.store.Job(ctx, j.ID); err != nil || stored.Status != job.Completed {
		t.Fatalf("after the next delivery: %v, %v; want completed", stored.Status, err)
	}
	if n := charges(); n != 1 {
		t.Errorf("%d charges; want 1", n)
	}
}

// The notifier reports the first record it could not start, by its
// sequence number, and leaves the records after it to the stream's retry.
func TestTheNotifierReportsTheRecordItCouldNotStart(t *testing.T) {
	s := newStack(t)
	h := s.handler(app.Function{Stream: notifierfn.Build}).Stream
	str := events.NewStringAttribute
	record := func(jobID, seq string) events.DynamoDBEventRecord {
		return events.DynamoDBEventRecord{EventName: "MODIFY", Change: events.DynamoDBStreamRecord{
			SequenceNumber: seq,
			NewImage: map[string]events.DynamoDBAttributeValue{"SK": str("JOB"), "status": str("completed"),
				"webhook_url": str("https://hooks.test/h"), "job_id": str(jobID), "workspace_id": str("ws_a")},
			OldImage: map[string]events.DynamoDBAttributeValue{"status": str("sampling")},
		}}
	}
	now := time.Now()
	first, second := job.NewID(now), job.NewID(now.Add(time.Millisecond))
	ev := events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{record(first, "100"), record(second, "200")}}
	s.queues.Set("SendMessage", testenv.Unavailable)
	resp, err := h(invocation(t), ev)
	if err != nil || len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "100" {
		t.Fatalf("%+v, %v; want the first record's sequence number reported", resp, err)
	}
	if _, err := deliveriesdb.New(s.store).Delivery(context.Background(), second); !errors.Is(err, webhook.ErrNotFound) {
		t.Errorf("the record after the failed one was handled: %v", err)
	}
	s.queues.Clear()
	if resp, err := h(invocation(t), ev); err != nil || len(resp.BatchItemFailures) != 0 {
		t.Errorf("the retry: %+v, %v; want both started", resp, err)
	}
}

// A webhook POSTed but not recorded is reported for another delivery: the
// message is not acknowledged until the attempt is written.
func TestTheDelivererReportsTheAttemptsItCouldNotRecord(t *testing.T) {
	s := newStack(t)
	var posts atomic.Int32
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		posts.Add(1)
	}))
	t.Cleanup(receiver.Close)
	h := s.handler(app.Function{SQS: delivererfn.Build}).SQS
	var ev events.SQSEvent
	for _, id := range []string{"m1", "m2"} {
		j := s.queuedJob(receiver.URL)
		now := time.Now()
		_, err := deliveriesdb.New(s.store).CreateDelivery(context.Background(), &webhook.Delivery{JobID: j.ID, WorkspaceID: "ws_a",
			ID: webhook.NewID(), URL: receiver.URL, State: webhook.Pending, NextAt: now, CreatedAt: now})
		if err != nil {
			t.Fatal(err)
		}
		ev.Records = append(ev.Records, events.SQSMessage{MessageId: id, Body: `{"job_id":"` + j.ID + `","attempt":1}`})
	}
	s.table.SetIf("UpdateItem", "list_append", testenv.Unavailable) // RecordAttempt
	resp, err := h(invocation(t), ev)
	if err != nil || len(resp.BatchItemFailures) != 2 {
		t.Fatalf("%+v, %v; want both messages reported", resp, err)
	}
	if posts.Load() != 2 {
		t.Errorf("%d POSTs; want both attempts made", posts.Load())
	}
	for _, r := range ev.Records {
		id := strings.TrimSuffix(strings.TrimPrefix(r.Body, `{"job_id":"`), `","attempt":1}`)
		if d, err := deliveriesdb.New(s.store).Delivery(context.Background(), id); err != nil || len(d.Attempts) != 0 {
			t.Errorf("%s: %+v, %v; want no attempt recorded", id, d, err)
		}
	}
}

// A sweep that cannot read the dead-letter queue goes on with the rest of
// its pass (a queued job's lost message is sent again) and fails, so that
// the run is seen and the next one drains the queue.
func TestASweepGoesOnPastWhatFailsAndReportsIt(t *testing.T) {
	s := newStack(t)
	j := s.queuedJob("")
	s.d.Clock = &clock.Fixed{T: j.CreatedAt.Add(3 * time.Minute)} // no worker took it for 2 minutes
	h := s.handler(app.Function{Schedule: sweeperfn.Build}).Schedule
	s.queues.Set("ReceiveMessage", testenv.Unavailable)
	if err := h(invocation(t), events.EventBridgeEvent{}); !fault.IsUnavailable(err) {
		t.Fatalf("%v; want the run to fail with the outage", err)
	}
	if stored, err := s.store.Job(context.Background(), j.ID); err != nil || stored.EnqueuedAt == nil {
		t.Fatalf("%+v, %v; want the job's message sent again", stored, err)
	}
	out, err := testenv.SQS(t).ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(s.d.Queues.Jobs), MaxNumberOfMessages: 10,
	})
	if err != nil || len(out.Messages) != 1 || !strings.Contains(aws.ToString(out.Messages[0].Body), j.ID) {
		t.Errorf("jobs queue: %+v, %v; want the job's message", out, err)
	}
}

// GET /.well-known/jwks.json needs KMS's GetPublicKey once: while KMS is
// down it answers 503, and the first request after builds the document.
func TestTheJWKSAnswers503WhileKMSIsDown(t *testing.T) {
	key, err := testenv.KMS(t).CreateKey(context.Background(), &awskms.CreateKeyInput{
		KeySpec: kmstypes.KeySpecEccNistP256, KeyUsage: kmstypes.KeyUsageTypeSignVerify,
	})
	if err != nil {
		t.Fatal(err)
	}
	kms := testenv.NewFaults(t, testenv.MotoEndpoint())
	d, err := app.Config(func(k string) string { return map[string]string{"SIGNING_KEY_ID": *key.KeyMetadata.Arn}[k] })
	if err != nil {
		t.Fatal(err)
	}
	d.AWS = emulator.MotoConfig(kms.URL)
	d.Log = slog.New(slog.NewJSONHandler(io.Discard, nil))
	s := &stack{t: t, d: d}
	h := s.build(jwksfn.Build)
	kms.Set("GetPublicKey", testenv.Unavailable)
	want503(t, "KMS down", s.call(h, lambdaTimeout, "GET", "/.well-known/jwks.json", "", ""))
	if n := kms.Failed("GetPublicKey"); n != 3 {
		t.Errorf("%d GetPublicKey calls failed; want the Requests profile's 3 attempts", n)
	}
	kms.Clear()
	out := s.call(h, lambdaTimeout, "GET", "/.well-known/jwks.json", "", "")
	if out.StatusCode != 200 || !strings.Contains(out.Body, `"kty":"EC"`) {
		t.Errorf("KMS back: %d %s; want the keys", out.StatusCode, out.Body)
	}
}
