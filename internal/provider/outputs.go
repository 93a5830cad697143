package provider

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"genjobs/internal/netguard"
)

// copyError is an output that could not be copied: permanent when trying
// again cannot help (404, too large, refused by the network policy), with
// msg for the job's error.
type copyError struct {
	msg       string
	permanent bool
	err       error
}

func (e *copyError) Error() string {
	if e.err != nil {
		return e.msg + ": " + e.err.Error()
	}
	return e.msg
}

func (e *copyError) Unwrap() error { return e.err }

// copyOutputs streams each output into the results bucket, under keys of
// this step's own (results/{job}/{step}-{i}.{ext}), so that a step racing
// it never touches its files; a file of the job's in the upload store is
// there already and taken as it is. copied is the keys this step wrote,
// the only ones it may delete: a step racing it takes the same uploaded
// files. On any failure nothing the step copied remains.
func (s *step) copyOutputs(ctx context.Context, refs []string) (keys, copied []string, err error) {
	stepID := newID()[:8]
	for i, ref := range refs {
		if key, ok := storedUpload(s.j, ref); ok {
			keys = append(keys, key)
			continue
		}
		key, err := s.copyOutput(ctx, ref, fmt.Sprintf("results/%s/%s-%d", s.j.ID, stepID, i))
		if err != nil {
			s.deleteOutputs(ctx, copied)
			return nil, nil, err
		}
		keys, copied = append(keys, key), append(copied, key)
	}
	return keys, copied, nil
}

func (s *step) deleteOutputs(ctx context.Context, keys []string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	for _, k := range keys {
		if err := s.r.Blobs.DeleteResult(ctx, k); err != nil {
			s.log.Warn("could not delete an output of a step that did not complete", "key", k, "error", err.Error())
		}
	}
}

func (s *step) copyOutput(ctx context.Context, ref, stem string) (string, error) {
	max := s.r.MaxOutputBytes
	var body io.Reader
	var contentType, name string
	var length int64 = -1
	if isDataURI(ref) {
		var err error
		if contentType, body, err = openDataURI(ref, max); err != nil {
			return "", err
		}
	} else {
		u, err := url.Parse(ref)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") {
			return "", &copyError{msg: "The provider's output is not a URL.", permanent: true}
		}
		client := &http.Client{Transport: &TrustedHosts{Hosts: []string{s.route.HostPort()}, Trusted: s.r.Trusted, Guarded: s.r.Fetch}}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, ref, nil)
		if err != nil {
			return "", &copyError{msg: "The provider's output is not a URL.", permanent: true}
		}
		resp, err := client.Do(req)
		if errors.Is(err, netguard.ErrBlocked) {
			return "", &copyError{msg: "The provider's output URL is refused by the network policy.", permanent: true, err: err}
		}
		if err != nil {
			return "", &copyError{msg: "The provider's output could not be fetched", err: err}
		}
		defer resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone || resp.StatusCode == http.StatusForbidden:
			return "", &copyError{msg: fmt.Sprintf("The provider's output could not be fetched: it answered %d.", resp.StatusCode), permanent: true}
		case resp.StatusCode != http.StatusOK:
			return "", &copyError{msg: fmt.Sprintf("The provider's output could not be fetched: it answered %d", resp.StatusCode)}
		case resp.ContentLength > max:
			return "", tooLarge(max)
		}
		body, contentType, length, name = resp.Body, resp.Header.Get("Content-Type"), resp.ContentLength, u.Path
	}
	mediaType := outputType(contentType)
	key := stem + "." + extension(mediaType, name)
	return key, storeOutput(ctx, s.r.Blobs, s.log, key, mediaType, body, length, max)
}

// tooLarge is the error of an output over max bytes.
func tooLarge(max int64) *copyError {
	return &copyError{msg: fmt.Sprintf("The provider's output is larger than %s.", size(max)), permanent: true}
}

func isDataURI(ref string) bool { return strings.HasPrefix(ref, "data:") }

// openDataURI reads a data: URI output: its declared media type and its
// bytes, decoded as they are read (base64 in one pass, no copy of the
// text). A malformed URI, or one whose base64 alone says it holds more
// than max bytes, is a permanent copyError.
func openDataURI(ref string, max int64) (contentType string, body io.Reader, err error) {
	meta, data, ok := strings.Cut(strings.TrimPrefix(ref, "data:"), ",")
	if !ok {
		return "", nil, &copyError{msg: "The provider's output is a malformed data: URI.", permanent: true}
	}
	mediaType, b64 := strings.CutSuffix(meta, ";base64")
	if !b64 {
		text, err := url.PathUnescape(data)
		if err != nil {
			return "", nil, &copyError{msg: "The provider's output is a malformed data: URI.", permanent: true}
		}
		return mediaType, strings.NewReader(text), nil
	}
	if int64(len(data))/4*3 > max+3 {
		return "", nil, tooLarge(max)
	}
	return mediaType, base64.NewDecoder(base64.StdEncoding, strings.NewReader(data)), nil
}

// outputType is the media type an output is stored as: the one its
// provider declared, else application/octet-stream.
func outputType(contentType string) string {
	mediaType, _, err := mime.ParseMediaType(contentType)
	if err != nil || mediaType == "" {
		return "application/octet-stream"
	}
	return mediaType
}

// storeOutput streams body, at most max bytes (exactly length when it is
// known), into the results bucket under key. On any failure nothing of it
// remains, and the error is a *copyError.
func storeOutput(ctx context.Context, blobs Blobs, log *slog.Logger, key, mediaType string, body io.Reader, length, max int64) error {
	up := blobs.CreateResult(ctx, key, mediaType)
	abort := func(e error) error {
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := up.Abort(actx); err != nil {
			log.Warn("could not abort an output's upload; the bucket's lifecycle rule removes it", "key", key, "error", err.Error())
		}
		return e
	}
	n, err := io.Copy(up, io.LimitReader(body, max+1))
	switch {
	case isCorrupt(err):
		return abort(&copyError{msg: "The provider's output is a malformed data: URI.", permanent: true, err: err})
	case err != nil:
		return abort(&copyError{msg: "The provider's output stopped midway", err: err})
	case n > max:
		return abort(tooLarge(max))
	case length >= 0 && n != length:
		return abort(&copyError{msg: "The provider's output stopped midway", err: io.ErrUnexpectedEOF})
	}
	if err := up.Close(); err != nil {
		return abort(&copyError{msg: "The output could not be stored", err: err})
	}
	return nil
}

func isCorrupt(err error) bool {
	var c base64.CorruptInputError
	return errors.As(err, &c)
}

// extension names an output file by its media type, else by its URL.
func extension(mediaType, urlPath string) string {
	switch mediaType {
	case "image/png":
		return "png"
	case "image/jpeg":
		return "jpg"
	case "image/webp":
		return "webp"
	case "image/gif":
		return "gif"
	case "video/mp4":
		return "mp4"
	case "video/webm":
		return "webm"
	case "model/gltf-binary":
		return "glb"
	}
	if ext := strings.TrimPrefix(path.Ext(urlPath), "."); ext != "" && len(ext) <= 5 && strings.Trim(strings.ToLower(ext), "abcdefghijklmnopqrstuvwxyz0123456789") == "" {
		return strings.ToLower(ext)
	}
	return "bin"
}

func size(n int64) string {
	if n >= 1<<30 && n%(1<<30) == 0 {
		return fmt.Sprintf("%d GiB", n>>30)
	}
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}
