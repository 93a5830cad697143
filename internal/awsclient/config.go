package awsclient

import (
	"context"
	"errors"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
)

// FromEnv is a Lambda function's AWS configuration, read from its
// environment alone. In Lambda the credentials are always the execution
// role's, which the runtime puts in AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY
// and AWS_SESSION_TOKEN, and the region is AWS_REGION: there is no profile,
// no shared config file, no SSO, no web identity to resolve. The SDK's
// config.LoadDefaultConfig would look for all of them, reading files at
// init and linking the STS, SSO, SSO OIDC and sign-in clients (about
// 400 KB of every binary, and their packages' init); the operator tools,
// which need profiles, keep using it.
//
// Endpoints follow the SDK's variables: AWS_ENDPOINT_URL_<SERVICE> (the
// service's SDK id in capitals, spaces as underscores: DYNAMODB, SQS, S3,
// KMS, SECRETS_MANAGER), else AWS_ENDPOINT_URL. It does no I/O; missing
// credentials fail the first AWS call, naming the variables.
func FromEnv(getenv func(string) string) aws.Config {
	region := getenv("AWS_REGION")
	if region == "" {
		region = getenv("AWS_DEFAULT_REGION")
	}
	cfg := aws.Config{
		Region: region,
		Credentials: envCredentials{aws.Credentials{
			AccessKeyID:     getenv("AWS_ACCESS_KEY_ID"),
			SecretAccessKey: getenv("AWS_SECRET_ACCESS_KEY"),
			SessionToken:    getenv("AWS_SESSION_TOKEN"),
			Source:          "EnvConfigCredentials",
		}},
		// The SDK's buildable client, so that Policy.HTTPClient can apply
		// its timeouts.
		HTTPClient:    awshttp.NewBuildableClient(),
		ConfigSources: []any{envEndpoints(getenv)},
	}
	if u := getenv("AWS_ENDPOINT_URL"); u != "" {
		cfg.BaseEndpoint = aws.String(u)
	}
	return cfg
}

// envCredentials are the execution role's credentials.
type envCredentials struct{ creds aws.Credentials }

func (c envCredentials) Retrieve(context.Context) (aws.Credentials, error) {
	if !c.creds.HasKeys() {
		return aws.Credentials{}, errors.New("AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set (Lambda sets them from the function's role)")
	}
	return c.creds, nil
}

// envEndpoints are the AWS_ENDPOINT_URL_<SERVICE> variables.
type envEndpoints func(string) string

// GetServiceBaseEndpoint is what the SDK's clients ask their configuration's
// ConfigSources for.
func (getenv envEndpoints) GetServiceBaseEndpoint(_ context.Context, sdkID string) (string, bool, error) {
	u := getenv("AWS_ENDPOINT_URL_" + strings.ToUpper(strings.ReplaceAll(sdkID, " ", "_")))
	return u, u != "", nil
}

// Endpoints are the base endpoints of services by SDK id ("DynamoDB",
// "SQS", "S3", "KMS", "Secrets Manager"). In an aws.Config's ConfigSources
// they point every client built from it at those endpoints, as
// AWS_ENDPOINT_URL_<SERVICE> does: the local stack and the tests give the
// functions a configuration with their emulators' endpoints, and the
// functions build their clients as in Lambda.
type Endpoints map[string]string

// GetServiceBaseEndpoint is what the SDK's clients ask their configuration's
// ConfigSources for.
func (e Endpoints) GetServiceBaseEndpoint(_ context.Context, sdkID string) (string, bool, error) {
	u, ok := e[sdkID]
	return u, ok, nil
}

// At is cfg for a client of the service sdkID at the endpoint cfg gives it
// (Endpoint), set as the configuration's BaseEndpoint. Policy.Config
// starts from it; a client without a policy (the local stack's set-up)
// uses it alone.
func At(cfg aws.Config, sdkID string) aws.Config {
	if u := Endpoint(cfg, sdkID); u != "" {
		cfg.BaseEndpoint = aws.String(u)
	}
	return cfg
}

// Endpoint is the endpoint cfg gives the service sdkID: one of its sources',
// else its BaseEndpoint; "" for the service's own (AWS). At sets it on the
// configuration a client is built from rather than leave it to the SDK,
// which ignores the configuration's sources when the process has
// AWS_ENDPOINT_URL and not the service's own variable: a developer's
// AWS_ENDPOINT_URL must not take the local stack's functions elsewhere.
func Endpoint(cfg aws.Config, sdkID string) string {
	type source interface {
		GetServiceBaseEndpoint(context.Context, string) (string, bool, error)
	}
	for _, s := range cfg.ConfigSources {
		if p, ok := s.(source); ok {
			if u, found, err := p.GetServiceBaseEndpoint(context.Background(), sdkID); found && err == nil {
				return u
			}
		}
	}
	return aws.ToString(cfg.BaseEndpoint)
}
