package cogserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Outputs as URLs: Cog's --upload-url. With Options.UploadURL set, each
// output file is PUT to {UploadURL}/{file name} with its Content-Type and
// X-Prediction-ID (the prediction's id, as Cog's Python server sends it),
// and the prediction's output is the URL the upload answered in Location
// (else the one it was PUT to), its query removed. A failed upload fails
// the prediction.
//
// The server also is such an upload target: PUT /uploads/{name} keeps the
// file for UploadTTL and GET /uploads/{name} serves it. So
// -upload-url http://127.0.0.1:5050/uploads/ gives outputs as URLs of the
// server itself, which a webhook carries in a few hundred bytes however large
// the output (Lambda refuses an event over 6 MB, so a callback route cannot
// take a large data: URI).

// UploadTTL is how long the upload store keeps a file: Replicate keeps a
// prediction's outputs an hour.
const UploadTTL = time.Hour

// MaxUploadBytes bounds one file of the upload store.
const MaxUploadBytes = 2 << 30

// upload PUTs the output o to the upload URL and returns the output's URL.
func (p *prediction) upload(ctx context.Context, o output) (string, error) {
	base := p.s.opt.UploadURL
	if !strings.HasSuffix(base, "/") {
		base += "/"
	}
	target := base + url.PathEscape(filepath.Base(o.path))
	f, err := os.Open(o.path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, target, f)
	if err != nil {
		return "", err
	}
	req.ContentLength = fi.Size()
	req.Header.Set("Content-Type", o.contentType)
	req.Header.Set("X-Prediction-ID", p.id)
	req.Header.Set("User-Agent", "genjobs-cogserver")
	resp, err := p.s.opt.Webhooks.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return "", fmt.Errorf("the upload to %s answered %d", target, resp.StatusCode)
	}
	u := resp.Request.URL // after redirects
	if loc := resp.Header.Get("Location"); loc != "" {
		if lu, err := u.Parse(loc); err == nil {
			u = lu
		}
	}
	out := *u
	out.RawQuery, out.ForceQuery = "", false
	return out.String(), nil
}

// uploads is the server's own upload target.
type uploads struct {
	dir string

	mu    sync.Mutex
	files map[string]stored
}

type stored struct {
	contentType string
	expires     time.Time
}

// uploadName is what a stored file may be called: no path, no dot first.
var uploadName = regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9._-]{0,200}$`)

func (s *Server) putUpload(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if !uploadName.MatchString(name) {
		writeJSON(w, http.StatusBadRequest, map[string]string{"detail": "the file name may hold letters, digits, '.', '_' and '-' only"})
		return
	}
	if r.ContentLength > MaxUploadBytes {
		writeJSON(w, http.StatusRequestEntityTooLarge, map[string]string{"detail": "the file is larger than " + strconv.Itoa(MaxUploadBytes) + " bytes"})
		return
	}
	s.uploads.sweep(s.opt.Clock.Now())
	tmp, err := os.CreateTemp(s.uploads.dir, ".put-*")
	if err != nil {
		s.opt.Log.Error("upload store", "error", err.Error())
		writeJSON(w, http.StatusInternalServerError, map[string]string{"detail": "internal error"})
		return
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	n, err := io.Copy(tmp, io.LimitReader(r.Body, MaxUploadBytes+1))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	switch {
	case err != nil:
		writeJSON(w, http.StatusBadRequest, map[string]string{"detail": "the upload was cut off"})
		return
	case n > MaxUploadBytes:
		writeJSON(w, http.StatusRequestEntityTooLarge, map[string]string{"detail": "the file is larger than " + strconv.Itoa(MaxUploadBytes) + " bytes"})
		return
	case r.ContentLength >= 0 && n != r.ContentLength:
		writeJSON(w, http.StatusBadRequest, map[string]string{"detail": "the upload was cut off"})
		return
	}
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		ct = "application/octet-stream"
	}
	u := s.uploads
	u.mu.Lock()
	err = os.Rename(tmp.Name(), filepath.Join(u.dir, name))
	if err == nil {
		u.files[name] = stored{contentType: ct, expires: s.opt.Clock.Now().Add(UploadTTL)}
	}
	u.mu.Unlock()
	if err != nil {
		s.opt.Log.Error("upload store", "error", err.Error())
		writeJSON(w, http.StatusInternalServerError, map[string]string{"detail": "internal error"})
		return
	}
	w.WriteHeader(http.StatusCreated)
}

func (s *Server) getUpload(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	u := s.uploads
	u.mu.Lock()
	st, ok := u.files[name]
	var f *os.File
	var err error
	if ok && s.opt.Clock.Now().Before(st.expires) {
		f, err = os.Open(filepath.Join(u.dir, name)) // opened under the lock: a sweep cannot pull it away
	}
	u.mu.Unlock()
	if f == nil || err != nil {
		writeJSON(w, http.StatusNotFound, map[string]string{"detail": "Not Found"})
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		writeJSON(w, http.StatusNotFound, map[string]string{"detail": "Not Found"})
		return
	}
	w.Header().Set("Content-Type", st.contentType)
	http.ServeContent(w, r, "", fi.ModTime(), f)
}

// sweep deletes the files past their time.
func (u *uploads) sweep(now time.Time) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for name, st := range u.files {
		if now.After(st.expires) {
			if err := os.Remove(filepath.Join(u.dir, name)); err == nil || errors.Is(err, os.ErrNotExist) {
				delete(u.files, name)
			}
		}
	}
}
