package emulator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// DynamoDBOptions says how to run DynamoDB Local.
type DynamoDBOptions struct {
	// Dir is Installation.DynamoDBDir.
	Dir string
	// Port to listen on; 0 picks a free one.
	Port int
	// DBPath keeps the data in that directory across runs; empty keeps it
	// in memory only.
	DBPath string
	// LogFile receives the child's stdout and stderr (appended).
	LogFile string
}

// StartDynamoDB starts DynamoDB Local and returns once it answers ListTables.
func StartDynamoDB(ctx context.Context, o DynamoDBOptions) (*Process, error) {
	if o.Dir == "" || o.LogFile == "" {
		return nil, errors.New("DynamoDB Local: Dir and LogFile are required")
	}
	storage := []string{"-inMemory"}
	if o.DBPath != "" {
		// Made absolute: the child runs in the emulator directory.
		abs, err := filepath.Abs(o.DBPath)
		if err != nil {
			return nil, err
		}
		if err := os.MkdirAll(abs, 0o755); err != nil {
			return nil, err
		}
		storage = []string{"-dbPath", abs}
	}
	return start(ctx, dynamoDBSpec(o, storage))
}

func dynamoDBSpec(o DynamoDBOptions, storage []string) spec {
	return spec{
		name: "DynamoDB Local",
		path: "java",
		args: func(port int) []string {
			// Serial GC and C1 only: ready in ~1.7 s instead of ~2.6 s, and a
			// smaller footprint; the heap cap keeps it near 200 MB RSS.
			// -sharedDb: one database whatever the credentials and region.
			return append([]string{
				"-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
				"-Djava.library.path=DynamoDBLocal_lib",
				"-jar", "DynamoDBLocal.jar",
				"-sharedDb", "-disableTelemetry",
				"-port", strconv.Itoa(port),
			}, storage...)
		},
		env:     func(int) []string { return nil },
		dir:     o.Dir,
		logFile: o.LogFile,
		port:    o.Port,
		probe: func(ctx context.Context, endpoint string) error {
			_, err := DynamoDBClient(endpoint).ListTables(ctx, &dynamodb.ListTablesInput{},
				func(o *dynamodb.Options) { o.Retryer = aws.NopRetryer{} })
			return err
		},
		// Jetty's first line says "Failed to bind"; the BindException cause may
		// reach the log only after the fatal line has been seen.
		inUse: []string{"Address already in use", "BindException", "Failed to bind"},
		fatal: []string{`Exception in thread "main"`},
	}
}

// FauxqsOptions says how to run fauxqs.
type FauxqsOptions struct {
	// Script is Installation.FauxqsScript.
	Script string
	// Port to listen on; 0 picks a free one.
	Port int
	// LogFile receives the child's stdout and stderr (appended). fauxqs's
	// command line logs every request there.
	LogFile string
}

// StartFauxqs starts fauxqs and returns once it answers an SQS ListQueues.
// Its state (queues, S3 objects) lives in memory only.
func StartFauxqs(ctx context.Context, o FauxqsOptions) (*Process, error) {
	if o.Script == "" || o.LogFile == "" {
		return nil, errors.New("fauxqs: Script and LogFile are required")
	}
	return start(ctx, fauxqsSpec(o))
}

func fauxqsSpec(o FauxqsOptions) spec {
	return spec{
		name: "fauxqs",
		path: "node",
		args: func(int) []string { return []string{o.Script} },
		env: func(port int) []string {
			// FAUXQS_HOST is left unset: it is not the listen address (fauxqs
			// always binds 0.0.0.0) but the host inside queue URLs, which then
			// read http://sqs.us-east-1.localhost:PORT/000000000000/NAME. They
			// serve as identifiers only: SDK clients send to BaseEndpoint.
			return []string{
				"FAUXQS_PORT=" + strconv.Itoa(port),
				"FAUXQS_DEFAULT_REGION=" + Region,
			}
		},
		dir:     filepath.Dir(o.Script),
		logFile: o.LogFile,
		port:    o.Port,
		probe: func(ctx context.Context, endpoint string) error {
			_, err := SQSClient(endpoint).ListQueues(ctx, &sqs.ListQueuesInput{},
				func(o *sqs.Options) { o.Retryer = aws.NopRetryer{} })
			return err
		},
		inUse: []string{"EADDRINUSE"},
	}
}

// StackOptions says how to run the emulators together.
type StackOptions struct {
	// RepoRoot is the directory holding go.mod (see RepoRoot).
	RepoRoot string
	// CacheDir defaults to CacheDir(RepoRoot); LogDir to LogDir(RepoRoot).
	CacheDir, LogDir string
	// LogPrefix starts the log file names: <LogDir>/<LogPrefix>dynamodb.log,
	// <LogDir>/<LogPrefix>fauxqs.log and <LogDir>/<LogPrefix>moto.log.
	LogPrefix string
	// Ports; 0 picks free ones.
	DynamoDBPort, FauxqsPort, MotoPort int
	// DynamoDBPath keeps DynamoDB data there; empty means in memory.
	DynamoDBPath string
}

// Stack is DynamoDB Local, fauxqs and moto's server, running.
type Stack struct {
	DynamoDB, Fauxqs, Moto *Process
}

// StartStack installs what is missing, then starts the three emulators at
// once. On error nothing is left running.
func StartStack(ctx context.Context, o StackOptions) (*Stack, error) {
	if o.RepoRoot == "" {
		return nil, errors.New("StackOptions.RepoRoot is required")
	}
	if o.CacheDir == "" {
		o.CacheDir = CacheDir(o.RepoRoot)
	}
	if o.LogDir == "" {
		o.LogDir = LogDir(o.RepoRoot)
	}
	type result struct {
		p   *Process
		err error
	}
	// moto needs no npm: it starts while the others install.
	moto := make(chan result, 1)
	go func() {
		py, err := MotoPython(ctx)
		if err != nil {
			moto <- result{nil, err}
			return
		}
		p, err := StartMoto(ctx, MotoOptions{
			Python:  py,
			Port:    o.MotoPort,
			LogFile: filepath.Join(o.LogDir, o.LogPrefix+"moto.log"),
		})
		moto <- result{p, err}
	}()
	inst, err := Install(ctx, o.RepoRoot, o.CacheDir)
	if err != nil {
		if m := <-moto; m.p != nil {
			_ = m.p.Stop()
		}
		return nil, err
	}
	ddb := make(chan result, 1)
	go func() {
		p, err := StartDynamoDB(ctx, DynamoDBOptions{
			Dir:     inst.DynamoDBDir,
			Port:    o.DynamoDBPort,
			DBPath:  o.DynamoDBPath,
			LogFile: filepath.Join(o.LogDir, o.LogPrefix+"dynamodb.log"),
		})
		ddb <- result{p, err}
	}()
	fq, ferr := StartFauxqs(ctx, FauxqsOptions{
		Script:  inst.FauxqsScript,
		Port:    o.FauxqsPort,
		LogFile: filepath.Join(o.LogDir, o.LogPrefix+"fauxqs.log"),
	})
	d, m := <-ddb, <-moto
	if err := errors.Join(d.err, ferr, m.err); err != nil {
		s := &Stack{DynamoDB: d.p, Fauxqs: fq, Moto: m.p}
		_ = s.Stop()
		return nil, err
	}
	return &Stack{DynamoDB: d.p, Fauxqs: fq, Moto: m.p}, nil
}

// Stop stops the emulators (those that are running), at once.
func (s *Stack) Stop() error {
	errs := make(chan error, 3)
	n := 0
	for _, p := range []*Process{s.DynamoDB, s.Fauxqs, s.Moto} {
		if p != nil {
			n++
			go func() { errs <- p.Stop() }()
		}
	}
	var all []error
	for range n {
		all = append(all, <-errs)
	}
	if err := errors.Join(all...); err != nil {
		return fmt.Errorf("stop emulators: %w", err)
	}
	return nil
}
