package triggers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"genjobs/infra/local/sam"
	"genjobs/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// patience bounds every wait of these tests: generous, so a slow machine
// does not fail them, and reached only when the behaviour is wrong.
const patience = 20 * time.Second

func parse(t testing.TB, text string) *sam.Template {
	t.Helper()
	tpl, err := sam.Parse([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return tpl
}

// createQueues creates every AWS::SQS::Queue of the template on fauxqs, with
// its VisibilityTimeout and RedrivePolicy, under fresh names, deleted when
// the test ends; it returns their URLs by logical id.
func createQueues(t testing.TB, tpl *sam.Template) map[string]string {
	t.Helper()
	ctx := context.Background()
	client := testenv.SQS(t)
	var ids []string
	for id, r := range tpl.Resources {
		if r.Type == "AWS::SQS::Queue" {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	urls := map[string]string{}
	var create func(id string) string
	create = func(id string) string {
		if url, ok := urls[id]; ok {
			return url
		}
		q, err := tpl.Queue(id)
		if err != nil {
			t.Fatal(err)
		}
		attrs := map[string]string{"VisibilityTimeout": strconv.Itoa(q.VisibilityTimeout)}
		if rp := q.RedrivePolicy; rp != nil {
			arn, err := QueueARN(ctx, client, create(rp.DeadLetterQueue))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(map[string]any{"deadLetterTargetArn": arn, "maxReceiveCount": rp.MaxReceiveCount})
			attrs["RedrivePolicy"] = string(b)
		}
		out, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(testenv.UniqueName(t, id)), Attributes: attrs})
		if err != nil {
			t.Fatalf("create queue %s: %v", id, err)
		}
		urls[id] = *out.QueueUrl
		t.Cleanup(func() {
			_, _ = client.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: out.QueueUrl})
		})
		return *out.QueueUrl
	}
	for _, id := range ids {
		create(id)
	}
	return urls
}

func resolver(urls map[string]string) func(string) (string, error) {
	return func(id string) (string, error) {
		if u, ok := urls[id]; ok {
			return u, nil
		}
		return "", fmt.Errorf("no local queue %s", id)
	}
}

// send puts bodies on the queue, in order, in batches of ten, and returns
// their message ids by body.
func send(t *testing.T, url string, bodies ...string) map[string]string {
	t.Helper()
	ids := map[string]string{}
	for start := 0; start < len(bodies); start += 10 {
		chunk := bodies[start:min(start+10, len(bodies))]
		var entries []types.SendMessageBatchRequestEntry
		for i, b := range chunk {
			entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(b)})
		}
		out, err := testenv.SQS(t).SendMessageBatch(context.Background(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
		if err != nil || len(out.Failed) > 0 {
			t.Fatalf("send: %v %+v", err, out)
		}
		for _, s := range out.Successful {
			i, _ := strconv.Atoi(*s.Id)
			ids[chunk[i]] = *s.MessageId
		}
	}
	return ids
}

// remaining counts the messages still on the queue, visible or not: those
// no one has deleted.
func remaining(t *testing.T, url string) int {
	t.Helper()
	out, err := testenv.SQS(t).GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url),
		AttributeNames: []types.QueueAttributeName{
			types.QueueAttributeNameApproximateNumberOfMessages,
			types.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
			types.QueueAttributeNameApproximateNumberOfMessagesDelayed,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, v := range out.Attributes {
		i, _ := strconv.Atoi(v)
		n += i
	}
	return n
}

// eventually waits until cond holds, failing the test after patience.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting until %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// logBuffer collects JSON log lines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func newLog() (*slog.Logger, *logBuffer) {
	b := &logBuffer{}
	return slog.New(slog.NewJSONHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug})), b
}

// lines returns the log lines whose message contains msg.
func (b *logBuffer) lines(msg string) []map[string]any {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(b.buf.String()), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && strings.Contains(fmt.Sprint(m["msg"]), msg) {
			out = append(out, m)
		}
	}
	return out
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// run starts the template's triggers and stops them when the test ends.
func run(t testing.TB, tpl *sam.Template, handlers map[string]Handlers, o Options) *Runner {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r, err := Start(ctx, tpl, handlers, o)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		r.Wait()
	})
	return r
}
