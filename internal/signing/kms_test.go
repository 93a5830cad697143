package signing_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"math/big"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/kms/types"
	"github.com/aws/smithy-go"

	"genjobs/internal/clock"
	"genjobs/internal/emulator"
	"genjobs/internal/signing"
	"genjobs/internal/signing/kmssigner"
	"genjobs/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// verifyRS checks a 64-byte r||s with the standard library, independently
// of the package's own code.
func verifyRS(pub *ecdsa.PublicKey, digest []byte, sig []byte) bool {
	if len(sig) != signing.SignatureSize {
		return false
	}
	return ecdsa.Verify(pub, digest, new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:]))
}

// calls counts a KMS client's requests by operation.
type calls struct {
	mu   sync.Mutex
	n    map[string]int
	next *http.Client
}

func (c *calls) Do(r *http.Request) (*http.Response, error) {
	op := testenv.Operation(r)
	c.mu.Lock()
	c.n[op]++
	c.mu.Unlock()
	return c.next.Do(r)
}

func (c *calls) count(op string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[op]
}

// motoKMS is a client of the tests' moto KMS (or of endpoint, a Faults
// proxy in front of it) that counts its requests.
func motoKMS(t testing.TB, endpoint ...string) (*kms.Client, *calls) {
	t.Helper()
	ep := testenv.MotoEndpoint()
	if len(endpoint) > 0 {
		ep = endpoint[0]
	}
	c := &calls{n: map[string]int{}, next: &http.Client{}}
	client := kms.New(emulator.KMSClient(ep).Options(), func(o *kms.Options) { o.HTTPClient = c })
	return client, c
}

// newKey makes an ECC_NIST_P256 signing key in moto, as template.yaml's,
// and returns its ARN.
func newKey(t testing.TB) string {
	t.Helper()
	out, err := testenv.KMS(t).CreateKey(context.Background(), &kms.CreateKeyInput{
		KeySpec: types.KeySpecEccNistP256, KeyUsage: types.KeyUsageTypeSignVerify,
	})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.KeyMetadata.Arn)
}

// alias names key by a new alias of this test and returns it.
func alias(t testing.TB, key string) string {
	t.Helper()
	name := "alias/" + testenv.UniqueName(t, "webhooks")
	if _, err := testenv.KMS(t).CreateAlias(context.Background(), &kms.CreateAliasInput{AliasName: aws.String(name), TargetKeyId: aws.String(key)}); err != nil {
		t.Fatal(err)
	}
	return name
}

func moveAlias(t testing.TB, name, key string) {
	t.Helper()
	if _, err := testenv.KMS(t).UpdateAlias(context.Background(), &kms.UpdateAliasInput{AliasName: aws.String(name), TargetKeyId: aws.String(key)}); err != nil {
		t.Fatal(err)
	}
}

// motoPublicKey is the key moto holds, read and parsed without our code.
func motoPublicKey(t testing.TB, key string) *ecdsa.PublicKey {
	t.Helper()
	out, err := testenv.KMS(t).GetPublicKey(context.Background(), &kms.GetPublicKeyInput{KeyId: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	pub, err := x509.ParsePKIXPublicKey(out.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return pub.(*ecdsa.PublicKey)
}

// TestKMSSignaturesVerify signs 3,000 messages through the SDK and moto's
// KMS (MessageType RAW), concurrently and from a cold signer, and verifies
// every one against moto's own key as ECDSA-SHA256 of the message; a
// subset goes the whole way through WebhookToken and Verify. About one r or
// s in 256 is shorter than 32 bytes in DER: the test insists on having met
// some, so a conversion without left-padding cannot pass.
func TestKMSSignaturesVerify(t *testing.T) {
	const (
		total   = 3_000
		workers = 8
		jwtEach = 20 // every 20th signature is a webhook token
	)
	key := newKey(t)
	client, c := motoKMS(t)
	signer := kmssigner.New(client, key)
	want := motoPublicKey(t, key)
	keys := signing.NewKeySet(mustPub(t, want))
	ctx := context.Background()
	now := time.Unix(1_800_000_000, 0)

	var (
		next                   atomic.Int64
		shortR, shortS, tokens atomic.Int64
		wg                     sync.WaitGroup
		once                   sync.Once
		firstErr               error
	)
	failed := func(err error) { once.Do(func() { firstErr = err }) }
	start := make(chan struct{})
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for {
				i := next.Add(1) - 1
				if i >= total || firstErr != nil {
					return
				}
				if i%jwtEach == 0 {
					body := []byte(`{"id":"job_` + itoa(i) + `","status":"completed"}`)
					c := signing.WebhookClaims{Issuer: "https://api.example.com", Audience: "https://hooks.example.com/h?i=" + itoa(i),
						Subject: "job_" + itoa(i), ID: "wh_" + itoa(i), IssuedAt: now, Body: body}
					tok, err := signing.WebhookToken(ctx, signer, c)
					if err != nil {
						failed(err)
						return
					}
					got, err := signing.Verify(tok, body, keys, signing.Expect{Audience: c.Audience, Issuer: c.Issuer, Now: now})
					if err != nil {
						failed(errors.New("token " + itoa(i) + ": " + err.Error()))
						return
					}
					if got.ID != c.ID || got.Subject != c.Subject {
						failed(errors.New("token " + itoa(i) + ": claims came back as " + got.ID + "/" + got.Subject))
						return
					}
					tokens.Add(1)
					continue
				}
				var msg [8]byte
				binary.BigEndian.PutUint64(msg[:], uint64(i))
				sig, err := signer.Sign(ctx, msg[:])
				if err != nil {
					failed(err)
					return
				}
				digest := sha256.Sum256(msg[:])
				if !verifyRS(want, digest[:], sig) {
					failed(errors.New("signature " + itoa(i) + " does not verify"))
					return
				}
				if sig[0] == 0 {
					shortR.Add(1)
				}
				if sig[32] == 0 {
					shortS.Add(1)
				}
			}
		}()
	}
	begin := time.Now()
	close(start)
	wg.Wait()
	if firstErr != nil {
		t.Fatal(firstErr)
	}
	t.Logf("%d signatures through moto in %s", total, time.Since(begin).Round(time.Millisecond))
	if got := c.count("Sign"); got != total {
		t.Errorf("Sign requests: %d, want %d", got, total)
	}
	if got := c.count("GetPublicKey"); got != 1 {
		t.Errorf("GetPublicKey requests: %d, want 1 for the life of the signer", got)
	}
	if tokens.Load() != total/jwtEach {
		t.Errorf("verified %d tokens, want %d", tokens.Load(), total/jwtEach)
	}
	// Expected about 11 each over 2,850 raw signatures; none at all has a
	// chance of about 1.5e-5 each.
	t.Logf("r shorter than 32 bytes: %d, s: %d", shortR.Load(), shortS.Load())
	if shortR.Load() == 0 || shortS.Load() == 0 {
		t.Fatalf("no signature with a short r (%d) or s (%d): the left-padding went untested", shortR.Load(), shortS.Load())
	}
}

func TestKMSPublicKey(t *testing.T) {
	key := newKey(t)
	client, c := motoKMS(t)
	signer := kmssigner.New(client, key)
	if n := c.count("GetPublicKey"); n != 0 {
		t.Fatalf("kmssigner.New made %d requests; it must do no I/O", n)
	}
	pub, err := signer.PublicKey(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// moto answers no KeySpec: the key is taken from its DER alone.
	if !pub.Key.Equal(motoPublicKey(t, key)) {
		t.Fatal("GetPublicKey's key is not moto's key")
	}
	if want := mustPub(t, motoPublicKey(t, key)).ID; pub.ID != want {
		t.Fatalf("kid %q, want the thumbprint %q", pub.ID, want)
	}
}

// A key that cannot sign ES256 is refused by name, whatever KMS says of it.
func TestKMSRefusesOtherKeys(t *testing.T) {
	ctx := context.Background()
	for spec, usage := range map[types.KeySpec]types.KeyUsageType{
		types.KeySpecEccNistP384:      types.KeyUsageTypeSignVerify,
		types.KeySpecRsa2048:          types.KeyUsageTypeSignVerify,
		types.KeySpecSymmetricDefault: types.KeyUsageTypeEncryptDecrypt,
	} {
		out, err := testenv.KMS(t).CreateKey(ctx, &kms.CreateKeyInput{KeySpec: spec, KeyUsage: usage})
		if err != nil {
			t.Fatal(err)
		}
		client, _ := motoKMS(t)
		_, err = kmssigner.New(client, *out.KeyMetadata.KeyId).PublicKey(ctx)
		if err == nil || !strings.Contains(err.Error(), *out.KeyMetadata.KeyId) {
			t.Errorf("%s key: %v; want a refusal naming the key", spec, err)
		}
	}
}

// Concurrent first callers share one GetPublicKey.
func TestKMSPublicKeyOnceUnderConcurrency(t *testing.T) {
	client, c := motoKMS(t)
	signer := kmssigner.New(client, newKey(t))
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := signer.Sign(context.Background(), []byte("x"))
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := c.count("GetPublicKey"); n != 1 {
		t.Fatalf("GetPublicKey requests: %d, want 1", n)
	}
}

func TestKMSKeyNotFound(t *testing.T) {
	client, c := motoKMS(t)
	name := "alias/" + testenv.UniqueName(t, "missing")
	signer := kmssigner.New(client, name)
	_, err := signer.Sign(context.Background(), []byte("x"))
	if !errors.Is(err, kmssigner.ErrKeyNotFound) {
		t.Fatalf("err = %v, want ErrKeyNotFound", err)
	}
	var nf *types.NotFoundException
	if !errors.As(err, &nf) {
		t.Fatalf("err = %v, want the SDK's NotFoundException inside", err)
	}
	if !strings.Contains(err.Error(), name) {
		t.Fatalf("err = %q does not name the key", err)
	}
	if _, err := signing.WebhookToken(context.Background(), signer, claims(time.Now(), nil)); !errors.Is(err, kmssigner.ErrKeyNotFound) {
		t.Fatalf("WebhookToken err = %v, want ErrKeyNotFound", err)
	}
	// A failed fetch is not remembered: the key may appear (a deployment
	// racing the key's creation) and the next caller asks again.
	if _, err := testenv.KMS(t).CreateAlias(context.Background(), &kms.CreateAliasInput{AliasName: aws.String(name), TargetKeyId: aws.String(newKey(t))}); err != nil {
		t.Fatal(err)
	}
	if _, err := signer.PublicKey(context.Background()); err != nil {
		t.Fatalf("after the alias appeared: %v", err)
	}
	if n := c.count("GetPublicKey"); n != 3 {
		t.Fatalf("GetPublicKey requests: %d, want 3", n)
	}
}

// A signer configured by alias keeps signing with the key it published even
// after the alias moves: the kid always names the key that signed.
func TestKMSAliasMovedKeepsKey(t *testing.T) {
	client, _ := motoKMS(t)
	name := alias(t, newKey(t))
	signer := kmssigner.New(client, name)
	ctx := context.Background()
	first, err := signer.PublicKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	newer := newKey(t)
	moveAlias(t, name, newer)

	msg := []byte("after the move")
	sig, err := signer.Sign(ctx, msg)
	if err != nil {
		t.Fatal(err)
	}
	digest := sha256.Sum256(msg)
	if !verifyRS(first.Key, digest[:], sig) {
		t.Fatal("after the alias moved, the signer signed with a key other than the one it publishes")
	}
	// A new process (cold start) takes the new key.
	fresh, err := kmssigner.New(client, name).PublicKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !fresh.Key.Equal(motoPublicKey(t, newer)) || fresh.ID == first.ID {
		t.Fatal("a new signer did not take the alias's new key")
	}
}

// With MaxAge (the JWKS's), PublicKey reads the key again once its copy is
// that old: an alias's new key is published; a read that fails keeps the
// copy rather than failing the JWKS.
func TestKMSPublicKeyMaxAge(t *testing.T) {
	ctx := context.Background()
	faults := testenv.NewFaults(t, testenv.MotoEndpoint())
	client, c := motoKMS(t, faults.URL)
	first := newKey(t)
	name := alias(t, first)
	now := &clock.Fixed{T: time.Unix(1_800_000_000, 0)}
	signer := kmssigner.New(client, name)
	signer.MaxAge, signer.Clock = time.Minute, now
	if _, err := signer.PublicKey(ctx); err != nil {
		t.Fatal(err)
	}
	newer := newKey(t)
	moveAlias(t, name, newer)

	now.T = now.T.Add(59 * time.Second)
	if got, err := signer.PublicKey(ctx); err != nil || !got.Key.Equal(motoPublicKey(t, first)) || c.count("GetPublicKey") != 1 {
		t.Fatalf("before MaxAge: %v, %d reads; want the copy", err, c.count("GetPublicKey"))
	}
	now.T = now.T.Add(time.Second)
	faults.Set("GetPublicKey", testenv.Unavailable)
	if got, err := signer.PublicKey(ctx); err != nil || !got.Key.Equal(motoPublicKey(t, first)) {
		t.Fatalf("at MaxAge with KMS down: %v; want the copy kept", err)
	}
	faults.Clear()
	if got, err := signer.PublicKey(ctx); err != nil || !got.Key.Equal(motoPublicKey(t, newer)) {
		t.Fatalf("at MaxAge with KMS back: %v; want the alias's new key", err)
	}
}

// After moto restarts (an empty KMS) the local stack makes its key again
// under the same alias. The signer's first Sign meets a key that is gone and
// fails; the next resolves the alias again and signs with the new key.
// (moto signs with keys disabled or pending deletion, so only a real
// restart shows this.)
func TestKMSSignerDropsAKeyThatIsGone(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	py, err := emulator.MotoPython(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// A moto of its own: the shared one must never get a signal.
	mo, err := emulator.StartMoto(ctx, emulator.MotoOptions{Python: py, LogFile: filepath.Join(t.TempDir(), "moto.log")})
	if err != nil {
		t.Fatal(err)
	}
	admin := emulator.KMSClient(mo.Endpoint())
	const name = "alias/webhook-signing"
	var current atomic.Pointer[string]
	makeKey := func(ctx context.Context) error {
		out, err := admin.CreateKey(ctx, &kms.CreateKeyInput{KeySpec: types.KeySpecEccNistP256, KeyUsage: types.KeyUsageTypeSignVerify})
		if err != nil {
			return err
		}
		current.Store(out.KeyMetadata.KeyId)
		_, err = admin.CreateAlias(ctx, &kms.CreateAliasInput{AliasName: aws.String(name), TargetKeyId: out.KeyMetadata.KeyId})
		return err
	}
	if err := makeKey(ctx); err != nil {
		_ = mo.Stop()
		t.Fatal(err)
	}
	sup := emulator.Supervise(mo, emulator.SuperviseOptions{Restarted: makeKey})
	defer sup.Stop()

	signer := kmssigner.New(emulator.KMSClient(mo.Endpoint()), name)
	before, err := signer.PublicKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	first := *current.Load()
	if err := syscall.Kill(mo.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for *current.Load() == first {
		if ctx.Err() != nil {
			t.Fatal("moto was not restarted with a new key")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := signer.Sign(ctx, []byte("x")); !errors.Is(err, kmssigner.ErrKeyNotFound) {
		t.Fatalf("Sign with the key moto lost: %v; want ErrKeyNotFound", err)
	}
	tok, err := signing.WebhookToken(ctx, signer, claims(time.Now(), nil))
	if err != nil {
		t.Fatalf("the Sign after: %v; want the alias's new key", err)
	}
	after, err := signer.PublicKey(ctx)
	if err != nil || after.ID == before.ID {
		t.Fatalf("the public key after: %v, kid %s (before %s); want the new key's", err, after.ID, before.ID)
	}
	if _, err := signing.Verify(tok, nil, signing.NewKeySet(after), signing.Expect{Audience: audience, Now: time.Now()}); err != nil {
		t.Fatalf("the token after is not the new key's: %v", err)
	}
}

// KMS past its request quota answers ThrottlingException; the SDK retries,
// and when every attempt is throttled the caller gets the typed error.
func TestKMSThrottled(t *testing.T) {
	ctx := context.Background()
	faults := testenv.NewFaults(t, testenv.MotoEndpoint())
	client, _ := motoKMS(t, faults.URL)
	client = kms.New(client.Options(), func(o *kms.Options) { o.RetryMaxAttempts = 1 })
	signer := kmssigner.New(client, newKey(t))
	if _, err := signer.PublicKey(ctx); err != nil {
		t.Fatal(err)
	}
	faults.Set("Sign", testenv.Throttle)
	_, err := signer.Sign(ctx, []byte("x"))
	var api smithy.APIError
	if !errors.As(err, &api) || api.ErrorCode() != "ThrottlingException" {
		t.Fatalf("err = %v, want ThrottlingException", err)
	}
	faults.Clear()
	if _, err := signer.Sign(ctx, []byte("x")); err != nil {
		t.Fatalf("after the throttle: %v", err)
	}
}

// A message over KMS's 4,096 bytes is refused before any request.
func TestKMSMessageTooLong(t *testing.T) {
	client, c := motoKMS(t)
	signer := kmssigner.New(client, newKey(t))
	if _, err := signer.Sign(context.Background(), bytes.Repeat([]byte{'a'}, signing.MaxMessageSize+1)); err == nil {
		t.Fatal("a 4,097-byte message was signed")
	}
	if n := c.count("Sign") + c.count("GetPublicKey"); n != 0 {
		t.Fatalf("%d requests for a message KMS would refuse", n)
	}
}

func itoa(i int64) string { return big.NewInt(i).String() }
