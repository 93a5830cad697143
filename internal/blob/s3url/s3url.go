// Package s3url mints presigned S3 URLs without the S3 client. It is a
// package of its own, apart from the S3 adapter (package blob), so that the
// functions that only hand URLs out (generate, jobs, the deliverer) do not
// link the S3 client's packages and run their init.
package s3url

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/smithy-go/encoding/httpbinding"

	"genjobs/internal/asset"
)

// Presigner mints presigned S3 URLs without the S3 client. Presigning is a
// SigV4 signature over the request; the functions that only hand out URLs
// (generate, jobs, the deliverer) would otherwise link the whole S3 client,
// about 2.4 MB of their binaries, for it. The URLs are the SDK presigner's,
// byte for byte (links_test.go compares them): SigV4 query signing,
// UNSIGNED-PAYLOAD, and the presigner's x-id query parameter.
//
// A presigned URL stops working when the credentials that signed it
// expire, whatever its own X-Amz-Expires says. So each URL is signed for
// the lifetime asked, or for as long as the credentials are known to last
// if that is shorter (Covered).
type Presigner struct {
	creds  aws.CredentialsProvider
	region string
	// endpoint is a custom S3 endpoint (a local emulator), addressed
	// path-style; empty: S3's regional virtual-hosted address.
	endpoint string
	signer   *v4.Signer
	now      func() time.Time
}

// NewPresigner signs with creds for region, addressing endpoint path-style
// when it is set. It does no I/O.
func NewPresigner(creds aws.CredentialsProvider, region, endpoint string) *Presigner {
	return &Presigner{
		creds: creds, region: region,
		endpoint: strings.TrimSuffix(endpoint, "/"),
		signer:   v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true }),
		now:      time.Now,
	}
}

// GetURL is a presigned GET of s3://bucket/key, valid for expires or as
// long as the credentials are known to last (Covered).
func (p *Presigner) GetURL(ctx context.Context, bucket, key string, expires time.Duration) (string, error) {
	u, err := p.sign(ctx, http.MethodGet, "GetObject", bucket, key, expires, nil)
	if err != nil {
		return "", fmt.Errorf("presign GET s3://%s/%s: %w", bucket, key, err)
	}
	return u, nil
}

// PutURL is a presigned PUT of s3://bucket/key whose signature covers the
// Content-Type and Content-Length headers, valid for expires or as long as
// the credentials are known to last (Covered).
func (p *Presigner) PutURL(ctx context.Context, bucket, key, contentType string, size int64, expires time.Duration) (string, error) {
	u, err := p.sign(ctx, http.MethodPut, "PutObject", bucket, key, expires, func(r *http.Request) {
		r.Header.Set("Content-Type", contentType)
		r.ContentLength = size
	})
	if err != nil {
		return "", fmt.Errorf("presign PUT s3://%s/%s: %w", bucket, key, err)
	}
	return u, nil
}

// ExpiryMargin is how long before its credentials expire a URL stops: a
// request made at a URL's last second may reach S3 a little later.
const ExpiryMargin = time.Minute

// UnknownExpiryCover is how long temporary credentials that do not say
// when they expire are trusted from the moment of signing. In Lambda the
// execution role's credentials come from the environment
// (AWS_SESSION_TOKEN) without their expiry, and AWS does not document how
// long they outlive the execution environment that holds them; one hour is
// the default maximum session of an IAM role, and what the service
// assumes. A longer URL signed with them (a provider's 3-hour asset URL)
// is signed for an hour.
const UnknownExpiryCover = time.Hour

// Covered is the part of want that credentials c, used at now, are known
// to cover: up to ExpiryMargin before their expiry when they have one,
// UnknownExpiryCover for temporary credentials of unknown expiry, all of
// it for long-term keys (an IAM user's).
func Covered(c aws.Credentials, now time.Time, want time.Duration) time.Duration {
	switch {
	case c.CanExpire:
		return min(want, c.Expires.Sub(now)-ExpiryMargin)
	case c.SessionToken != "":
		return min(want, UnknownExpiryCover)
	}
	return want
}

func (p *Presigner) sign(ctx context.Context, method, op, bucket, key string, expires time.Duration, with func(*http.Request)) (string, error) {
	creds, err := p.creds.Retrieve(ctx)
	if err != nil {
		return "", fmt.Errorf("credentials: %w", err)
	}
	now := p.now().UTC()
	if expires = Covered(creds, now, expires); expires < time.Second {
		return "", fmt.Errorf("the credentials expire at %s, too soon to sign a URL", creds.Expires.UTC().Format(time.RFC3339))
	}
	target := "https://" + bucket + ".s3." + p.region + "." + dnsSuffix(p.region) + "/" + httpbinding.EscapePath(key, false)
	if p.endpoint != "" {
		target = p.endpoint + "/" + bucket + "/" + httpbinding.EscapePath(key, false)
	}
	query := "?X-Amz-Expires=" + strconv.FormatInt(int64(expires/time.Second), 10) + "&x-id=" + op
	req, err := http.NewRequestWithContext(ctx, method, target+query, nil)
	if err != nil {
		return "", err
	}
	if with != nil {
		with(req)
	}
	u, _, err := p.signer.PresignHTTP(ctx, creds, req, "UNSIGNED-PAYLOAD", "s3", p.region, now)
	return u, err
}

// dnsSuffix is the partition's domain of region.
func dnsSuffix(region string) string {
	if strings.HasPrefix(region, "cn-") {
		return "amazonaws.com.cn"
	}
	return "amazonaws.com"
}

// ResultLinks mints the URLs of result files (httpapi.ResultURLs).
type ResultLinks struct {
	presign *Presigner
	bucket  string
}

// NewResultLinks mints URLs of the results bucket's files.
func NewResultLinks(p *Presigner, resultsBucket string) ResultLinks {
	return ResultLinks{presign: p, bucket: resultsBucket}
}

// ResultURLLifetime: result URLs are valid for 1 hour from the moment a job
// record is read (docs/api.md, "The job record").
const ResultURLLifetime = time.Hour

// ResultURL is a presigned GET of a result, valid for ResultURLLifetime
// (less only when the credentials expire sooner).
func (l ResultLinks) ResultURL(ctx context.Context, key string) (string, error) {
	return l.presign.GetURL(ctx, l.bucket, key, ResultURLLifetime)
}

// Origin is the origin of the URLs ResultURL mints: the results bucket's
// virtual-hosted address, or the custom endpoint's origin (path-style).
// The console's CSP lets result images and videos load from it.
func (l ResultLinks) Origin() string {
	p := l.presign
	if p.endpoint == "" {
		return "https://" + l.bucket + ".s3." + p.region + "." + dnsSuffix(p.region)
	}
	if u, err := url.Parse(p.endpoint); err == nil && u.Host != "" {
		return u.Scheme + "://" + u.Host
	}
	return p.endpoint
}

// AssetLinks mints GET URLs of uploaded assets, for the console's job page
// to show a job's input images (jobview.AssetURLs).
type AssetLinks struct {
	presign *Presigner
	bucket  string
}

// NewAssetLinks mints URLs of the assets bucket's files.
func NewAssetLinks(p *Presigner, assetsBucket string) AssetLinks {
	return AssetLinks{presign: p, bucket: assetsBucket}
}

// AssetURL is a presigned GET of workspace ws's asset id (asset.Key),
// valid for ResultURLLifetime.
func (l AssetLinks) AssetURL(ctx context.Context, ws, id string) (string, error) {
	return l.presign.GetURL(ctx, l.bucket, asset.Key(ws, id), ResultURLLifetime)
}
