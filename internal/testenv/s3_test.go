package testenv

import (
	"bytes"
	"context"
	"errors"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
)

// validBucket is S3's rule for bucket names (without dots, which we never use).
var validBucket = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$`)

func TestNewBucket(t *testing.T) {
	ctx := context.Background()
	client := S3(t)
	var name string
	t.Run("Use_A Mixed-Case name/with.odd characters and a long long long tail", func(t *testing.T) {
		name = NewBucket(t)
		if !validBucket.MatchString(name) {
			t.Fatalf("bucket name %q breaks S3's naming rules", name)
		}
		if _, err := client.PutObject(ctx, &s3.PutObjectInput{
			Bucket: aws.String(name), Key: aws.String("a/b.txt"), Body: strings.NewReader("hello"),
		}); err != nil {
			t.Fatal(err)
		}
		out, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(name), Key: aws.String("a/b.txt")})
		if err != nil {
			t.Fatal(err)
		}
		defer out.Body.Close()
		if b, _ := io.ReadAll(out.Body); !bytes.Equal(b, []byte("hello")) {
			t.Fatalf("read back %q", b)
		}
	})
	// The sub-test's cleanup emptied and deleted its bucket.
	_, err := client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(name)})
	var api smithy.APIError
	if !errors.As(err, &api) {
		t.Fatalf("bucket %s after its test: %v; want it gone", name, err)
	}
	if other := NewBucket(t); other == name {
		t.Fatalf("bucket name %q repeated", name)
	}
}
