package signing_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"genjobs/internal/signing"
)

func TestLoadOrCreateLocalKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys", "webhook-signing.pem")
	first, err := signing.LoadOrCreateLocalKey(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v, want 0600", fi.Mode().Perm())
	}
	if di, _ := os.Stat(filepath.Dir(path)); di.Mode().Perm() != 0o700 {
		t.Fatalf("key directory mode %v, want 0700", di.Mode().Perm())
	}
	again, err := signing.LoadOrCreateLocalKey(path)
	if err != nil {
		t.Fatal(err)
	}
	if pubOf(t, first).ID != pubOf(t, again).ID {
		t.Fatal("the second load made another key")
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Fatalf("the key directory holds %d entries, want only the key file", len(entries))
	}
	digest := sha256.Sum256([]byte("hello"))
	sig, err := again.Sign(context.Background(), digest)
	if err != nil {
		t.Fatal(err)
	}
	if !verifyRS(pubOf(t, first).Key, digest[:], sig) {
		t.Fatal("a signature of the reloaded key does not verify with the first")
	}
}

// Functions of `make run` starting together agree on one key.
func TestLoadOrCreateLocalKeyConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "key.pem")
	ids := make([]string, 8)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k, err := signing.LoadOrCreateLocalKey(path)
			if err != nil {
				t.Error(err)
				return
			}
			ids[i] = pubOf(t, k).ID
		}()
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("concurrent creators disagree: %v", ids)
		}
	}
}

func TestLoadLocalKeyFormats(t *testing.T) {
	dir := t.TempDir()
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	p256, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	sec1, _ := x509.MarshalECPrivateKey(p256)
	k, err := signing.LoadLocalKey(write("sec1.pem", "EC PRIVATE KEY", sec1))
	if err != nil {
		t.Fatalf("SEC 1 key: %v", err)
	}
	if !pubOf(t, k).Key.Equal(&p256.PublicKey) {
		t.Fatal("SEC 1 key read as another key")
	}

	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	der384, _ := x509.MarshalPKCS8PrivateKey(p384)
	if _, err := signing.LoadLocalKey(write("p384.pem", "PRIVATE KEY", der384)); err == nil {
		t.Fatal("a P-384 key was accepted")
	}
	if _, err := signing.LoadLocalKey(write("cert.pem", "CERTIFICATE", []byte{1, 2, 3})); err == nil {
		t.Fatal("a certificate was accepted as a key")
	}
	// A file that is there but unreadable as a key is an error, never
	// silently replaced by a new key.
	junk := filepath.Join(dir, "junk.pem")
	if err := os.WriteFile(junk, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := signing.LoadOrCreateLocalKey(junk); err == nil {
		t.Fatal("a junk key file was accepted")
	}
	if b, _ := os.ReadFile(junk); string(b) != "not a key" {
		t.Fatal("a junk key file was overwritten")
	}
}
