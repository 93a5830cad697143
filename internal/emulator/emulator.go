// Package emulator installs, starts and stops the local AWS emulators the
// project runs on one machine: DynamoDB Local (AWS's own jar), fauxqs
// (SQS, SNS and S3, a Node program) and moto's server (KMS and Secrets
// Manager, a Python program), each as a child process in its own
// process group so that nothing outlives its parent.
package emulator

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/middleware"
)

// Static credentials for every local client. DynamoDB Local runs with
// -sharedDb, but without it it would keep one database per access key and
// region; letters and digits only because it rejects other key characters.
const (
	AccessKey = "local"
	SecretKey = "local"
	Region    = "us-east-1"
)

// RepoRoot returns the repository's directory, the one holding go.mod and
// template.yaml, walking up from the working directory (tests run in their
// package directory; the client's is a module of its own, whose go.mod is
// not the repository's).
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		ok, err := IsRepoRoot(dir)
		if err != nil {
			return "", err
		}
		if ok {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod beside a template.yaml found in the working directory or above it")
		}
		dir = parent
	}
}

// IsRepoRoot reports whether dir holds the repository: go.mod and
// template.yaml.
func IsRepoRoot(dir string) (bool, error) {
	for _, name := range []string{"go.mod", "template.yaml"} {
		if _, err := os.Stat(filepath.Join(dir, name)); errors.Is(err, os.ErrNotExist) {
			return false, nil
		} else if err != nil {
			return false, err
		}
	}
	return true, nil
}

// CacheDir is where installed emulators live by default: <repo>/.local/cache.
func CacheDir(repoRoot string) string { return filepath.Join(repoRoot, ".local", "cache") }

// LogDir is where emulator logs go by default: <repo>/.local/logs.
func LogDir(repoRoot string) string { return filepath.Join(repoRoot, ".local", "logs") }

// localConfig is built by hand rather than with config.LoadDefaultConfig so
// that no profile, AWS_ENDPOINT_URL or AWS_CA_BUNDLE of the machine applies.
func localConfig() aws.Config {
	return aws.Config{
		Region:      Region,
		Credentials: credentials.NewStaticCredentialsProvider(AccessKey, SecretKey, ""),
		// Cognito's calls as moto takes them (motocognito.go); no other
		// service is touched.
		APIOptions: []func(*middleware.Stack) error{motoCognito},
	}
}

// DynamoDBClient returns a client for DynamoDB Local at endpoint
// (http://127.0.0.1:PORT).
func DynamoDBClient(endpoint string) *dynamodb.Client {
	return dynamodb.NewFromConfig(localConfig(), func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String(endpoint)
		// DynamoDB Local omits x-amz-crc32 on 4xx answers; checking it would
		// log a warning per expected error (conditional check failed, ...).
		o.DisableValidateResponseChecksum = true
	})
}

// DynamoDBStreamsClient returns a client for DynamoDB Local's streams at
// endpoint: the same address as its tables.
func DynamoDBStreamsClient(endpoint string) *dynamodbstreams.Client {
	return dynamodbstreams.NewFromConfig(localConfig(), func(o *dynamodbstreams.Options) {
		o.BaseEndpoint = aws.String(endpoint)
	})
}

// SQSClient returns a client for fauxqs at endpoint (http://127.0.0.1:PORT).
func SQSClient(endpoint string) *sqs.Client {
	return sqs.NewFromConfig(localConfig(), func(o *sqs.Options) {
		o.BaseEndpoint = aws.String(endpoint)
	})
}

// S3Client returns a client for fauxqs's S3 at endpoint
// (http://127.0.0.1:PORT): path-style, since the endpoint is a bare address
// with no bucket subdomains.
func S3Client(endpoint string) *s3.Client {
	return s3.NewFromConfig(localConfig(), func(o *s3.Options) {
		o.BaseEndpoint = aws.String(endpoint)
		o.UsePathStyle = true
	})
}
