package s3url

import (
	"context"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"genjobs/internal/awsclient"
)

// Presigner must mint exactly the SDK presigner's URL: the same signature
// over the same request, at the same moment, for S3 in AWS (virtual-hosted)
// and for a local endpoint (path-style), with and without a session token.
func TestPresignerMatchesTheSDK(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, region, endpoint, token string
	}{
		{"aws", "us-east-1", "", ""},
		{"aws with session token", "eu-west-3", "", "FwoGZXIvYXdzEJr//////////token"},
		{"china", "cn-north-1", "", ""},
		{"local path-style", "us-east-1", "http://127.0.0.1:4566", ""},
	} {
		for _, key := range []string{"results/0193a1b2-7c00-7000-8000-000000000001/0.png", "results/a b+c/ü;=&?.webp"} {
			t.Run(tc.name+" "+key, func(t *testing.T) {
				creds := credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", tc.token)
				client := s3.New(s3.Options{Region: tc.region, Credentials: creds}, func(o *s3.Options) {
					if tc.endpoint != "" {
						o.BaseEndpoint = aws.String(tc.endpoint)
						o.UsePathStyle = true
					}
				})
				presign := NewPresigner(creds, tc.region, tc.endpoint)
				get, err := s3.NewPresignClient(client).PresignGetObject(ctx,
					&s3.GetObjectInput{Bucket: aws.String("genjobs-results"), Key: aws.String(key)},
					s3.WithPresignExpires(ResultURLLifetime))
				if err != nil {
					t.Fatal(err)
				}
				presign.now = signedAt(t, get.URL)
				got, err := NewResultLinks(presign, "genjobs-results").ResultURL(ctx, key)
				if err != nil {
					t.Fatal(err)
				}
				if got != get.URL {
					t.Errorf("ResultURL:\n got %s\nwant %s", got, get.URL)
				}

				put, err := s3.NewPresignClient(client).PresignPutObject(ctx, &s3.PutObjectInput{
					Bucket: aws.String("genjobs-assets"), Key: aws.String(key),
					ContentType: aws.String("image/png"), ContentLength: aws.Int64(12345678),
				}, s3.WithPresignExpires(15*time.Minute))
				if err != nil {
					t.Fatal(err)
				}
				presign.now = signedAt(t, put.URL)
				got, err = presign.PutURL(ctx, "genjobs-assets", key, "image/png", 12345678, 15*time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				if got != put.URL {
					t.Errorf("PutURL:\n got %s\nwant %s", got, put.URL)
				}
			})
		}
	}
}

// signedAt is the moment the SDK signed presigned, as a clock.
func signedAt(t *testing.T, presigned string) func() time.Time {
	t.Helper()
	u, err := url.Parse(presigned)
	if err != nil {
		t.Fatal(err)
	}
	at, err := time.Parse("20060102T150405Z", u.Query().Get("X-Amz-Date"))
	if err != nil {
		t.Fatalf("the SDK's URL has no X-Amz-Date: %s", presigned)
	}
	return func() time.Time { return at }
}

// TestURLsDoNotOutliveTheirCredentials: a URL signed with credentials that
// expire before the lifetime asked for is signed only for as long as they
// last (a 3-hour URL with credentials of 10 more minutes would answer
// ExpiredToken after 10); Lambda's role credentials, whose expiry the
// environment does not give, are trusted for UnknownExpiryCover; an IAM
// user's keys for the whole lifetime; credentials about to expire sign
// nothing.
func TestURLsDoNotOutliveTheirCredentials(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 26, 7, 0, 0, 0, time.UTC)
	lambda := awsclient.FromEnv(func(k string) string {
		return map[string]string{"AWS_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "ASIAEXAMPLE",
			"AWS_SECRET_ACCESS_KEY": "secret", "AWS_SESSION_TOKEN": "session-token"}[k]
	})
	for _, tc := range []struct {
		name  string
		creds aws.CredentialsProvider
		want  time.Duration // the URL's lifetime; 0: no URL
	}{
		{"session credentials expiring in 10 minutes", aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "ASIASHORT", SecretAccessKey: "s", SessionToken: "t", CanExpire: true, Expires: now.Add(10 * time.Minute)}, nil
		}), 10*time.Minute - ExpiryMargin},
		{"session credentials expiring in 6 hours", aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "ASIALONG", SecretAccessKey: "s", SessionToken: "t", CanExpire: true, Expires: now.Add(6 * time.Hour)}, nil
		}), 3 * time.Hour},
		{"Lambda's role credentials from the environment", lambda.Credentials, UnknownExpiryCover},
		{"an IAM user's keys", credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", ""), 3 * time.Hour},
		{"session credentials expiring in 30 seconds", aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "ASIAGONE", SecretAccessKey: "s", SessionToken: "t", CanExpire: true, Expires: now.Add(30 * time.Second)}, nil
		}), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPresigner(tc.creds, "eu-west-1", "")
			p.now = func() time.Time { return now }
			got, err := p.GetURL(ctx, "genjobs-assets", "assets/a.png", 3*time.Hour)
			if tc.want == 0 {
				if err == nil {
					t.Fatalf("signed %s with credentials that expire in 30 s", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			u, err := url.Parse(got)
			if err != nil {
				t.Fatal(err)
			}
			if e := u.Query().Get("X-Amz-Expires"); e != strconv.Itoa(int(tc.want.Seconds())) {
				t.Errorf("X-Amz-Expires=%s; want %d (a 3-hour URL signed for what the credentials cover)", e, int(tc.want.Seconds()))
			}
		})
	}
}

// A result URL is on the origin ResultLinks.Origin names (the console's CSP
// allows it): the bucket's virtual-hosted address in AWS, the endpoint's
// origin locally.
func TestResultURLsAreOnTheirOrigin(t *testing.T) {
	creds := credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "")
	for _, tc := range []struct{ region, endpoint, origin string }{
		{"us-east-1", "", "https://results.s3.us-east-1.amazonaws.com"},
		{"cn-north-1", "", "https://results.s3.cn-north-1.amazonaws.com.cn"},
		{"us-east-1", "http://127.0.0.1:4566/", "http://127.0.0.1:4566"},
	} {
		l := NewResultLinks(NewPresigner(creds, tc.region, tc.endpoint), "results")
		u, err := l.ResultURL(context.Background(), "results/j/0.png")
		if err != nil {
			t.Fatal(err)
		}
		if l.Origin() != tc.origin || len(u) <= len(tc.origin) || u[:len(tc.origin)+1] != tc.origin+"/" {
			t.Errorf("origin %q, URL %s; want both on %s", l.Origin(), u, tc.origin)
		}
	}
}
