package httpapi

import (
	"context"
	"log/slog"
	"net/http"

	"genjobs/internal/auth"
)

// What the handler packages beside this one (generate) answer with, so that
// every handler words its errors, logs and authenticates the same way.

// Fixed texts those handlers share.
const (
	MsgNotFound         = msgNotFound
	MsgJobNotFound      = msgJobNotFound
	MsgTooManyJobs      = msgTooManyJobs
	InvalidBodyPrefix   = invalidBodyPrefix
	InvalidHeaderPrefix = invalidHeaderPrefix
)

// WriteJSON answers status with v as JSON.
func WriteJSON(w http.ResponseWriter, status int, v any) { writeJSON(w, status, v) }

// WriteError answers status with {"error": msg}.
func WriteError(w http.ResponseWriter, status int, msg string) { writeError(w, status, msg) }

// InternalError logs err with the request id and answers the fixed message
// (503 with Retry-After for an outage).
func InternalError(w http.ResponseWriter, r *http.Request, what string, err error) {
	internalError(w, r, what, err)
}

// Authenticate resolves the request's bearer token, or answers 401 (or an
// outage) and reports false.
func Authenticate(a Authenticator, w http.ResponseWriter, r *http.Request) (auth.Principal, bool) {
	return authenticate(a, w, r)
}

// AuthenticateWith is Authenticate whose 401s carry challenge(sent) as
// their WWW-Authenticate (sent: the request had an Authorization header):
// a protected resource's, which leads a client to its authorization server.
func AuthenticateWith(a Authenticator, w http.ResponseWriter, r *http.Request, challenge func(sent bool) string) (auth.Principal, bool) {
	return authenticateWith(a, w, r, challenge)
}

// PublicBaseURL is the API's public address: the configured one, or the
// domain the request reached.
func PublicBaseURL(configured string, r *http.Request) string { return publicBaseURL(configured, r) }

// Logger is the request's logger, with its request id.
func Logger(ctx context.Context) *slog.Logger { return logger(ctx) }
