package repocheck

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Heavy packages a function links only if it uses them. Importing a package
// links it whole with its init, whether or not anything of it is called
// (docs/performance.md, "Binary sizes and cold starts").
const (
	sdk       = "github.com/aws/aws-sdk-go-v2/"
	dynamoDB  = sdk + "service/dynamodb"
	sqsClient = sdk + "service/sqs"
	s3Client  = sdk + "service/s3"
	kmsClient = sdk + "service/kms"
	secrets   = sdk + "service/secretsmanager"
	cognito   = sdk + "service/cognitoidentityprovider"
	stripeGo  = "github.com/stripe/stripe-go/v82"
	catalog   = "genjobs/internal/catalog"
	validator = "github.com/xeipuuv/gojsonschema"
	engines   = "genjobs/internal/engine"
)

// links is what each function may link of those: every other one is a
// failure. No function links the SDK's config package (config.LoadDefaultConfig:
// the functions read their configuration from the environment).
var links = map[string][]string{
	"notfound":      {},
	"openapi":       {},
	"jwks":          {kmsClient},
	"oauth":         {dynamoDB, kmsClient},
	"usage":         {dynamoDB},
	"styles":        {dynamoDB},
	"assets":        {dynamoDB, s3Client},
	"notifier":      {dynamoDB, sqsClient},
	"sweeper":       {dynamoDB, sqsClient},
	"jobs":          {dynamoDB, sqsClient},
	"generate":      {dynamoDB, sqsClient, catalog, validator},
	"deliverer":     {dynamoDB, sqsClient, kmsClient},
	"worker":        {dynamoDB, sqsClient, s3Client, catalog, validator, engines},
	"lightworker":   {dynamoDB, sqsClient, s3Client, catalog, validator, engines},
	"provider":      {dynamoDB, sqsClient, s3Client, secrets, catalog, validator},
	"callbacks":     {dynamoDB, sqsClient, s3Client, secrets, catalog, validator},
	"mcp":           {dynamoDB, sqsClient, kmsClient, catalog, validator},
	"console":       {dynamoDB, sqsClient, secrets, cognito, stripeGo, catalog, validator},
	"stripewebhook": {dynamoDB, secrets, stripeGo},
}

func TestEachFunctionLinksOnlyWhatItUses(t *testing.T) {
	root, _ := repository(t)
	dirs, err := filepath.Glob(filepath.Join(root, "functions", "*", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	heavy := []string{dynamoDB, sqsClient, s3Client, kmsClient, secrets, cognito, stripeGo, catalog, validator, engines}
	for _, main := range dirs {
		fn := filepath.Base(filepath.Dir(main))
		allowed, ok := links[fn]
		if !ok {
			t.Errorf("functions/%s: not in links; say what it may link", fn)
			continue
		}
		cmd := exec.Command("go", "list", "-deps", "-tags", "lambda.norpc", "./functions/"+fn)
		cmd.Dir = root
		cmd.Env = append(cmd.Environ(), "GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -deps ./functions/%s: %v", fn, err)
		}
		deps := strings.Fields(string(out))
		for _, pkg := range heavy {
			linked := slices.ContainsFunc(deps, func(d string) bool { return d == pkg || strings.HasPrefix(d, pkg+"/") })
			if linked && !slices.Contains(allowed, pkg) {
				t.Errorf("functions/%s links %s, which it does not use", fn, pkg)
			}
			if !linked && slices.Contains(allowed, pkg) {
				t.Errorf("functions/%s no longer links %s: take it out of links", fn, pkg)
			}
		}
		if slices.Contains(deps, sdk+"config") {
			t.Errorf("functions/%s links %sconfig: a function reads its AWS configuration from the environment (awsclient.FromEnv)", fn, sdk)
		}
	}
}
