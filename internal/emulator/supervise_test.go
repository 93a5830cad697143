package emulator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	smtypes "github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// syncBuffer is a log destination safe for the supervisor's goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// records are the JSON log lines written so far.
func (s *syncBuffer) records(t *testing.T) []map[string]any {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, line := range bytes.Split(bytes.TrimSpace(s.b.Bytes()), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var r map[string]any
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, r)
	}
	return out
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting for: %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A killed DynamoDB Local comes back on its port with its data, and a
// killed fauxqs or moto comes back empty, its queues or secrets made again
// by Restarted: the clients made before the kill work on.
func TestSupervisorRestartsAKilledEmulatorOnItsPort(t *testing.T) {
	inst, logs := install(t)
	ctx := context.Background()
	ddb, err := StartDynamoDB(ctx, DynamoDBOptions{Dir: inst.DynamoDBDir, DBPath: t.TempDir(), LogFile: filepath.Join(logs, "emulator-test-dynamodb.log")})
	if err != nil {
		t.Fatal(err)
	}
	fq, err := StartFauxqs(ctx, FauxqsOptions{Script: inst.FauxqsScript, LogFile: filepath.Join(logs, "emulator-test-fauxqs.log")})
	if err != nil {
		_ = ddb.Stop()
		t.Fatal(err)
	}
	mo, err := StartMoto(ctx, MotoOptions{Python: motoPython(t), LogFile: filepath.Join(logs, "emulator-test-moto.log")})
	if err != nil {
		_, _ = ddb.Stop(), fq.Stop()
		t.Fatal(err)
	}
	db, q, sm := DynamoDBClient(ddb.Endpoint()), SQSClient(fq.Endpoint()), SecretsManagerClient(mo.Endpoint())
	// What Restarted makes again: harmless for the emulators that kept it.
	createQueueAndSecret := func(ctx context.Context) error {
		if _, err := q.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("supervised")}); err != nil {
			return err
		}
		_, err := sm.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String("supervised"), SecretString: aws.String("{}")})
		var exists *smtypes.ResourceExistsException
		if errors.As(err, &exists) {
			return nil
		}
		return err
	}
	if err := createQueueAndSecret(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String("supervised"),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
	}); err != nil {
		t.Fatal(err)
	}
	var setups atomic.Int32
	logBuf := &syncBuffer{}
	stack := &Stack{DynamoDB: ddb, Fauxqs: fq, Moto: mo}
	sup := stack.Supervise(SuperviseOptions{
		Log: slog.New(slog.NewJSONHandler(logBuf, nil)),
		Restarted: func(ctx context.Context) error {
			setups.Add(1)
			return createQueueAndSecret(ctx)
		},
	})
	defer func() {
		if err := sup.Stop(); err != nil {
			t.Error(err)
		}
		assertGroupGone(t, sup.DynamoDB.Process())
		assertGroupGone(t, sup.Fauxqs.Process())
		assertGroupGone(t, sup.Moto.Process())
	}()

	for _, s := range []*Supervisor{sup.DynamoDB, sup.Fauxqs, sup.Moto} {
		old := s.Process()
		if err := syscall.Kill(old.Pid(), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		waitFor(t, old.name+" restarted", func() bool { return s.Restarts() == 1 && setups.Load() >= 1 })
		if p := s.Process(); p.Pid() == old.Pid() || p.Endpoint() != old.Endpoint() {
			t.Errorf("%s after the kill: pid %d at %s; was pid %d at %s", old.name, p.Pid(), p.Endpoint(), old.Pid(), old.Endpoint())
		}
		setups.Store(0)
	}
	if _, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("supervised")}); err != nil {
		t.Errorf("the table after DynamoDB Local's restart: %v", err)
	}
	waitFor(t, "the queue made again after fauxqs's restart", func() bool {
		_, err := q.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("supervised")})
		return err == nil
	})
	if _, err := sm.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String("supervised")}); err != nil {
		t.Errorf("the secret made again after moto's restart: %v", err)
	}
	var exits []string
	for _, r := range logBuf.records(t) {
		if r["msg"] == "the emulator exited; restarting it on the same port" {
			exits = append(exits, r["emulator"].(string)+": "+r["exit"].(string))
		}
	}
	if want := []string{"DynamoDB Local: signal: killed", "fauxqs: signal: killed", "moto: signal: killed"}; !slices.Equal(exits, want) {
		t.Errorf("logged exits %q; want %q", exits, want)
	}
}

// An emulator that exits soon after each start is restarted after waits
// that double up to the cap, each logged, rather than at once for ever.
func TestSupervisorBacksOffACrashLoop(t *testing.T) {
	dir := t.TempDir()
	crashing := spec{
		name:    "crasher",
		path:    "/bin/sleep",
		args:    func(int) []string { return []string{"0.1"} },
		env:     func(int) []string { return nil },
		dir:     dir,
		logFile: filepath.Join(dir, "crasher.log"),
		probe:   func(context.Context, string) error { return nil }, // "answers" at once
	}
	p, err := startOnce(context.Background(), crashing, 1)
	if err != nil {
		t.Fatal(err)
	}
	logBuf := &syncBuffer{}
	s := Supervise(p, SuperviseOptions{
		Log:        slog.New(slog.NewJSONHandler(logBuf, nil)),
		MinBackoff: 20 * time.Millisecond, MaxBackoff: 80 * time.Millisecond, StableAfter: time.Hour,
	})
	waitFor(t, "six restarts", func() bool { return s.Restarts() >= 6 })
	if err := s.Stop(); err != nil && !errors.Is(err, context.Canceled) {
		t.Logf("stop: %v", err) // it may have exited by itself just before
	}
	var waits []string
	loop := false
	for _, r := range logBuf.records(t) {
		if w, ok := r["restart_in"]; ok {
			waits = append(waits, time.Duration(w.(float64)).String())
		}
		loop = loop || r["msg"] == "the emulator keeps exiting soon after it starts; restarting with backoff"
	}
	if want := []string{"0s", "20ms", "40ms", "80ms", "80ms", "80ms"}; len(waits) < len(want) || !slices.Equal(waits[:len(want)], want) {
		t.Errorf("waits before the restarts %v; want them to start %v", waits, want)
	}
	if !loop {
		t.Error("the crash loop was not logged as one")
	}
}
