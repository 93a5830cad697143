// Package kmstest is a protocol-level AWS KMS for tests: an httptest server
// that speaks the awsJson1_1 protocol of the real service for Sign and
// GetPublicKey, backed by real P-256 keys, so that the real SDK client (and
// the signing.KMS adapter on it) can be tested without AWS. No KMS emulator
// can be installed here (docs/local-stack.md, "Emulator and SDK traps").
//
//	srv := kmstest.NewServer(t)
//	signer := signing.NewKMS(srv.Client(), srv.KeyID)
//
// It answers what the real service answers for the cases tests meet: an
// unknown key is HTTP 400 {"__type":"NotFoundException"}, a request that is
// not SigV4-signed is refused, and ThrottleSigns makes Sign answer
// ThrottlingException as KMS does past its request quota.
package kmstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/kms"
)

// The identity the server plays.
const (
	Region  = "us-east-1"
	Account = "111122223333"
)

// Server is a KMS endpoint holding P-256 signing keys.
type Server struct {
	// URL is the endpoint, for a client's BaseEndpoint.
	URL string
	// KeyID is the id of the key NewServer made (ARN: KeyARN).
	KeyID string

	http     *httptest.Server
	mu       sync.Mutex
	keys     map[string]*ecdsa.PrivateKey // by key id
	aliases  map[string]string            // alias name ("alias/x") to key id
	throttle int                          // Sign requests still to throttle
	calls    sync.Map                     // operation name to *atomic.Int64
}

// NewServer starts a server with one key for a test or benchmark; it is
// closed when the test ends.
func NewServer(t testing.TB) *Server {
	t.Helper()
	s := Start()
	t.Cleanup(s.Close)
	return s
}

// Start starts a server with one key outside a test (e.g. `make bench`);
// the caller closes it.
func Start() *Server {
	s := &Server{keys: map[string]*ecdsa.PrivateKey{}, aliases: map[string]string{}}
	s.KeyID = s.AddKey()
	s.http = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.http.URL
	return s
}

// Close shuts the server down.
func (s *Server) Close() { s.http.Close() }

// KeyARN is the ARN of the key NewServer made.
func (s *Server) KeyARN() string { return ARN(s.KeyID) }

// ARN is the ARN of the key id.
func ARN(keyID string) string {
	return "arn:aws:kms:" + Region + ":" + Account + ":key/" + keyID
}

// AddKey makes another key (a rotation's new or old key) and returns its id.
func (s *Server) AddKey() string {
	// Neither fails: crypto/rand's reader does not return errors.
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic("kmstest: generate key: " + err.Error())
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	id := fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
	s.mu.Lock()
	s.keys[id] = priv
	s.mu.Unlock()
	return id
}

// SetAlias points the alias (e.g. "alias/webhooks") at a key id, as
// UpdateAlias does.
func (s *Server) SetAlias(alias, keyID string) {
	s.mu.Lock()
	s.aliases[alias] = keyID
	s.mu.Unlock()
}

// PublicKey is the public half of a key, from the server's own key rather
// than from GetPublicKey: what a test verifies against.
func (s *Server) PublicKey(keyID string) *ecdsa.PublicKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	if k, ok := s.keys[keyID]; ok {
		return &k.PublicKey
	}
	return nil
}

// ThrottleSigns makes the next n Sign requests answer HTTP 400
// ThrottlingException. The SDK retries those, so a client with the default
// retryer sees an error only when all its attempts are throttled.
func (s *Server) ThrottleSigns(n int) {
	s.mu.Lock()
	s.throttle = n
	s.mu.Unlock()
}

// Calls is how many requests the server has had for an operation ("Sign",
// "GetPublicKey"), answered with an error or not.
func (s *Server) Calls(operation string) int64 {
	if c, ok := s.calls.Load(operation); ok {
		return c.(*atomic.Int64).Load()
	}
	return 0
}

// Client returns an SDK client pointed at the server, with static
// credentials and the server's region; opts adjust it further (e.g. the
// retryer). It reads nothing from the environment.
func (s *Server) Client(opts ...func(*kms.Options)) *kms.Client {
	cfg := aws.Config{
		Region:      Region,
		Credentials: credentials.NewStaticCredentialsProvider("kmstest", "kmstest", ""),
	}
	return kms.NewFromConfig(cfg, append([]func(*kms.Options){func(o *kms.Options) {
		o.BaseEndpoint = aws.String(s.URL)
	}}, opts...)...)
}

// resolve finds a key by id, ARN, alias name or alias ARN.
func (s *Server) resolve(ref string) (string, *ecdsa.PrivateKey, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := ref
	if i := strings.Index(ref, ":key/"); strings.HasPrefix(ref, "arn:") && i >= 0 {
		id = ref[i+len(":key/"):]
	} else if i := strings.Index(ref, ":alias/"); strings.HasPrefix(ref, "arn:") && i >= 0 {
		id = s.aliases[ref[i+1:]]
	} else if strings.HasPrefix(ref, "alias/") {
		id = s.aliases[ref]
	}
	k, ok := s.keys[id]
	return id, k, ok
}

func (s *Server) count(op string) {
	c, _ := s.calls.LoadOrStore(op, new(atomic.Int64))
	c.(*atomic.Int64).Add(1)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	target := r.Header.Get("X-Amz-Target")
	op, ok := strings.CutPrefix(target, "TrentService.")
	if r.Method != http.MethodPost || r.URL.Path != "/" || !ok {
		fail(w, http.StatusBadRequest, "UnknownOperationException", "not a KMS request: "+r.Method+" "+r.URL.Path+" "+target)
		return
	}
	s.count(op)
	if ct := r.Header.Get("Content-Type"); ct != "application/x-amz-json-1.1" {
		fail(w, http.StatusBadRequest, "SerializationException", "Content-Type "+ct)
		return
	}
	if !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ") {
		fail(w, http.StatusBadRequest, "MissingAuthenticationTokenException", "request is not SigV4-signed")
		return
	}
	switch op {
	case "Sign":
		s.sign(w, r)
	case "GetPublicKey":
		s.getPublicKey(w, r)
	default:
		fail(w, http.StatusBadRequest, "UnknownOperationException", "kmstest does not do "+op)
	}
}

// sign answers TrentService.Sign. Binary members are base64 in JSON, which
// encoding/json does for []byte.
func (s *Server) sign(w http.ResponseWriter, r *http.Request) {
	var in struct {
		KeyId            string
		Message          []byte
		MessageType      string
		SigningAlgorithm string
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		fail(w, http.StatusBadRequest, "SerializationException", err.Error())
		return
	}
	s.mu.Lock()
	throttled := s.throttle > 0
	if throttled {
		s.throttle--
	}
	s.mu.Unlock()
	if throttled {
		fail(w, http.StatusBadRequest, "ThrottlingException", "Rate exceeded")
		return
	}
	id, key, ok := s.resolve(in.KeyId)
	if !ok {
		fail(w, http.StatusBadRequest, "NotFoundException", "Key '"+in.KeyId+"' does not exist")
		return
	}
	if in.SigningAlgorithm != "ECDSA_SHA_256" {
		fail(w, http.StatusBadRequest, "InvalidKeyUsageException", "signing algorithm "+in.SigningAlgorithm+" is not valid for this key")
		return
	}
	digest := in.Message
	switch in.MessageType {
	case "DIGEST":
		if len(digest) != sha256.Size {
			fail(w, http.StatusBadRequest, "ValidationException", "a DIGEST for ECDSA_SHA_256 must be 32 bytes")
			return
		}
	case "", "RAW":
		sum := sha256.Sum256(in.Message)
		digest = sum[:]
	default:
		fail(w, http.StatusBadRequest, "ValidationException", "MessageType "+in.MessageType)
		return
	}
	der, err := ecdsa.SignASN1(rand.Reader, key, digest)
	if err != nil {
		fail(w, http.StatusInternalServerError, "KMSInternalException", err.Error())
		return
	}
	reply(w, map[string]any{"KeyId": ARN(id), "Signature": der, "SigningAlgorithm": "ECDSA_SHA_256"})
}

// getPublicKey answers TrentService.GetPublicKey with the DER SPKI.
func (s *Server) getPublicKey(w http.ResponseWriter, r *http.Request) {
	var in struct{ KeyId string }
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		fail(w, http.StatusBadRequest, "SerializationException", err.Error())
		return
	}
	id, key, ok := s.resolve(in.KeyId)
	if !ok {
		fail(w, http.StatusBadRequest, "NotFoundException", "Key '"+in.KeyId+"' does not exist")
		return
	}
	spki, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		fail(w, http.StatusInternalServerError, "KMSInternalException", err.Error())
		return
	}
	reply(w, map[string]any{
		"KeyId":                 ARN(id),
		"PublicKey":             spki,
		"KeySpec":               "ECC_NIST_P256",
		"CustomerMasterKeySpec": "ECC_NIST_P256",
		"KeyUsage":              "SIGN_VERIFY",
		"SigningAlgorithms":     []string{"ECDSA_SHA_256"},
	})
}

func reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	_ = json.NewEncoder(w).Encode(v)
}

// fail answers an error the way KMS does: the type in __type, HTTP 400 for
// the caller's errors.
func fail(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.Header().Set("X-Amzn-ErrorType", typ)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": typ, "message": msg})
}
