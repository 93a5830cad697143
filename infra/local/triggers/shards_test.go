package triggers

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"genjobs/infra/local/sam"
)

// DynamoDB Local rolls a stream's shard every four hours, on a timer no
// client can trigger; these tests play shards that close and open with a
// scripted stream, and stream_test.go plays the real one.

// fakeStream is a stream whose shards the test writes, closes and opens.
// DescribeStream answers one shard per page, in the order the shards were
// made; iterators are "shard/position"; GetRecords gives up to two records.
type fakeStream struct {
	mu        sync.Mutex
	arn       string
	shards    []*fakeShard
	seq       int
	expire    map[string]bool // shards whose next GetRecords finds the iterator expired
	listing   []string        // the order DescribeStream lists shards in
	iterators map[string]int  // GetShardIterator calls by shard
}

type fakeShard struct {
	id, parent string
	recs       []types.Record
	closed     bool
}

func newFakeStream() *fakeStream {
	return &fakeStream{arn: "arn:aws:dynamodb:ddblocal:000000000000:table/t/stream/fake", expire: map[string]bool{}, iterators: map[string]int{}}
}

func (f *fakeStream) shard(id string) *fakeShard {
	for _, s := range f.shards {
		if s.id == id {
			return s
		}
	}
	return nil
}

// open makes a shard; first lists it before the others.
func (f *fakeStream) open(id, parent string, first bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.shards = append(f.shards, &fakeShard{id: id, parent: parent})
	if first {
		f.listing = append([]string{id}, f.listing...)
	} else {
		f.listing = append(f.listing, id)
	}
}

// write adds records named by keys to an open shard.
func (f *fakeStream) write(id string, keys ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.shard(id)
	for _, k := range keys {
		f.seq++
		s.recs = append(s.recs, types.Record{
			EventID: aws.String(fmt.Sprint("e", f.seq)), EventName: types.OperationTypeInsert,
			EventSource: aws.String("aws:dynamodb"), EventVersion: aws.String("1.1"), AwsRegion: aws.String("ddblocal"),
			Dynamodb: &types.StreamRecord{
				ApproximateCreationDateTime: aws.Time(time.Now().Truncate(time.Minute)),
				Keys:                        map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: "JOB#" + k}},
				SequenceNumber:              aws.String(fmt.Sprintf("%021d", f.seq)),
				SizeBytes:                   aws.Int64(10), StreamViewType: types.StreamViewTypeNewAndOldImages,
			},
		})
	}
}

func (f *fakeStream) close(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.shard(id).closed = true
}

func (f *fakeStream) DescribeStream(_ context.Context, in *dynamodbstreams.DescribeStreamInput, _ ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if aws.ToString(in.StreamArn) != f.arn {
		return nil, &types.ResourceNotFoundException{Message: aws.String("no stream")}
	}
	i := 0
	if start := aws.ToString(in.ExclusiveStartShardId); start != "" {
		for i < len(f.listing) && f.listing[i] != start {
			i++
		}
		i++
	}
	desc := &types.StreamDescription{StreamArn: aws.String(f.arn), StreamStatus: types.StreamStatusEnabled}
	if i < len(f.listing) {
		s := f.shard(f.listing[i])
		sh := types.Shard{ShardId: aws.String(s.id), SequenceNumberRange: &types.SequenceNumberRange{StartingSequenceNumber: aws.String("1")}}
		if s.parent != "" {
			sh.ParentShardId = aws.String(s.parent)
		}
		if s.closed && len(s.recs) > 0 {
			sh.SequenceNumberRange.EndingSequenceNumber = s.recs[len(s.recs)-1].Dynamodb.SequenceNumber
		}
		desc.Shards = []types.Shard{sh}
		if i+1 < len(f.listing) {
			desc.LastEvaluatedShardId = aws.String(s.id)
		}
	}
	return &dynamodbstreams.DescribeStreamOutput{StreamDescription: desc}, nil
}

func (f *fakeStream) GetShardIterator(_ context.Context, in *dynamodbstreams.GetShardIteratorInput, _ ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.shard(aws.ToString(in.ShardId))
	if s == nil {
		return nil, &types.ResourceNotFoundException{Message: aws.String("no shard")}
	}
	f.iterators[s.id]++
	pos := 0
	switch in.ShardIteratorType {
	case types.ShardIteratorTypeLatest:
		pos = len(s.recs)
	case types.ShardIteratorTypeAfterSequenceNumber:
		pos = -1
		for i, r := range s.recs {
			if *r.Dynamodb.SequenceNumber == aws.ToString(in.SequenceNumber) {
				pos = i + 1
			}
		}
		if pos < 0 {
			return nil, &types.TrimmedDataAccessException{Message: aws.String("no such record")}
		}
	}
	return &dynamodbstreams.GetShardIteratorOutput{ShardIterator: aws.String(fmt.Sprint(s.id, "/", pos))}, nil
}

func (f *fakeStream) GetRecords(_ context.Context, in *dynamodbstreams.GetRecordsInput, _ ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id, p, _ := strings.Cut(aws.ToString(in.ShardIterator), "/")
	pos, _ := strconv.Atoi(p)
	if f.expire[id] {
		delete(f.expire, id)
		return nil, &types.ExpiredIteratorException{Message: aws.String("expired")}
	}
	s := f.shard(id)
	end := min(pos+2, len(s.recs))
	out := &dynamodbstreams.GetRecordsOutput{Records: append([]types.Record(nil), s.recs[pos:end]...)}
	if !s.closed || end < len(s.recs) {
		out.NextShardIterator = aws.String(fmt.Sprint(id, "/", end))
	}
	return out, nil
}

// fakePoller is a poller of the fake stream whose handler hands each
// batch's keys to the test.
func fakePoller(f *fakeStream, start string) (*StreamPoller, chan string) {
	got := make(chan string, 100)
	p := &StreamPoller{
		Function: "NotifierFunction", StreamARN: f.arn, Client: f,
		Event:    sam.DynamoDBEvent{Name: "TerminalJobs", StartingPosition: start, Batching: sam.Batching{BatchSize: 10, Enabled: true}, MaximumRetryAttempts: -1},
		IdleWait: time.Millisecond, DescribeEvery: time.Hour, // only a closed shard makes it look again
		Handler: func(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
			for _, r := range ev.Records {
				got <- strings.TrimPrefix(r.Change.Keys["PK"].String(), "JOB#")
			}
			return events.DynamoDBEventResponse{}, nil
		},
	}
	return p, got
}

func runPoller(t *testing.T, p *StreamPoller) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
}

// take waits for the next n keys delivered.
func take(t *testing.T, got chan string, n int) string {
	t.Helper()
	var out []string
	for range n {
		select {
		case k := <-got:
			out = append(out, k)
		case <-time.After(patience):
			t.Fatalf("gave up waiting after %v", out)
		}
	}
	return strings.Join(out, " ")
}

func TestStreamFollowsShardsThatCloseAndOpen(t *testing.T) {
	f := newFakeStream()
	// A closed shard and its open child, listed child first; then a shard
	// that rolls while the poller runs, twice over, and an iterator that
	// expires on the way.
	f.open("A", "", false)
	f.write("A", "a1", "a2", "a3")
	f.close("A")
	f.open("B", "A", true)
	f.write("B", "b1")
	p, got := fakePoller(f, sam.TrimHorizon)
	runPoller(t, p)
	if s := take(t, got, 4); s != "a1 a2 a3 b1" {
		t.Fatalf("delivered %s; want the parent's records, then the child's", s)
	}
	// B rolls: its last records, then it closes and C opens.
	f.write("B", "b2")
	f.close("B")
	f.open("C", "B", false)
	f.mu.Lock()
	f.expire["C"] = true
	f.mu.Unlock()
	f.write("C", "c1", "c2", "c3")
	if s := take(t, got, 4); s != "b2 c1 c2 c3" {
		t.Fatalf("delivered %s; want b2, then C's", s)
	}
	// C rolls into two children at once.
	f.close("C")
	f.open("D", "C", false)
	f.open("E", "C", false)
	f.write("D", "d1")
	f.write("E", "e1")
	if s := take(t, got, 2); s != "d1 e1" && s != "e1 d1" {
		t.Fatalf("delivered %s; want d1 and e1", s)
	}
	f.write("D", "d2")
	if s := take(t, got, 1); s != "d2" {
		t.Fatalf("delivered %s; want d2", s)
	}
	select {
	case k := <-got:
		t.Errorf("%s was delivered twice", k)
	default:
	}
	last := fmt.Sprintf("%021d", f.seq)
	eventually(t, "d2's batch is checkpointed", func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		c := p.cp.Shards["D"]
		return c != nil && c.SequenceNumber == last
	})
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, id := range []string{"A", "B", "C"} {
		if c := p.cp.Shards[id]; c == nil || !c.Done {
			t.Errorf("shard %s is not marked read to its end: %+v", id, c)
		}
	}
	if c := p.cp.Shards["D"]; c.Done {
		t.Errorf("the open shard D is marked done: %+v", c)
	}
}

func TestStreamAtLatestSkipsClosedShards(t *testing.T) {
	f := newFakeStream()
	f.open("A", "", false)
	f.write("A", "old1")
	f.close("A")
	f.open("B", "A", false)
	f.write("B", "old2")
	p, got := fakePoller(f, sam.Latest)
	runPoller(t, p)
	eventually(t, "the poller has its LATEST iterator on B", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.iterators["B"] > 0
	})
	f.write("B", "new1")
	f.close("B")
	f.open("C", "B", false)
	f.write("C", "new2")
	if s := take(t, got, 2); s != "new1 new2" {
		t.Fatalf("delivered %s; want only what came after the start, through the next shard", s)
	}
}

func TestStreamResumesEachShardAfterItsCheckpoint(t *testing.T) {
	f := newFakeStream()
	f.open("A", "", false)
	f.write("A", "a1", "a2")
	f.close("A")
	f.open("B", "A", false)
	f.write("B", "b1", "b2")
	file := t.TempDir() + "/cp.json"
	p, got := fakePoller(f, sam.TrimHorizon)
	p.CheckpointFile = file
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- p.Run(ctx) }()
	if s := take(t, got, 4); s != "a1 a2 b1 b2" {
		t.Fatalf("first run delivered %s", s)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Meanwhile B rolls over to C.
	f.write("B", "b3")
	f.close("B")
	f.open("C", "B", false)
	f.write("C", "c1")
	p2, got2 := fakePoller(f, sam.TrimHorizon)
	p2.CheckpointFile = file
	runPoller(t, p2)
	if s := take(t, got2, 2); s != "b3 c1" {
		t.Fatalf("second run delivered %s; want what came after the first", s)
	}
}
