// Package testenv gives tests real AWS emulators: DynamoDB Local, fauxqs
// (SQS and S3) and moto's server (KMS and Secrets Manager).
//
// A package using it declares
//
//	func TestMain(m *testing.M) { testenv.Main(m) }
//
// Under `go run ./infra/local exec -- go test ./...` all test binaries share
// the emulators named by GENJOBS_TEST_DYNAMODB_ENDPOINT,
// GENJOBS_TEST_SQS_ENDPOINT and GENJOBS_TEST_MOTO_ENDPOINT; without them, each test binary starts its own
// (so `go test ./internal/store` works alone, a couple of seconds slower).
// Tests never skip for want of emulators: they fail.
package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"genjobs/internal/emulator"
)

// Environment variables set by `go run ./infra/local exec`.
const (
	DynamoDBEndpointEnv = "GENJOBS_TEST_DYNAMODB_ENDPOINT"
	SQSEndpointEnv      = "GENJOBS_TEST_SQS_ENDPOINT"
	MotoEndpointEnv     = "GENJOBS_TEST_MOTO_ENDPOINT"
)

// endpoints are set once by Main, before any test runs.
var endpoints struct{ dynamodb, sqs, moto string }

// Main runs the tests against the emulators and exits; call it from TestMain.
func Main(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ddb, sq, mo := os.Getenv(DynamoDBEndpointEnv), os.Getenv(SQSEndpointEnv), os.Getenv(MotoEndpointEnv)
	if (ddb == "") != (sq == "") || (ddb == "") != (mo == "") {
		fmt.Fprintf(os.Stderr, "testenv: set all of %s, %s and %s, or none\n", DynamoDBEndpointEnv, SQSEndpointEnv, MotoEndpointEnv)
		return 2
	}
	if ddb == "" {
		stack, err := startOwn()
		if err != nil {
			fmt.Fprintf(os.Stderr, "testenv: cannot start the local emulators: %v\n", err)
			return 2
		}
		defer func() {
			if err := stack.Stop(); err != nil {
				fmt.Fprintln(os.Stderr, "testenv:", err)
			}
		}()
		ddb, sq, mo = stack.DynamoDB.Endpoint(), stack.Fauxqs.Endpoint(), stack.Moto.Endpoint()
	}
	endpoints.dynamodb, endpoints.sqs, endpoints.moto = ddb, sq, mo
	return m.Run()
}

// startOwn starts in-memory emulators for this test binary alone.
func startOwn() (*emulator.Stack, error) {
	root, err := emulator.RepoRoot()
	if err != nil {
		return nil, err
	}
	// A cold install fetches ~100 MB; later runs only start the emulators.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// Named after the test binary, e.g. .local/logs/test-store-dynamodb.log.
	name := strings.TrimSuffix(filepath.Base(os.Args[0]), ".test")
	return emulator.StartStack(ctx, emulator.StackOptions{
		RepoRoot:  root,
		LogPrefix: "test-" + name + "-",
	})
}

// DynamoDBEndpoint is the DynamoDB Local endpoint the tests use.
func DynamoDBEndpoint() string { return endpoints.dynamodb }

// SQSEndpoint is the fauxqs endpoint the tests use (SQS, and S3 path-style:
// see S3 and NewBucket).
func SQSEndpoint() string { return endpoints.sqs }

// MotoEndpoint is the endpoint of moto's server the tests use (KMS and
// Secrets Manager).
func MotoEndpoint() string { return endpoints.moto }

// endpoint is e, an emulator's endpoint Main set, failing a test whose
// package does not run under Main.
func endpoint(t testing.TB, e string) string {
	t.Helper()
	if endpoints.dynamodb == "" || endpoints.sqs == "" || endpoints.moto == "" {
		t.Fatal("testenv: no emulators; the package needs func TestMain(m *testing.M) { testenv.Main(m) }")
	}
	return e
}

// DynamoDB returns a client for the tests' DynamoDB Local.
func DynamoDB(t testing.TB) *dynamodb.Client {
	t.Helper()
	return emulator.DynamoDBClient(endpoint(t, endpoints.dynamodb))
}

// DynamoDBStreams returns a client for the streams of the tests' DynamoDB
// Local.
func DynamoDBStreams(t testing.TB) *dynamodbstreams.Client {
	t.Helper()
	return emulator.DynamoDBStreamsClient(endpoint(t, endpoints.dynamodb))
}

// SQS returns a client for the tests' fauxqs.
func SQS(t testing.TB) *sqs.Client {
	t.Helper()
	return emulator.SQSClient(endpoint(t, endpoints.sqs))
}

// S3 returns a client for the tests' fauxqs S3 (path-style, same endpoint
// as SQS).
func S3(t testing.TB) *s3.Client {
	t.Helper()
	return emulator.S3Client(endpoint(t, endpoints.sqs))
}

// KMS returns a client for the tests' moto KMS.
func KMS(t testing.TB) *kms.Client {
	t.Helper()
	return emulator.KMSClient(endpoint(t, endpoints.moto))
}

// SecretsManager returns a client for the tests' moto Secrets Manager.
func SecretsManager(t testing.TB) *secretsmanager.Client {
	t.Helper()
	return emulator.SecretsManagerClient(endpoint(t, endpoints.moto))
}

// UniqueName returns a fresh name for a table or queue of this test:
// prefix, the test's name and a random suffix, letters, digits, '-' and '_'
// only, at most 75 characters so that ".fifo" still fits an SQS name.
// Emulators are shared by all test binaries of a run, so names must never
// repeat.
func UniqueName(t testing.TB, prefix string) string {
	t.Helper()
	if prefix == "" {
		prefix = "t"
	}
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return clean(prefix, 16) + "-" + clean(t.Name(), 44) + "-" + hex.EncodeToString(b[:])
}

// clean keeps [A-Za-z0-9_-], turning anything else into '_', within max bytes.
func clean(s string, max int) string {
	out := []byte(s)
	for i, c := range out {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			out[i] = '_'
		}
	}
	if len(out) > max {
		out = out[:max]
	}
	return string(out)
}

// NewQueue creates a fresh standard queue on fauxqs, deleted when the test
// ends, and returns its URL.
func NewQueue(t testing.TB) (url string) {
	t.Helper()
	client := SQS(t)
	out, err := client.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(UniqueName(t, "q"))})
	if err != nil {
		t.Fatalf("testenv: create queue: %v", err)
	}
	t.Cleanup(func() {
		if _, err := client.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: out.QueueUrl}); err != nil {
			t.Errorf("testenv: delete queue %s: %v", *out.QueueUrl, err)
		}
	})
	return *out.QueueUrl
}

// NewBucket creates a fresh, empty bucket on fauxqs, emptied and deleted when
// the test ends, and returns its name. Bucket names allow only lower-case
// letters, digits and '-' within 63 characters, so the test's name is
// lower-cased and cut shorter than UniqueName's.
func NewBucket(t testing.TB) string {
	t.Helper()
	client := S3(t)
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	name := strings.ToLower(clean(t.Name(), 40))
	name = "b-" + strings.Trim(strings.ReplaceAll(name, "_", "-"), "-") + "-" + hex.EncodeToString(b[:])
	ctx := context.Background()
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatalf("testenv: create bucket %s: %v", name, err)
	}
	t.Cleanup(func() {
		p := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{Bucket: aws.String(name)})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				t.Errorf("testenv: list bucket %s: %v", name, err)
				return
			}
			for _, o := range page.Contents {
				if _, err := client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(name), Key: o.Key}); err != nil {
					t.Errorf("testenv: delete s3://%s/%s: %v", name, aws.ToString(o.Key), err)
				}
			}
		}
		if _, err := client.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(name)}); err != nil {
			t.Errorf("testenv: delete bucket %s: %v", name, err)
		}
	})
	return name
}
