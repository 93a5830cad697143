package emulator

import (
	"context"
	"crypto/ecdsa"
	"crypto/sha256"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	kmstypes "github.com/aws/aws-sdk-go-v2/service/kms/types"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
)

// motoPython is the machine's Python with moto; the test fails without it.
func motoPython(t *testing.T) string {
	t.Helper()
	py, err := MotoPython(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return py
}

// moto's server serves what the service needs of KMS (an ECC_NIST_P256
// signing key, RAW ECDSA_SHA_256 signatures that verify, its public key) and
// of Secrets Manager, and stops with its whole process group.
func TestMoto(t *testing.T) {
	logs := t.TempDir()
	ctx := context.Background()
	begin := time.Now()
	p, err := StartMoto(ctx, MotoOptions{Python: motoPython(t), LogFile: filepath.Join(logs, "moto.log")})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("moto ready at %s in %s", p.Endpoint(), time.Since(begin).Round(time.Millisecond))
	defer p.Stop()
	if !strings.HasPrefix(p.Endpoint(), "http://127.0.0.1:") {
		t.Errorf("endpoint %s is not on 127.0.0.1", p.Endpoint())
	}

	k := KMSClient(p.Endpoint())
	key, err := k.CreateKey(ctx, &kms.CreateKeyInput{KeySpec: kmstypes.KeySpecEccNistP256, KeyUsage: kmstypes.KeyUsageTypeSignVerify})
	if err != nil {
		t.Fatal(err)
	}
	msg := []byte("header.claims")
	sig, err := k.Sign(ctx, &kms.SignInput{KeyId: key.KeyMetadata.KeyId, Message: msg,
		MessageType: kmstypes.MessageTypeRaw, SigningAlgorithm: kmstypes.SigningAlgorithmSpecEcdsaSha256})
	if err != nil {
		t.Fatal(err)
	}
	pub, err := k.GetPublicKey(ctx, &kms.GetPublicKeyInput{KeyId: key.KeyMetadata.KeyId})
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := x509.ParsePKIXPublicKey(pub.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	digest := sha256.Sum256(msg)
	if ec, ok := parsed.(*ecdsa.PublicKey); !ok || !ecdsa.VerifyASN1(ec, digest[:], sig.Signature) {
		t.Fatalf("moto's RAW signature does not verify as ECDSA-SHA256 of the message with its public key (%T)", parsed)
	}

	sm := SecretsManagerClient(p.Endpoint())
	if _, err := sm.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String("s/providers/x"), SecretString: aws.String(`{"token":"t"}`)}); err != nil {
		t.Fatal(err)
	}
	got, err := sm.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String("s/providers/x")})
	if err != nil || aws.ToString(got.SecretString) != `{"token":"t"}` {
		t.Fatalf("GetSecretValue = %v, %v", got, err)
	}

	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	assertGroupGone(t, p)
}

func TestMotoOnATakenPortIsReported(t *testing.T) {
	l, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	_, err = StartMoto(context.Background(), MotoOptions{Python: motoPython(t), Port: port, LogFile: filepath.Join(t.TempDir(), "moto.log")})
	if err == nil || !strings.Contains(err.Error(), "port "+strconv.Itoa(port)+" is already in use") {
		t.Fatalf("start on a taken port: %v", err)
	}
}

// fakePython writes an executable python3 into a new directory that
// records its arguments and exits with status, and returns the directory.
func fakePython(t *testing.T, status string) (dir, calls string) {
	t.Helper()
	dir = t.TempDir()
	calls = filepath.Join(dir, "calls")
	script := "#!/bin/sh\necho \"$@\" >> " + calls + "\nexit " + status + "\n"
	if err := os.WriteFile(filepath.Join(dir, "python3"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, calls
}

func TestMotoPythonIsTheFirstOnPathThatImportsMoto(t *testing.T) {
	real, err := resolvePython(context.Background())
	if err != nil {
		t.Fatalf("this machine has no Python with moto: %v", err)
	}
	broken, calls := fakePython(t, "1")
	good := t.TempDir()
	if err := os.Symlink(real, filepath.Join(good, "python3")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", broken+string(filepath.ListSeparator)+good)
	got, err := resolvePython(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := importsMoto(context.Background(), got); err != nil {
		t.Fatalf("resolved %s, which cannot import moto: %v", got, err)
	}
	if b, _ := os.ReadFile(calls); strings.Contains(string(b), "pip") {
		t.Fatalf("pip was run although a Python on PATH has moto: %s", b)
	}
}

func TestNoPythonWithMotoInstallsItThenSaysWhatIsMissing(t *testing.T) {
	// No python3 on PATH can import moto, the pyenv one is absent, and
	// pip fails (as it would without a registry): the error names each.
	broken, calls := fakePython(t, "1")
	t.Setenv("PATH", broken)
	old := pyenvPython
	pyenvPython = filepath.Join(t.TempDir(), "no-such-python3")
	t.Cleanup(func() { pyenvPython = old })

	_, err := resolvePython(context.Background())
	if err == nil {
		t.Fatal("resolved a Python although none can import moto")
	}
	for _, want := range []string{"import moto", pyenvPython, "pip install moto[server]", filepath.Join(broken, "python3")} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q: %v", want, err)
		}
	}
	if b, _ := os.ReadFile(calls); !strings.Contains(string(b), "-m pip install --quiet moto[server]") {
		t.Errorf("moto was not installed with the python3 on PATH; its calls: %q", b)
	}

	t.Setenv("PATH", t.TempDir()) // no python3 at all
	if _, err := resolvePython(context.Background()); err == nil || !strings.Contains(err.Error(), "no python3 on PATH") {
		t.Errorf("with no python3 anywhere: %v", err)
	}
}
