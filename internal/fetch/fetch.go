// Package fetch gets the image-valued inputs of a job (image_url,
// start_image, reference_images ...): http(s) URLs through the network guard,
// and data:image URIs (the worker reads uploaded assets itself).
// Whatever the source, the bytes are capped in size and must be a PNG, JPEG
// or WebP image by their content; a Content-Type is never trusted.
package fetch

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"

	"genjobs/internal/imagetype"
	"genjobs/internal/netguard"
)

// ErrInvalid marks an input that could not be fetched or is not a usable
// image: the job fails with invalid_input.
var ErrInvalid = errors.New("invalid input")

// ErrBlocked marks an input whose address the network policy refuses: the
// job fails with input_blocked.
var ErrBlocked = netguard.ErrBlocked

// Invalid returns an error wrapping ErrInvalid whose text is exactly the
// message, for a caller resolving inputs of its own (the worker's uploaded
// assets): Invalid("image_url: the asset was not found").
func Invalid(format string, args ...any) error {
	return &inputError{msg: fmt.Sprintf(format, args...), kind: ErrInvalid}
}

// MaxRedirects is how many redirects one fetch follows.
const MaxRedirects = 5

const (
	defaultMaxBytes = 50 << 20
	defaultTimeout  = 30 * time.Second
	userAgent       = "genjobs-input-fetcher/1.0"
)

// Image is a fetched input.
type Image struct {
	ContentType string // sniffed from Data: image/png, image/jpeg or image/webp
	Data        []byte
}

// Fetcher gets job inputs. Build it with New; it is safe for concurrent use.
type Fetcher struct {
	// Client makes the HTTP requests. New's client connects only where the
	// guard allows, follows at most MaxRedirects redirects, to http and https
	// URLs only, and uses no proxy.
	Client   *http.Client
	MaxBytes int64         // the largest input accepted; 0 means 50 MiB
	Timeout  time.Duration // bounds one whole Fetch; 0 means 30 s
}

// New returns a Fetcher whose requests go through g.
func New(g *netguard.Guard) *Fetcher {
	return &Fetcher{
		Client:   &http.Client{Transport: g.Transport(), CheckRedirect: checkRedirect},
		MaxBytes: defaultMaxBytes,
		Timeout:  defaultTimeout,
	}
}

// Fetch gets the image ref of the request field field (named in error
// messages: "image_url", "reference_images[2]").
//
// Every error wraps exactly one of ErrInvalid and ErrBlocked, and its text,
// which starts with the field, may be shown to the client; but when ctx
// ends, Fetch returns ctx's error.
func (f *Fetcher) Fetch(ctx context.Context, field, ref string) (Image, error) {
	if err := ctx.Err(); err != nil {
		return Image{}, err
	}
	timeout := f.Timeout
	if timeout <= 0 {
		timeout = defaultTimeout
	}
	fctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	img, err := f.fetch(fctx, field, ref)
	switch {
	case err == nil:
		return img, nil
	case ctx.Err() != nil:
		return Image{}, ctx.Err()
	case fctx.Err() != nil:
		return Image{}, &inputError{field: field, msg: "fetch timed out after " + timeout.String(), kind: ErrInvalid, cause: err}
	}
	return Image{}, err
}

func (f *Fetcher) fetch(ctx context.Context, field, ref string) (Image, error) {
	if ref == "" {
		return Image{}, invalid(field, nil, "is empty")
	}
	if len(ref) >= 5 && strings.EqualFold(ref[:5], "data:") {
		return f.decodeData(field, ref[5:])
	}
	u, err := url.Parse(ref)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Image{}, invalid(field, err, "is not an http(s) URL, a data:image URI or an asset URL")
	}
	return f.get(ctx, field, u)
}

// get downloads u.
func (f *Fetcher) get(ctx context.Context, field string, u *url.URL) (Image, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return Image{}, invalid(field, err, "is not a valid URL")
	}
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set("Accept", "image/png, image/jpeg, image/webp")
	resp, err := f.Client.Do(req)
	if err != nil {
		return Image{}, requestError(field, u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return Image{}, invalid(field, nil, "the server answered %d", resp.StatusCode)
	}
	limit := f.maxBytes()
	if resp.ContentLength > limit {
		return Image{}, invalid(field, nil, "the file is larger than %s", size(limit))
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return Image{}, invalid(field, err, "the download from %s was cut off", resp.Request.URL.Host)
	}
	return f.image(field, data)
}

// decodeData decodes the data URI ref, "data:" already cut off.
func (f *Fetcher) decodeData(field, ref string) (Image, error) {
	meta, payload, ok := strings.Cut(ref, ",")
	switch strings.ToLower(meta) {
	case "image/png;base64", "image/jpeg;base64", "image/webp;base64":
	default:
		ok = false
	}
	if !ok {
		return Image{}, invalid(field, nil, "a data URI must start with data:image/png;base64, data:image/jpeg;base64 or data:image/webp;base64")
	}
	// The decoder skips line breaks even when strict; a data URI has none.
	data, err := base64.StdEncoding.Strict().DecodeString(payload)
	if err != nil || strings.ContainsAny(payload, "\r\n") {
		return Image{}, invalid(field, err, "the data URI is not valid base64")
	}
	return f.image(field, data)
}

// image checks that data is an image of an accepted type and size.
func (f *Fetcher) image(field string, data []byte) (Image, error) {
	if limit := f.maxBytes(); int64(len(data)) > limit {
		return Image{}, invalid(field, nil, "the file is larger than %s", size(limit))
	}
	if len(data) == 0 {
		return Image{}, invalid(field, nil, "the file is empty")
	}
	ct, ok := imagetype.Sniff(data)
	if !ok {
		msg := "not a PNG, JPEG or WebP image"
		if seen, _, _ := mime.ParseMediaType(http.DetectContentType(data)); seen != "application/octet-stream" {
			msg += " (it looks like " + seen + ")"
		}
		return Image{}, invalid(field, nil, "%s", msg)
	}
	return Image{ContentType: ct, Data: data}, nil
}

func (f *Fetcher) maxBytes() int64 {
	if f.MaxBytes <= 0 {
		return defaultMaxBytes
	}
	return f.MaxBytes
}

var errTooManyRedirects = errors.New("too many redirects")

type schemeError struct{ scheme string }

func (e *schemeError) Error() string { return "redirect to scheme " + e.scheme }

// checkRedirect follows at most MaxRedirects redirects, to http and https
// URLs only. The guard checks each hop's address when it connects.
func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > MaxRedirects {
		return errTooManyRedirects
	}
	if s := req.URL.Scheme; s != "http" && s != "https" {
		return &schemeError{scheme: s}
	}
	return nil
}

// requestError turns the failed request for u into a message for the
// client, naming the URL that failed (a redirect's target, say).
func requestError(field string, u *url.URL, err error) error {
	if ue, ok := errors.AsType[*url.Error](err); ok {
		if failed, perr := url.Parse(ue.URL); perr == nil && failed.Host != "" {
			u = failed
		}
	}
	host := u.Host
	if be, ok := errors.AsType[*netguard.BlockedError](err); ok {
		// The address is named only when the client wrote it: what a name
		// resolves to inside the deployment's network stays private.
		msg := be.Error()
		if _, perr := netip.ParseAddr(u.Hostname()); perr != nil {
			msg = "the host " + u.Hostname() + " resolves to an address that is not allowed"
		}
		return &inputError{field: field, msg: msg, kind: ErrBlocked, cause: err}
	}
	var msg string
	if se, ok := errors.AsType[*schemeError](err); ok {
		msg = fmt.Sprintf("a redirect leads to a %s: URL; only http and https are followed", se.scheme)
	} else if errors.Is(err, errTooManyRedirects) {
		msg = fmt.Sprintf("more than %d redirects", MaxRedirects)
	} else if de, ok := errors.AsType[*net.DNSError](err); ok {
		msg = "the host " + u.Hostname() + " could not be resolved"
		if de.IsNotFound {
			msg = "the host " + u.Hostname() + " was not found"
		}
	} else if errors.Is(err, syscall.ECONNREFUSED) {
		msg = host + " refused the connection"
	} else if _, ok := errors.AsType[*tls.CertificateVerificationError](err); ok {
		msg = "the TLS certificate of " + host + " is not valid"
	} else if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		msg = host + " did not answer in time"
	} else {
		msg = "could not download the file from " + host
	}
	return &inputError{field: field, msg: msg, kind: ErrInvalid, cause: err}
}

// size formats n bytes the way a person reads them: "50 MiB", "1500 bytes".
func size(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// inputError is what Fetch returns: a message for the client, the sentinel it
// stands for, and for logs the error behind it.
type inputError struct {
	field string
	msg   string
	kind  error // ErrInvalid or ErrBlocked
	cause error // may hold Go internals: logs only
}

func invalid(field string, cause error, format string, args ...any) error {
	return &inputError{field: field, msg: fmt.Sprintf(format, args...), kind: ErrInvalid, cause: cause}
}

func (e *inputError) Error() string {
	if e.field == "" {
		return e.msg
	}
	return e.field + ": " + e.msg
}

// Is makes errors.Is match the error's kind, and only that: the cause is not
// unwrapped, so that a blocked redirect inside an invalid answer cannot match
// both.
func (e *inputError) Is(target error) bool { return target == e.kind }

// LogValue adds the cause when the error is logged with slog.
func (e *inputError) LogValue() slog.Value {
	attrs := []slog.Attr{slog.String("message", e.Error())}
	if e.cause != nil {
		attrs = append(attrs, slog.String("cause", e.cause.Error()))
	}
	return slog.GroupValue(attrs...)
}
