package testenv

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"genjobs/internal/emulator"
)

func TestMain(m *testing.M) { Main(m) }

func TestEndpointsAreLoopbackURLs(t *testing.T) {
	for _, e := range []string{DynamoDBEndpoint(), SQSEndpoint()} {
		if !strings.HasPrefix(e, "http://127.0.0.1:") {
			t.Errorf("endpoint %q", e)
		}
	}
}

var validName = regexp.MustCompile(`^[A-Za-z0-9_-]{3,75}$`)

func TestUniqueName(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		n := UniqueName(t, "jobs")
		if !validName.MatchString(n) || !strings.HasPrefix(n, "jobs-TestUniqueName-") {
			t.Fatalf("name %q", n)
		}
		if seen[n] {
			t.Fatalf("name %q repeated", n)
		}
		seen[n] = true
	}
	t.Run("odd/sub test name with spaces, dots.and a very long tail that goes on and on and on", func(t *testing.T) {
		n := UniqueName(t, "a prefix that is much too long.")
		if !validName.MatchString(n) {
			t.Fatalf("name %q", n)
		}
	})
}

func TestDynamoDBLocal(t *testing.T) {
	if err := emulator.CheckDynamoDB(context.Background(), DynamoDB(t), UniqueName(t, "jobs")); err != nil {
		t.Fatal(err)
	}
}

func TestNewQueue(t *testing.T) {
	ctx := context.Background()
	q := SQS(t)
	var url string
	t.Run("use", func(t *testing.T) {
		url = NewQueue(t)
		if _, err := q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("hello")}); err != nil {
			t.Fatal(err)
		}
		got, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Messages) != 1 || *got.Messages[0].Body != "hello" {
			t.Fatalf("ReceiveMessage = %+v", got.Messages)
		}
	})
	// The subtest's cleanup has deleted its queue.
	if _, err := q.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &url}); err == nil {
		t.Fatalf("queue %s still exists after its test", url)
	}
}
