package emulator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"genjobs/internal/awsclient"
)

// PyenvPython is where the machine image keeps the Python that has moto
// (with cfn-lint and the SAM translator); Debian's /usr/bin/python3 has none.
const PyenvPython = "/root/.pyenv/versions/3.11.7/bin/python3"

// pyenvPython is PyenvPython, or what a test puts in its place.
var pyenvPython = PyenvPython

// motoRequirement is what pip installs when no Python can import moto.
const motoRequirement = "moto[server]"

// python is the interpreter resolved once per process.
var python struct {
	once sync.Once
	path string
	err  error
}

// MotoPython returns the absolute path of a Python interpreter that can
// import moto, resolved once per process: the first python3 on PATH that
// can, else PyenvPython if it can; if none can, moto is installed with
// `python3 -m pip install moto[server]` into the first python3 on PATH and
// that one is checked again. The error names what is missing.
func MotoPython(ctx context.Context) (string, error) {
	python.once.Do(func() { python.path, python.err = resolvePython(ctx) })
	return python.path, python.err
}

func resolvePython(ctx context.Context) (string, error) {
	candidates := pathPythons()
	for _, p := range append(candidates, pyenvPython) {
		if exe, err := importsMoto(ctx, p); err == nil {
			return exe, nil
		}
	}
	if len(candidates) == 0 {
		return "", fmt.Errorf("moto's server (KMS and Secrets Manager locally) needs Python 3 with moto: no python3 on PATH, and none that can import moto at %s", pyenvPython)
	}
	first := candidates[0]
	out, err := run(ctx, "", first, "-m", "pip", "install", "--quiet", motoRequirement)
	if err != nil {
		return "", fmt.Errorf("no Python here can import moto (tried %s and %s), and `%s -m pip install %s` failed: %w\n%s",
			strings.Join(candidates, ", "), pyenvPython, first, motoRequirement, err, tail(out, 2048))
	}
	exe, err := importsMoto(ctx, first)
	if err != nil {
		return "", fmt.Errorf("%s -m pip install %s succeeded but %s still cannot import moto: %w", first, motoRequirement, first, err)
	}
	return exe, nil
}

// pathPythons lists every python3 on PATH, in PATH order.
func pathPythons() []string {
	var out []string
	seen := map[string]bool{}
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, "python3")
		fi, err := os.Stat(p)
		if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 || seen[p] {
			continue
		}
		seen[p] = true
		out = append(out, p)
	}
	return out
}

// importsMoto runs py and returns its real executable (sys.executable, not
// a pyenv shim: starting through a shim costs a shell and a pyenv run) if it
// can import moto's server.
func importsMoto(ctx context.Context, py string) (string, error) {
	if _, err := os.Stat(py); err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, py, "-c", "import sys, moto.server; print(sys.executable)")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s cannot import moto.server: %w", py, err)
	}
	exe := strings.TrimSpace(string(out))
	if exe == "" {
		exe = py
	}
	return exe, nil
}

// MotoOptions says how to run moto's server.
type MotoOptions struct {
	// Python is MotoPython's interpreter.
	Python string
	// Port to listen on; 0 picks a free one.
	Port int
	// LogFile receives the child's stdout and stderr (appended): one line
	// per request, never a request's body.
	LogFile string
}

// StartMoto starts moto's server (KMS and Secrets Manager here) on
// 127.0.0.1 and returns once it answers a KMS ListKeys. Its state lives in
// memory only: keys and secrets are made again after a restart.
func StartMoto(ctx context.Context, o MotoOptions) (*Process, error) {
	if o.Python == "" || o.LogFile == "" {
		return nil, errors.New("moto: Python and LogFile are required")
	}
	return start(ctx, motoSpec(o))
}

func motoSpec(o MotoOptions) spec {
	return spec{
		name: "moto",
		path: o.Python,
		args: func(port int) []string {
			return []string{"-m", "moto.server", "-H", "127.0.0.1", "-p", strconv.Itoa(port)}
		},
		// moto reads MOTO_PORT when it writes its own URLs; a different
		// value inherited from `make run`'s environment must not apply.
		// MOTO_COGNITO_IDP_USER_POOL_ENABLE_TOTP makes its Cognito check
		// TOTP codes (VerifySoftwareToken, SOFTWARE_TOKEN_MFA) against the
		// secret it gives, as AWS does; without it any code passes.
		env: func(port int) []string {
			return []string{"MOTO_PORT=" + strconv.Itoa(port), "PYTHONUNBUFFERED=1", "MOTO_COGNITO_IDP_USER_POOL_ENABLE_TOTP=true"}
		},
		dir:     filepath.Dir(o.LogFile),
		logFile: o.LogFile,
		port:    o.Port,
		probe: func(ctx context.Context, endpoint string) error {
			_, err := KMSClient(endpoint).ListKeys(ctx, &kms.ListKeysInput{},
				func(o *kms.Options) { o.Retryer = aws.NopRetryer{} })
			return err
		},
		inUse: []string{"Address already in use"},
	}
}

// KMSClient returns a client for moto's KMS at endpoint
// (http://127.0.0.1:PORT).
func KMSClient(endpoint string) *kms.Client {
	return kms.NewFromConfig(localConfig(), func(o *kms.Options) {
		o.BaseEndpoint = aws.String(endpoint)
	})
}

// SecretsManagerClient returns a client for moto's Secrets Manager at
// endpoint (the same port as its KMS).
func SecretsManagerClient(endpoint string) *secretsmanager.Client {
	return secretsmanager.NewFromConfig(localConfig(), func(o *secretsmanager.Options) {
		o.BaseEndpoint = aws.String(endpoint)
	})
}

// FunctionConfig is the AWS configuration of a local stack's functions:
// the local credentials and region, each service at its endpoint in e.
func FunctionConfig(e awsclient.Endpoints) aws.Config {
	cfg := localConfig()
	cfg.ConfigSources = []any{e}
	return cfg
}

// MotoConfig is an AWS configuration whose every client goes to moto's
// server at endpoint: what the local stack's functions build their KMS and
// Secrets Manager clients from, by the same code as in Lambda.
func MotoConfig(endpoint string) aws.Config {
	cfg := localConfig()
	cfg.BaseEndpoint = aws.String(endpoint)
	return cfg
}
