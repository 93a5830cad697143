package triggers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"genjobs/infra/local/sam"
	"genjobs/internal/emulator"
)

// StreamHandler is a Lambda handler for DynamoDB stream events.
type StreamHandler func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error)

// StreamsClient is what a StreamPoller reads a stream with; a
// *dynamodbstreams.Client is one.
type StreamsClient interface {
	DescribeStream(context.Context, *dynamodbstreams.DescribeStreamInput, ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error)
	GetShardIterator(context.Context, *dynamodbstreams.GetShardIteratorInput, ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error)
	GetRecords(context.Context, *dynamodbstreams.GetRecordsInput, ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error)
}

// Defaults of a StreamPoller.
const (
	// DefaultStreamIdleWait is the pause after a GetRecords that found
	// nothing on an open shard: short, so that a write reaches the handler
	// within tens of milliseconds (Lambda polls a shard four times a
	// second), yet a few dozen cheap calls a second on an idle stack.
	DefaultStreamIdleWait = 20 * time.Millisecond
	// DefaultStreamRetryDelay is the wait before a failed batch is first
	// retried; it doubles with each retry, up to MaxStreamRetryDelay.
	DefaultStreamRetryDelay = 100 * time.Millisecond
	// MaxStreamRetryDelay bounds the wait between retries of a batch.
	MaxStreamRetryDelay = 10 * time.Second
	// DefaultDescribeEvery is how often the poller lists the stream's shards
	// besides when one ends (a closed shard's children show up then).
	DefaultDescribeEvery = 10 * time.Second
)

// creationPrecision is how far DynamoDB Local rounds a record's
// ApproximateCreationDateTime down: to the minute.
const creationPrecision = time.Minute

// On-failure conditions of a discarded batch, as Lambda writes them.
const (
	ConditionRetryAttemptsExhausted = "RetryAttemptsExhausted"
	ConditionRecordAgeExceeded      = "RecordAgeExceeded"
)

// StreamPoller plays one DynamoDB stream event source mapping: it reads the
// table's stream shard by shard and invokes the function with batches of
// the records that pass the mapping's filters, as Lambda does.
//
//   - Shards: DescribeStream (every page) lists them; each is read in order
//     from its start position, a child only once its parent is read to the
//     end, and a closed shard's children are looked for at once. With
//     StartingPosition LATEST the shards open at start are read from their
//     end and the closed ones skipped; shards that open later, and every
//     shard with TRIM_HORIZON, are read from their first record.
//   - Filters: a record that matches none of Event.Filters is dropped, its
//     position passed.
//   - Batches: up to BatchSize records of one shard, gathered for at most
//     MaximumBatchingWindow; one batch per shard in flight, shards in
//     parallel.
//   - The handler runs under a context that ends at the function's
//     timeout; an invocation past it is abandoned and counts as an error.
//   - An error (a returned error, a panic, the timeout, or, with
//     ReportBatchItemFailures, an itemIdentifier that is empty or not a
//     sequence number of the batch) fails the batch. With
//     BisectBatchOnFunctionError the batch is split in two and each half
//     retried in turn (a split is not a retry); else it is retried whole.
//   - With ReportBatchItemFailures, failures listed by SequenceNumber
//     checkpoint the records before the lowest one and retry from it; that
//     counts as a retry.
//   - After MaximumRetryAttempts retries, or when records are older than
//     MaximumRecordAge before an invocation, the records are discarded: the
//     on-failure destination (an SQS queue) gets Lambda's invocation record
//     (OnFailureRecord, with DDBStreamBatchInfo, not the records), and the
//     poller moves on.
//
// The position reached on each shard (the checkpoint) is kept in
// CheckpointFile when set, so that a new run resumes after the last record
// handled: a batch in flight when the poller stopped is delivered again, as
// Lambda may. Without a file a new poller starts from StartingPosition.
type StreamPoller struct {
	Function  string            // the function's logical id
	Event     sam.DynamoDBEvent // batching, retries, filters, destination
	StreamARN string            // the table's latest stream
	// Timeout is the function's timeout (FunctionTimeout); 0 means Lambda's
	// default.
	Timeout time.Duration
	Handler StreamHandler
	Client  StreamsClient
	// SQS and DestinationURL are the on-failure destination's client and
	// queue URL, needed when Event.OnFailure is set.
	SQS            *sqs.Client
	DestinationURL string
	// IdleWait, RetryDelay and DescribeEvery default to
	// DefaultStreamIdleWait, DefaultStreamRetryDelay and
	// DefaultDescribeEvery.
	IdleWait      time.Duration
	RetryDelay    time.Duration
	DescribeEvery time.Duration
	// CheckpointFile keeps the checkpoints across runs; "" keeps them in
	// memory only.
	CheckpointFile string
	// Now is the clock records' ages are measured with; nil means
	// time.Now.
	Now func() time.Time
	Log *slog.Logger

	mu      sync.Mutex
	cp      checkpoints
	filters []*filter
}

// checkpoints are a mapping's positions, as kept in its CheckpointFile.
type checkpoints struct {
	StreamARN string                      `json:"stream_arn"`
	Shards    map[string]*shardCheckpoint `json:"shards"`
}

type shardCheckpoint struct {
	// SequenceNumber is the last record handled: delivered, dropped by the
	// filters or discarded.
	SequenceNumber string `json:"sequence_number,omitempty"`
	// Done: the shard is closed and read to its end, or was skipped.
	Done bool `json:"done,omitempty"`
	// Latest: read from LATEST, nothing handled yet.
	Latest bool `json:"latest,omitempty"`
}

// OnFailureRecord is what Lambda sends to a stream mapping's on-failure
// destination for each discarded batch: where the records are, not the
// records.
type OnFailureRecord struct {
	RequestContext struct {
		RequestID              string `json:"requestId"`
		FunctionARN            string `json:"functionArn"`
		Condition              string `json:"condition"`
		ApproximateInvokeCount int    `json:"approximateInvokeCount"`
	} `json:"requestContext"`
	// ResponseContext is the last invocation's; absent when the records
	// were discarded before any.
	ResponseContext *struct {
		StatusCode      int    `json:"statusCode"`
		ExecutedVersion string `json:"executedVersion"`
		FunctionError   string `json:"functionError,omitempty"`
	} `json:"responseContext,omitempty"`
	Version            string             `json:"version"`
	Timestamp          string             `json:"timestamp"`
	DDBStreamBatchInfo DDBStreamBatchInfo `json:"DDBStreamBatchInfo"`
}

// DDBStreamBatchInfo locates a discarded batch in the stream.
type DDBStreamBatchInfo struct {
	ShardID                         string `json:"shardId"`
	StartSequenceNumber             string `json:"startSequenceNumber"`
	EndSequenceNumber               string `json:"endSequenceNumber"`
	ApproximateArrivalOfFirstRecord string `json:"approximateArrivalOfFirstRecord"`
	ApproximateArrivalOfLastRecord  string `json:"approximateArrivalOfLastRecord"`
	BatchSize                       int    `json:"batchSize"`
	StreamARN                       string `json:"streamArn"`
}

// Run reads the stream until ctx is cancelled and the invocation in flight
// on each shard has ended. It returns an error only for a poller it cannot
// start.
func (p *StreamPoller) Run(ctx context.Context) error {
	if p.Handler == nil || p.Client == nil || p.StreamARN == "" {
		return fmt.Errorf("%s event %s: the stream poller needs a handler, a client and a stream ARN", p.Function, p.Event.Name)
	}
	if p.Event.OnFailure != "" && (p.SQS == nil || p.DestinationURL == "") {
		return fmt.Errorf("%s event %s: the on-failure destination %s needs an SQS client and a queue URL", p.Function, p.Event.Name, p.Event.OnFailure)
	}
	filters, err := compileFilters(p.Event.Filters)
	if err != nil {
		return fmt.Errorf("%s event %s: %w", p.Function, p.Event.Name, err)
	}
	p.filters = filters
	if err := p.loadCheckpoints(); err != nil {
		return fmt.Errorf("%s event %s: %w", p.Function, p.Event.Name, err)
	}
	p.follow(ctx)
	return nil
}

func (p *StreamPoller) log() *slog.Logger {
	l := p.Log
	if l == nil {
		l = slog.Default()
	}
	return l.With("function", p.Function, "event", p.Event.Name)
}

func (p *StreamPoller) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// position is where a shard's reading starts.
type position struct {
	typ types.ShardIteratorType
	seq string // for AfterSequenceNumber
}

// follow finds the shards and reads each in a goroutine of its own, parents
// before children, until ctx ends and every reader has stopped.
func (p *StreamPoller) follow(ctx context.Context) {
	p.mu.Lock()
	resumed := len(p.cp.Shards) > 0
	p.mu.Unlock()
	first := true
	running := map[string]bool{}
	finished := make(chan string)
	var wg sync.WaitGroup
	defer wg.Wait()
	tick := time.NewTicker(orDefault(p.DescribeEvery, DefaultDescribeEvery))
	defer tick.Stop()
	warned := false
	for {
		shards, err := p.describe(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			if !warned {
				p.log().Warn("DescribeStream failed; retrying", "stream_arn", p.StreamARN, "error", err.Error())
				warned = true
			}
		case err == nil:
			warned = false
			for _, start := range p.startable(shards, running, first, resumed) {
				running[start.id] = true
				wg.Go(func() {
					if p.readShard(ctx, start.id, start.pos) {
						select {
						case finished <- start.id:
						case <-ctx.Done():
						}
					}
				})
			}
			first = false
		}
		select {
		case <-ctx.Done():
			return
		case id := <-finished:
			delete(running, id)
		case <-tick.C:
		}
	}
}

type shardStart struct {
	id  string
	pos position
}

// startable picks the shards to start reading now, with their positions,
// and marks the shards to skip as done.
func (p *StreamPoller) startable(shards []types.Shard, running map[string]bool, first, resumed bool) []shardStart {
	p.mu.Lock()
	defer p.mu.Unlock()
	listed := map[string]bool{}
	for _, s := range shards {
		listed[aws.ToString(s.ShardId)] = true
	}
	var out []shardStart
	for changed := true; changed; {
		changed = false
		for _, s := range shards {
			id := aws.ToString(s.ShardId)
			c := p.cp.Shards[id]
			if running[id] || c != nil && c.Done || started(out, id) {
				continue
			}
			if parent := aws.ToString(s.ParentShardId); parent != "" && listed[parent] {
				if pc := p.cp.Shards[parent]; pc == nil || !pc.Done {
					continue // its parent's records come first
				}
			}
			var pos position
			closed := s.SequenceNumberRange != nil && s.SequenceNumberRange.EndingSequenceNumber != nil
			switch {
			case c != nil && c.SequenceNumber != "":
				pos = position{types.ShardIteratorTypeAfterSequenceNumber, c.SequenceNumber}
			case c != nil && c.Latest:
				pos = position{typ: types.ShardIteratorTypeLatest}
			case first && !resumed && p.Event.StartingPosition == sam.Latest && closed:
				p.cp.Shards[id] = &shardCheckpoint{Done: true}
				p.saveLocked()
				changed = true
				continue
			case first && !resumed && p.Event.StartingPosition == sam.Latest:
				pos = position{typ: types.ShardIteratorTypeLatest}
				p.cp.Shards[id] = &shardCheckpoint{Latest: true}
				p.saveLocked()
			default:
				pos = position{typ: types.ShardIteratorTypeTrimHorizon}
			}
			out = append(out, shardStart{id, pos})
		}
	}
	return out
}

func started(starts []shardStart, id string) bool {
	for _, s := range starts {
		if s.id == id {
			return true
		}
	}
	return false
}

// describe lists every shard of the stream, page by page.
func (p *StreamPoller) describe(ctx context.Context) ([]types.Shard, error) {
	var shards []types.Shard
	var after *string
	for {
		out, err := p.Client.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(p.StreamARN), ExclusiveStartShardId: after})
		if err != nil {
			return nil, err
		}
		if out.StreamDescription == nil {
			return shards, nil
		}
		shards = append(shards, out.StreamDescription.Shards...)
		after = out.StreamDescription.LastEvaluatedShardId
		if after == nil {
			return shards, nil
		}
	}
}

// pending is a record read from the shard, waiting for its invocation.
type pending struct {
	rec    events.DynamoDBEventRecord
	readAt time.Time
}

func (r pending) seq() string { return r.rec.Change.SequenceNumber }

// created is the latest time the record can have been written: DynamoDB
// Local rounds ApproximateCreationDateTime down to the minute, so its age is
// counted from the end of that minute, or from when it was read if sooner.
func (r pending) created() time.Time {
	t := r.rec.Change.ApproximateCreationDateTime.Add(creationPrecision)
	if r.readAt.Before(t) {
		return r.readAt
	}
	return t
}

// readShard reads one shard from pos and delivers its records in order.
// It returns true once the shard is closed and every record of it handled,
// false when ctx ended first.
func (p *StreamPoller) readShard(ctx context.Context, shardID string, pos position) bool {
	log := p.log().With("shard_id", shardID)
	iter, gone := p.iterator(ctx, shardID, &pos)
	if gone {
		p.markDone(shardID)
		return true
	}
	if iter == nil {
		return false // ctx ended
	}
	lastRead := pos.seq
	var buf []pending
	open := true
	var windowStart time.Time
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		got := 0
		if open && len(buf) < p.Event.BatchSize {
			out, err := p.Client.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter})
			var expired *types.ExpiredIteratorException
			var trimmed *types.TrimmedDataAccessException
			var notFound *types.ResourceNotFoundException
			switch {
			case err == nil:
				backoff = 100 * time.Millisecond
			case ctx.Err() != nil:
				return false
			case errors.As(err, &expired), errors.As(err, &trimmed):
				// An iterator lives 15 minutes (a batch retried that long
				// holds one); records live 24 hours.
				next := position{typ: types.ShardIteratorTypeAfterSequenceNumber, seq: lastRead}
				if lastRead == "" {
					next = pos
				}
				if trimmed != nil {
					// Nothing read yet from a TRIM_HORIZON start: reading
					// from the oldest kept is where we were, nothing was
					// lost (DynamoDB Local says this of a fresh shard).
					if lastRead != "" || pos.typ != types.ShardIteratorTypeTrimHorizon {
						log.Warn("records left the stream before they were read; reading from the oldest kept", "after_sequence_number", lastRead)
					}
					next = position{typ: types.ShardIteratorTypeTrimHorizon}
				}
				if iter, gone = p.iterator(ctx, shardID, &next); iter == nil && !gone {
					return false
				}
				if gone {
					open = false
				}
				continue
			case errors.As(err, &notFound):
				log.Warn("the shard is gone from the stream", "error", err.Error())
				open = false
				continue
			default:
				log.Warn("GetRecords failed; retrying", "error", err.Error(), "retry_in", backoff)
				sleep(ctx, backoff)
				backoff = min(2*backoff, 5*time.Second)
				continue
			}
			now := p.now()
			dropped := "" // the last record dropped with nothing before it waiting
			for _, r := range out.Records {
				rec, err := eventRecord(r, p.StreamARN)
				if s := rec.Change.SequenceNumber; s != "" {
					lastRead = s
				}
				if err != nil {
					log.Error("a record the runner cannot convert is skipped", "sequence_number", lastRead, "error", err.Error())
					continue
				}
				ok, err := matchAny(p.filters, rec)
				if err != nil {
					log.Error("a record the runner cannot filter is skipped", "sequence_number", lastRead, "error", err.Error())
				}
				if !ok {
					if len(buf) == 0 {
						dropped = lastRead
					}
					continue
				}
				buf = append(buf, pending{rec: rec, readAt: now})
			}
			if dropped != "" {
				p.checkpoint(shardID, dropped) // once a page, not once a record
			}
			got = len(out.Records)
			iter = out.NextShardIterator
			open = iter != nil
		}
		if len(buf) == 0 {
			if !open {
				p.markDone(shardID)
				return true
			}
			if got == 0 {
				sleep(ctx, orDefault(p.IdleWait, DefaultStreamIdleWait))
			}
			continue
		}
		if w := p.Event.MaximumBatchingWindow; w > 0 && open && len(buf) < p.Event.BatchSize {
			if windowStart.IsZero() {
				windowStart = time.Now()
			}
			if left := w - time.Since(windowStart); left > 0 {
				if got == 0 {
					sleep(ctx, min(left, orDefault(p.IdleWait, DefaultStreamIdleWait)))
				}
				continue
			}
		}
		n := min(len(buf), p.Event.BatchSize)
		if !p.deliver(ctx, shardID, buf[:n]) {
			return false
		}
		buf = buf[n:]
		windowStart = time.Time{}
		if len(buf) == 0 && lastRead != "" {
			p.checkpoint(shardID, lastRead)
		}
	}
	return false
}

// iterator gets a shard iterator at *pos, retrying until ctx ends. A
// checkpoint whose record has left the stream falls back to TRIM_HORIZON
// (pos is updated). gone reports a shard no longer in the stream.
func (p *StreamPoller) iterator(ctx context.Context, shardID string, pos *position) (iter *string, gone bool) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		in := &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(p.StreamARN), ShardId: aws.String(shardID), ShardIteratorType: pos.typ}
		if pos.typ == types.ShardIteratorTypeAfterSequenceNumber {
			in.SequenceNumber = aws.String(pos.seq)
		}
		out, err := p.Client.GetShardIterator(ctx, in)
		var trimmed *types.TrimmedDataAccessException
		var notFound *types.ResourceNotFoundException
		switch {
		case err == nil:
			return out.ShardIterator, out.ShardIterator == nil
		case ctx.Err() != nil:
			return nil, false
		case errors.As(err, &trimmed) && pos.typ != types.ShardIteratorTypeTrimHorizon:
			p.log().Warn("the checkpoint's record has left the stream (24 h); reading the shard from the oldest record kept", "shard_id", shardID, "sequence_number", pos.seq)
			*pos = position{typ: types.ShardIteratorTypeTrimHorizon}
		case errors.As(err, &notFound):
			p.log().Warn("the shard is gone from the stream", "shard_id", shardID, "error", err.Error())
			return nil, true
		default:
			p.log().Warn("GetShardIterator failed; retrying", "shard_id", shardID, "error", err.Error(), "retry_in", backoff)
			sleep(ctx, backoff)
			backoff = min(2*backoff, 5*time.Second)
		}
	}
	return nil, false
}

// part is records of a batch on their way through retries and splits.
type part struct {
	recs          []pending
	retries       int // retries used (splits are not retries)
	invokes       int // invocations that carried these records
	requestID     string
	functionError bool // the last invocation failed, rather than reported items
}

// deliver invokes the function with one batch until every record of it is
// handled or discarded. It returns false when ctx ended first.
func (p *StreamPoller) deliver(ctx context.Context, shardID string, batch []pending) bool {
	log := p.log().With("shard_id", shardID)
	timeout := orDefault(p.Timeout, DefaultTimeout)
	work := []*part{{recs: batch}}
	for len(work) > 0 {
		if ctx.Err() != nil {
			return false
		}
		w := work[0]
		if age := p.Event.MaximumRecordAge; age > 0 {
			now := p.now()
			n := 0
			for n < len(w.recs) && now.Sub(w.recs[n].created()) > age {
				n++
			}
			if n > 0 {
				p.discard(ctx, shardID, w, w.recs[:n], ConditionRecordAgeExceeded)
				w.recs = w.recs[n:]
			}
			if len(w.recs) == 0 {
				work = work[1:]
				continue
			}
		}
		ev := events.DynamoDBEvent{Records: make([]events.DynamoDBEventRecord, len(w.recs))}
		for i, r := range w.recs {
			ev.Records[i] = r.rec
		}
		resp, inv, err := invoke(ctx, p.Function, emulator.Region, timeout, func(ctx context.Context) (events.DynamoDBEventResponse, error) {
			return p.Handler(ctx, ev)
		})
		w.invokes++
		w.requestID = inv.RequestID
		seqs := sequenceNumbers(w.recs)
		if err == nil && p.Event.ReportsBatchItemFailures() && len(resp.BatchItemFailures) > 0 {
			first, bad := lowestFailure(w.recs, resp.BatchItemFailures)
			if bad != "" {
				err = fmt.Errorf("batchItemFailures names %q, which is not a sequence number of the batch: the whole batch failed, as in Lambda", bad)
			} else {
				if first > 0 {
					p.checkpoint(shardID, w.recs[first-1].seq())
				}
				w.recs, w.retries, w.functionError = w.recs[first:], w.retries+1, false
				if p.exhausted(w.retries) {
					p.discard(ctx, shardID, w, w.recs, ConditionRetryAttemptsExhausted)
					work = work[1:]
					continue
				}
				log.Warn("batch items failed; retrying from the first of them", "request_id", inv.RequestID, "sequence_numbers", seqs, "retry_from", w.recs[0].seq(), "retry", w.retries)
				sleep(ctx, p.retryDelay(w.retries))
				continue
			}
		}
		if err != nil {
			w.functionError = true
			msg := "invocation failed"
			if errors.Is(err, ErrAbandoned) {
				msg = "invocation abandoned at the function's timeout"
			}
			if p.Event.BisectBatchOnFunctionError && len(w.recs) > 1 {
				half := len(w.recs) / 2
				a := &part{recs: w.recs[:half], retries: w.retries, invokes: w.invokes, requestID: w.requestID, functionError: true}
				b := &part{recs: w.recs[half:], retries: w.retries, invokes: w.invokes, requestID: w.requestID, functionError: true}
				work = append([]*part{a, b}, work[1:]...)
				log.Warn(msg+"; the batch is split in two", "request_id", inv.RequestID, "sequence_numbers", seqs, "error", err.Error())
				continue
			}
			w.retries++
			if p.exhausted(w.retries) {
				log.Warn(msg, "request_id", inv.RequestID, "sequence_numbers", seqs, "error", err.Error())
				p.discard(ctx, shardID, w, w.recs, ConditionRetryAttemptsExhausted)
				work = work[1:]
				continue
			}
			log.Warn(msg+"; the batch will be retried", "request_id", inv.RequestID, "sequence_numbers", seqs, "error", err.Error(), "retry", w.retries)
			sleep(ctx, p.retryDelay(w.retries))
			continue
		}
		p.checkpoint(shardID, w.recs[len(w.recs)-1].seq())
		work = work[1:]
	}
	return true
}

// exhausted tells whether a part has used up its retries.
func (p *StreamPoller) exhausted(retries int) bool {
	return p.Event.MaximumRetryAttempts >= 0 && retries > p.Event.MaximumRetryAttempts
}

func (p *StreamPoller) retryDelay(retry int) time.Duration {
	d := orDefault(p.RetryDelay, DefaultStreamRetryDelay)
	for i := 1; i < retry && d < MaxStreamRetryDelay; i++ {
		d *= 2
	}
	return min(d, MaxStreamRetryDelay)
}

// lowestFailure finds the batch's first record named in failures, or the
// identifier that names none of them.
func lowestFailure(recs []pending, failures []events.DynamoDBBatchItemFailure) (first int, bad string) {
	index := make(map[string]int, len(recs))
	for i, r := range recs {
		index[r.seq()] = i
	}
	first = len(recs)
	for _, f := range failures {
		i, ok := index[f.ItemIdentifier]
		if !ok {
			if f.ItemIdentifier == "" {
				return 0, `""`
			}
			return 0, f.ItemIdentifier
		}
		first = min(first, i)
	}
	return first, ""
}

// discard gives up on recs, records of part w: the on-failure destination
// gets Lambda's record of them, and the shard's checkpoint passes them.
func (p *StreamPoller) discard(ctx context.Context, shardID string, w *part, recs []pending, condition string) {
	log := p.log().With("shard_id", shardID)
	rec := p.failureRecord(shardID, w, recs, condition)
	seqs := sequenceNumbers(recs)
	if p.Event.OnFailure == "" {
		log.Error("records discarded; the mapping has no on-failure destination", "condition", condition, "sequence_numbers", seqs)
	} else {
		body, _ := json.Marshal(rec)
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		_, err := p.SQS.SendMessage(sctx, &sqs.SendMessageInput{QueueUrl: aws.String(p.DestinationURL), MessageBody: aws.String(string(body))})
		cancel()
		if err != nil {
			log.Error("records discarded, and their record could not be sent to the on-failure destination", "condition", condition, "sequence_numbers", seqs, "destination", p.Event.OnFailure, "error", err.Error())
		} else {
			log.Warn("records discarded; their record is on the on-failure destination", "condition", condition, "sequence_numbers", seqs, "destination", p.Event.OnFailure)
		}
	}
	p.checkpoint(shardID, recs[len(recs)-1].seq())
}

func (p *StreamPoller) failureRecord(shardID string, w *part, recs []pending, condition string) OnFailureRecord {
	var r OnFailureRecord
	r.RequestContext.RequestID = w.requestID
	if r.RequestContext.RequestID == "" {
		r.RequestContext.RequestID = newRequestID()
	}
	r.RequestContext.FunctionARN = fmt.Sprintf("arn:aws:lambda:%s:%s:function:%s", emulator.Region, localAccount, p.Function)
	r.RequestContext.Condition = condition
	r.RequestContext.ApproximateInvokeCount = w.invokes
	if w.invokes > 0 {
		r.ResponseContext = &struct {
			StatusCode      int    `json:"statusCode"`
			ExecutedVersion string `json:"executedVersion"`
			FunctionError   string `json:"functionError,omitempty"`
		}{StatusCode: 200, ExecutedVersion: "$LATEST"}
		if w.functionError {
			r.ResponseContext.FunctionError = "Unhandled"
		}
	}
	r.Version = "1.0"
	r.Timestamp = p.now().UTC().Format("2006-01-02T15:04:05.000Z")
	first, last := recs[0].rec.Change, recs[len(recs)-1].rec.Change
	r.DDBStreamBatchInfo = DDBStreamBatchInfo{
		ShardID:                         shardID,
		StartSequenceNumber:             first.SequenceNumber,
		EndSequenceNumber:               last.SequenceNumber,
		ApproximateArrivalOfFirstRecord: first.ApproximateCreationDateTime.UTC().Format(time.RFC3339),
		ApproximateArrivalOfLastRecord:  last.ApproximateCreationDateTime.UTC().Format(time.RFC3339),
		BatchSize:                       len(recs),
		StreamARN:                       p.StreamARN,
	}
	return r
}

func sequenceNumbers(recs []pending) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.seq()
	}
	return out
}

// checkpoint records that the shard is handled up to seq.
func (p *StreamPoller) checkpoint(shardID, seq string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.cp.Shards[shardID]
	if c == nil {
		c = &shardCheckpoint{}
		p.cp.Shards[shardID] = c
	}
	if c.SequenceNumber != "" && compareSequenceNumbers(seq, c.SequenceNumber) <= 0 {
		return
	}
	c.SequenceNumber, c.Latest = seq, false
	p.saveLocked()
}

func (p *StreamPoller) markDone(shardID string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.cp.Shards[shardID]
	if c == nil {
		c = &shardCheckpoint{}
		p.cp.Shards[shardID] = c
	}
	c.Done, c.Latest = true, false
	p.saveLocked()
}

// compareSequenceNumbers orders two sequence numbers (decimal strings of
// up to 40 digits).
func compareSequenceNumbers(a, b string) int {
	a, b = strings.TrimLeft(a, "0"), strings.TrimLeft(b, "0")
	if len(a) != len(b) {
		if len(a) < len(b) {
			return -1
		}
		return 1
	}
	return strings.Compare(a, b)
}

// loadCheckpoints reads CheckpointFile; a file of another stream (a table
// made anew) is ignored.
func (p *StreamPoller) loadCheckpoints() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cp = checkpoints{StreamARN: p.StreamARN, Shards: map[string]*shardCheckpoint{}}
	if p.CheckpointFile == "" {
		return nil
	}
	b, err := os.ReadFile(p.CheckpointFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var cp checkpoints
	if err := json.Unmarshal(b, &cp); err != nil {
		p.log().Warn("the checkpoint file is unreadable; starting from StartingPosition", "file", p.CheckpointFile, "error", err.Error())
		return nil
	}
	if cp.StreamARN != p.StreamARN || cp.Shards == nil {
		p.log().Info("the checkpoint file is of another stream; starting from StartingPosition", "file", p.CheckpointFile, "its_stream", cp.StreamARN)
		return nil
	}
	p.cp = cp
	return nil
}

// saveLocked writes the checkpoints to CheckpointFile, if any, in one
// rename; p.mu is held.
func (p *StreamPoller) saveLocked() {
	if p.CheckpointFile == "" {
		return
	}
	b, _ := json.MarshalIndent(p.cp, "", "  ")
	tmp := p.CheckpointFile + ".tmp"
	err := os.MkdirAll(filepath.Dir(p.CheckpointFile), 0o755)
	if err == nil {
		err = os.WriteFile(tmp, b, 0o644)
	}
	if err == nil {
		err = os.Rename(tmp, p.CheckpointFile)
	}
	if err != nil {
		p.log().Error("the checkpoint could not be saved; a restart may deliver records again", "file", p.CheckpointFile, "error", err.Error())
	}
}

// eventRecord turns a stream record into the record Lambda delivers.
func eventRecord(r types.Record, streamARN string) (events.DynamoDBEventRecord, error) {
	out := events.DynamoDBEventRecord{
		AWSRegion:      aws.ToString(r.AwsRegion),
		EventID:        aws.ToString(r.EventID),
		EventName:      string(r.EventName),
		EventSource:    aws.ToString(r.EventSource),
		EventVersion:   aws.ToString(r.EventVersion),
		EventSourceArn: streamARN,
	}
	if r.UserIdentity != nil {
		out.UserIdentity = &events.DynamoDBUserIdentity{Type: aws.ToString(r.UserIdentity.Type), PrincipalID: aws.ToString(r.UserIdentity.PrincipalId)}
	}
	d := r.Dynamodb
	if d == nil {
		return out, errors.New("the record has no dynamodb part")
	}
	out.Change = events.DynamoDBStreamRecord{
		SequenceNumber: aws.ToString(d.SequenceNumber),
		SizeBytes:      aws.ToInt64(d.SizeBytes),
		StreamViewType: string(d.StreamViewType),
	}
	if d.ApproximateCreationDateTime != nil {
		out.Change.ApproximateCreationDateTime = events.SecondsEpochTime{Time: *d.ApproximateCreationDateTime}
	}
	var err error
	if out.Change.Keys, err = attributeMap(d.Keys); err != nil {
		return out, fmt.Errorf("keys: %w", err)
	}
	if out.Change.NewImage, err = attributeMap(d.NewImage); err != nil {
		return out, fmt.Errorf("new image: %w", err)
	}
	if out.Change.OldImage, err = attributeMap(d.OldImage); err != nil {
		return out, fmt.Errorf("old image: %w", err)
	}
	return out, nil
}

func attributeMap(m map[string]types.AttributeValue) (map[string]events.DynamoDBAttributeValue, error) {
	if m == nil {
		return nil, nil
	}
	out := make(map[string]events.DynamoDBAttributeValue, len(m))
	for k, v := range m {
		av, err := attribute(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		out[k] = av
	}
	return out, nil
}

func attribute(v types.AttributeValue) (events.DynamoDBAttributeValue, error) {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return events.NewStringAttribute(v.Value), nil
	case *types.AttributeValueMemberN:
		return events.NewNumberAttribute(v.Value), nil
	case *types.AttributeValueMemberB:
		return events.NewBinaryAttribute(v.Value), nil
	case *types.AttributeValueMemberBOOL:
		return events.NewBooleanAttribute(v.Value), nil
	case *types.AttributeValueMemberNULL:
		return events.NewNullAttribute(), nil
	case *types.AttributeValueMemberSS:
		return events.NewStringSetAttribute(v.Value), nil
	case *types.AttributeValueMemberNS:
		return events.NewNumberSetAttribute(v.Value), nil
	case *types.AttributeValueMemberBS:
		return events.NewBinarySetAttribute(v.Value), nil
	case *types.AttributeValueMemberL:
		list := make([]events.DynamoDBAttributeValue, len(v.Value))
		for i, x := range v.Value {
			av, err := attribute(x)
			if err != nil {
				return events.DynamoDBAttributeValue{}, fmt.Errorf("[%d]: %w", i, err)
			}
			list[i] = av
		}
		return events.NewListAttribute(list), nil
	case *types.AttributeValueMemberM:
		m, err := attributeMap(v.Value)
		if err != nil {
			return events.DynamoDBAttributeValue{}, err
		}
		if m == nil {
			m = map[string]events.DynamoDBAttributeValue{}
		}
		return events.NewMapAttribute(m), nil
	}
	return events.DynamoDBAttributeValue{}, fmt.Errorf("an attribute value of unknown type %T", v)
}
