package app_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"genjobs/internal/app/callbacksfn"
	"genjobs/internal/awsclient"
	"genjobs/internal/emulator"
	"genjobs/internal/httpapi/lambdatest"
	"genjobs/internal/job"
	"genjobs/internal/provider"
	"genjobs/internal/queue/providerqueue"
	"genjobs/internal/store/submissionsdb"
	"genjobs/internal/testenv"
)

// uploads is a stack with a Cog route whose secret (in moto's Secrets
// Manager, reached through a fault proxy) has a webhook token, and a job
// of that route whose prediction the Cog server uploads a file for.
type uploads struct {
	*stack
	secrets      *testenv.Faults
	job          *job.Job
	predictionID string
}

const uploadToken = "cog-upload-token"

func newUploads(t *testing.T) *uploads {
	t.Helper()
	s := newStack(t)
	ctx := context.Background()
	prefix := testenv.UniqueName(t, "stack") + "/providers/"
	if _, err := testenv.SecretsManager(t).CreateSecret(ctx, &secretsmanager.CreateSecretInput{
		Name: aws.String(prefix + "cog"), SecretString: aws.String(`{"webhook_token": "` + uploadToken + `"}`)}); err != nil {
		t.Fatal(err)
	}
	pq, _, err := providerqueue.Create(ctx, testenv.SQS(t), testenv.UniqueName(t, "prov"))
	if err != nil {
		t.Fatal(err)
	}
	const endpoint = "/generate/image/vendor-b/model-e-4"
	s.d.Providers.Queue, s.d.Providers.SecretsPrefix = pq, prefix
	s.d.Providers.Routes = `{"` + endpoint + `": {"provider": "cog", "base_url": "http://127.0.0.1:1", "input": {"prompt": "prompt"}, "secret": "cog"}}`
	u := &uploads{stack: s, secrets: testenv.NewFaults(t, testenv.MotoEndpoint())}
	s.d.AWS = emulator.FunctionConfig(awsclient.Endpoints{
		"DynamoDB": s.table.URL, "SQS": s.queues.URL, "S3": s.queues.URL,
		"KMS": testenv.MotoEndpoint(), "Secrets Manager": u.secrets.URL,
	})
	now := time.Now()
	u.job = &job.Job{ID: job.NewID(now), WorkspaceID: "ws_a", Status: job.Queued, CreatedAt: now, Endpoint: endpoint,
		Request: json.RawMessage(`{"prompt":"a cat","width":64,"height":64}`), BaseURL: "https://api.test", Price: 30_000,
		Provider: provider.Cog, Deadline: 5 * time.Minute}
	if err := s.store.CreateJob(ctx, u.job); err != nil {
		t.Fatal(err)
	}
	const key = "0123456789abcdef0123456789abcdef"
	if err := submissionsdb.New(s.store).MarkSubmission(ctx, u.job.ID, "", "m1", provider.TokenHash("t"), key, now); err != nil {
		t.Fatal(err)
	}
	u.predictionID = provider.PredictionID(u.job.ID, key)
	return u
}

// put sends a Cog server's upload of a PNG through the Lambda adapter,
// under an invocation deadline.
func (u *uploads) put(h http.Handler) answer {
	u.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), lambdaTimeout)
	defer cancel()
	req := httptest.NewRequest(http.MethodPut, "https://api.test/callbacks/cog/uploads/out.png", strings.NewReader(pngBytes(u.t))).WithContext(ctx)
	req.Header.Set("Content-Type", "image/png")
	req.Header.Set("X-Prediction-ID", u.predictionID)
	req.SetBasicAuth("cog", uploadToken)
	rec := lambdatest.Serve(h, req)
	return answer{rec.Code, rec.Header(), rec.Body.String()}
}

// stored lists the job's files in the results bucket, read directly.
func (u *uploads) stored() []string {
	u.t.Helper()
	out, err := testenv.S3(u.t).ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{
		Bucket: aws.String(u.d.Buckets.Results), Prefix: aws.String("results/" + u.job.ID + "/")})
	if err != nil {
		u.t.Fatal(err)
	}
	var keys []string
	for _, o := range out.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	return keys
}

// When the table, the route's secret or S3 fails, a Cog server's upload is
// answered 503 with Retry-After (Cog's uploader retries a 503), logged
// with the request id and the dependency's code, and nothing is stored;
// the same upload once the dependency is back is stored once.
func TestTheUploadStoreAnswers503WhenItsDependencyFails(t *testing.T) {
	cases := []struct {
		name     string
		where    func(u *uploads) *testenv.Faults
		op, frag string
		fault    testenv.Fault
	}{
		{"the job's read", func(u *uploads) *testenv.Faults { return u.table }, "GetItem", `{"S":"JOB"}`, testenv.Unavailable},
		{"the job's read, throttled", func(u *uploads) *testenv.Faults { return u.table }, "GetItem", `{"S":"JOB"}`, testenv.Throttle},
		{"the route's secret", func(u *uploads) *testenv.Faults { return u.secrets }, "GetSecretValue", "", testenv.Unavailable},
		{"the file's write", func(u *uploads) *testenv.Faults { return u.queues }, "PutObject", "", testenv.Throttle},
		{"the file's write, frozen", func(u *uploads) *testenv.Faults { return u.queues }, "PutObject", "", testenv.Freeze},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			u := newUploads(t)
			h := u.build(callbacksfn.Build)
			faults := c.where(u)
			faults.SetIf(c.op, c.frag, c.fault)
			out := u.put(h)
			want503(t, "during the outage", out)
			if faults.Failed(c.op) == 0 {
				t.Errorf("no %s call was failed: the 503 came from elsewhere", c.op)
			}
			if len(u.logs.lines(`"request_id":"`+out.RequestID()+`"`, "dependency unavailable", `"code":"`)) == 0 {
				t.Errorf("no log line with the request id and the error code:\n%s", u.logs.lines())
			}
			if keys := u.stored(); len(keys) != 0 {
				t.Errorf("during the outage the job holds %v; want nothing stored", keys)
			}
			faults.Clear()
			if out := u.put(h); out.StatusCode != http.StatusCreated {
				t.Errorf("after the outage: %d %s; want 201", out.StatusCode, out.Body)
			}
			if keys := u.stored(); len(keys) != 1 {
				t.Errorf("after the outage the job holds %v; want the one upload", keys)
			}
		})
	}
}
