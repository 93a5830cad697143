package fetch_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"genjobs/internal/fetch"
	"genjobs/internal/netguard"
	"genjobs/internal/testenv"
)

var (
	pngData  = encode(func(b *bytes.Buffer, m image.Image) error { return png.Encode(b, m) })
	jpegData = encode(func(b *bytes.Buffer, m image.Image) error { return jpeg.Encode(b, m, nil) })
	// A 1x1 lossless WebP.
	webpData = []byte("RIFF\x1a\x00\x00\x00WEBPVP8L\x0d\x00\x00\x00\x2f\x00\x00\x00\x10\x07\x10\x11\x11\x88\x88\xfe\x07\x00")
	gifData  = []byte("GIF89a\x01\x00\x01\x00\x00\x00\x00;")
)

func encode(enc func(*bytes.Buffer, image.Image) error) []byte {
	m := image.NewRGBA(image.Rect(0, 0, 4, 4))
	m.Set(1, 1, color.RGBA{R: 200, A: 255})
	var b bytes.Buffer
	if err := enc(&b, m); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// server is a test HTTP server that counts the requests it gets.
type server struct {
	*httptest.Server
	hits atomic.Int32
}

func newServer(t *testing.T, h http.HandlerFunc) *server {
	return startServer(t, "127.0.0.1:0", h)
}

func startServer(t *testing.T, addr string, h http.HandlerFunc) *server {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s here: %v", addr, err)
	}
	s := &server{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		h(w, r)
	}))
	s.Listener.Close()
	s.Listener = ln
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// serve answers with body, labelled contentType.
func serve(contentType string, body []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.Write(body)
	}
}

func redirectTo(location string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, location, http.StatusFound)
	}
}

func (s *server) addrPort() netip.AddrPort {
	return netip.MustParseAddrPort(s.Listener.Addr().String())
}

func (s *server) port() int { return int(s.addrPort().Port()) }

// fetcher returns a Fetcher whose guard refuses private destinations except
// the given test servers.
func fetcher(t *testing.T, exempt ...*server) *fetch.Fetcher {
	g := loopbackGuard(t, &netguard.Guard{})
	for _, s := range exempt {
		g.Exempt = append(g.Exempt, s.addrPort())
	}
	return fetch.New(g)
}

// wantError checks that err wraps kind and not the other sentinel, and that
// its text is want, free of Go internals.
func wantError(t *testing.T, ref string, err, kind error, want string) {
	t.Helper()
	other := fetch.ErrBlocked
	if kind == fetch.ErrBlocked {
		other = fetch.ErrInvalid
	}
	switch {
	case err == nil:
		t.Errorf("Fetch(%s): no error, want %q", ref, want)
		return
	case !errors.Is(err, kind) || errors.Is(err, other):
		t.Errorf("Fetch(%s): %v, want an error wrapping only %v", ref, err, kind)
	}
	if err.Error() != want {
		t.Errorf("Fetch(%s): %q, want %q", ref, err.Error(), want)
	}
	for _, internal := range []string{"dial", "tcp", "Get \"", "context", "net/http", "%!", "\n"} {
		if strings.Contains(err.Error(), internal) {
			t.Errorf("Fetch(%s): %q shows %q to the client", ref, err.Error(), internal)
		}
	}
}

func TestFetchSniffsTheContentNotTheHeader(t *testing.T) {
	var userAgent atomic.Value
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		userAgent.Store(r.UserAgent())
		// Every file is labelled wrongly.
		w.Header().Set("Content-Type", "text/plain")
		switch r.URL.Path {
		case "/a.png":
			w.Write(pngData)
		case "/a.jpg":
			w.Write(jpegData)
		case "/a.webp":
			w.Write(webpData)
		}
	})
	f := fetcher(t, srv)
	for _, c := range []struct {
		path, contentType string
		data              []byte
	}{
		{"/a.png", "image/png", pngData},
		{"/a.jpg", "image/jpeg", jpegData},
		{"/a.webp", "image/webp", webpData},
	} {
		img, err := f.Fetch(context.Background(), "image_url", srv.URL+c.path)
		if err != nil {
			t.Errorf("Fetch(%s): %v", c.path, err)
			continue
		}
		if img.ContentType != c.contentType || !bytes.Equal(img.Data, c.data) {
			t.Errorf("Fetch(%s) = %s, %d bytes; want %s, %d bytes", c.path, img.ContentType, len(img.Data), c.contentType, len(c.data))
		}
	}
	if ua, _ := userAgent.Load().(string); !strings.HasPrefix(ua, "genjobs-") {
		t.Errorf("User-Agent %q, want the service's own", ua)
	}
}

func TestFetchRefusesWhatIsNotAnImage(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		switch r.URL.Path {
		case "/text.png":
			w.Write([]byte("these are not the pixels you are looking for\n"))
		case "/page.png":
			w.Write([]byte("<!DOCTYPE html><html><body>Please log in</body></html>"))
		case "/anim.png":
			w.Write(gifData)
		case "/sound.png":
			w.Write([]byte("RIFF\x24\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00"))
		case "/noise.png":
			w.Write([]byte{0x00, 0x01, 0x02, 0x03, 0xfe, 0xff, 0x10, 0x11})
		}
	})
	f := fetcher(t, srv)
	for path, want := range map[string]string{
		"/text.png":  "start_image: not a PNG, JPEG or WebP image (it looks like text/plain)",
		"/page.png":  "start_image: not a PNG, JPEG or WebP image (it looks like text/html)",
		"/anim.png":  "start_image: not a PNG, JPEG or WebP image (it looks like image/gif)",
		"/sound.png": "start_image: not a PNG, JPEG or WebP image (it looks like audio/wave)",
		"/noise.png": "start_image: not a PNG, JPEG or WebP image",
		"/empty.png": "start_image: the file is empty",
	} {
		_, err := f.Fetch(context.Background(), "start_image", srv.URL+path)
		wantError(t, path, err, fetch.ErrInvalid, want)
	}
}

func TestFetchRefusesPrivateDestinations(t *testing.T) {
	srv := newServer(t, serve("image/png", pngData))
	srv6 := startServer(t, "[::1]:0", serve("image/png", pngData))
	f := fetcher(t) // nothing exempt
	for _, c := range []struct{ ref, want string }{
		{srv.URL + "/a.png", "image_url: the address 127.0.0.1 is not allowed"},
		{"http://169.254.169.254/latest/meta-data/iam/security-credentials/", "image_url: the address 169.254.169.254 is not allowed"},
		{"http://10.0.0.1/a.png", "image_url: the address 10.0.0.1 is not allowed"},
		{"https://10.0.0.1/a.png", "image_url: the address 10.0.0.1 is not allowed"},
		{fmt.Sprintf("http://[::1]:%d/a.png", srv6.port()), "image_url: the address ::1 is not allowed"},
		{fmt.Sprintf("http://[::ffff:127.0.0.1]:%d/a.png", srv.port()), "image_url: the address 127.0.0.1 is not allowed"},
		{fmt.Sprintf("http://localhost:%d/a.png", srv.port()), "image_url: the host localhost resolves to an address that is not allowed"},
	} {
		_, err := f.Fetch(context.Background(), "image_url", c.ref)
		wantError(t, c.ref, err, fetch.ErrBlocked, c.want)
	}
	if srv.hits.Load() != 0 || srv6.hits.Load() != 0 {
		t.Error("a refused fetch reached the server")
	}
}

func TestFetchRefusesARedirectToAPrivateDestination(t *testing.T) {
	inner := newServer(t, serve("image/png", pngData))
	for _, c := range []struct{ location, want string }{
		{inner.URL + "/a.png", "image_url: the address 127.0.0.1 is not allowed"},
		{fmt.Sprintf("http://localhost:%d/a.png", inner.port()), "image_url: the host localhost resolves to an address that is not allowed"},
		{"http://169.254.169.254/latest/meta-data/", "image_url: the address 169.254.169.254 is not allowed"},
		{"http://[fd00:ec2::254]/latest/meta-data/", "image_url: the address fd00:ec2::254 is not allowed"},
	} {
		outer := newServer(t, redirectTo(c.location))
		_, err := fetcher(t, outer).Fetch(context.Background(), "image_url", outer.URL+"/a.png")
		wantError(t, c.location, err, fetch.ErrBlocked, c.want)
	}
	if inner.hits.Load() != 0 {
		t.Error("the redirect reached the private server")
	}
}

func TestFetchAllowPrivate(t *testing.T) {
	srv := newServer(t, serve("image/png", pngData))
	srv6 := startServer(t, "[::1]:0", serve("image/png", pngData))
	outer := newServer(t, redirectTo(srv.URL+"/a.png"))
	f := fetch.New(loopbackGuard(t, &netguard.Guard{AllowPrivate: true}))
	for _, ref := range []string{
		srv.URL + "/a.png",
		fmt.Sprintf("http://localhost:%d/a.png", srv.port()),
		fmt.Sprintf("http://[::ffff:127.0.0.1]:%d/a.png", srv.port()),
		fmt.Sprintf("http://[::1]:%d/a.png", srv6.port()),
		outer.URL + "/redirect",
	} {
		img, err := f.Fetch(context.Background(), "image_url", ref)
		if err != nil || img.ContentType != "image/png" {
			t.Errorf("Fetch(%s) with AllowPrivate = %s, %v; want the PNG", ref, img.ContentType, err)
		}
	}
}

func TestFetchStatus(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/gone":
			http.NotFound(w, r)
		case "/broken":
			http.Error(w, "stack trace here", http.StatusInternalServerError)
		case "/nothing":
			w.WriteHeader(http.StatusNoContent)
		case "/notmodified":
			w.WriteHeader(http.StatusNotModified)
		}
	})
	f := fetcher(t, srv)
	for path, want := range map[string]string{
		"/gone":        "image_url: the server answered 404",
		"/broken":      "image_url: the server answered 500",
		"/notmodified": "image_url: the server answered 304",
		"/nothing":     "image_url: the file is empty",
	} {
		_, err := f.Fetch(context.Background(), "image_url", srv.URL+path)
		wantError(t, path, err, fetch.ErrInvalid, want)
	}
}

func TestFetchConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	f := fetch.New(loopbackGuard(t, &netguard.Guard{Exempt: []netip.AddrPort{netip.MustParseAddrPort(addr)}}))
	_, err = f.Fetch(context.Background(), "image_url", "http://"+addr+"/a.png")
	wantError(t, addr, err, fetch.ErrInvalid, "image_url: "+addr+" refused the connection")
}

func TestFetchUntrustedCertificate(t *testing.T) {
	srv := &server{Server: httptest.NewUnstartedServer(serve("image/png", pngData))}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake
	srv.StartTLS()
	defer srv.Close()
	_, err := fetcher(t, srv).Fetch(context.Background(), "image_url", srv.URL)
	host := srv.Listener.Addr().String()
	wantError(t, srv.URL, err, fetch.ErrInvalid, "image_url: the TLS certificate of "+host+" is not valid")
}

func TestFetchSizeCap(t *testing.T) {
	const limit = 1 << 10
	exact := append(append([]byte{}, pngData...), make([]byte, limit-len(pngData))...)
	over := append(append([]byte{}, exact...), 0)
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/exact":
			w.Write(exact)
		case "/over":
			w.Header().Set("Content-Length", fmt.Sprint(len(over)))
			w.Write(over)
		case "/chunked":
			// No Content-Length: the cap holds while reading.
			w.Write(over[:10])
			w.(http.Flusher).Flush()
			w.Write(over[10:])
		case "/endless":
			w.Write(pngData)
			for r.Context().Err() == nil {
				if _, err := w.Write(make([]byte, 4096)); err != nil {
					return
				}
			}
		}
	})
	f := fetcher(t, srv)
	f.MaxBytes = limit
	if img, err := f.Fetch(context.Background(), "image_url", srv.URL+"/exact"); err != nil || len(img.Data) != limit {
		t.Errorf("Fetch of exactly MaxBytes = %d bytes, %v; want %d bytes", len(img.Data), err, limit)
	}
	for _, path := range []string{"/over", "/chunked", "/endless"} {
		_, err := f.Fetch(context.Background(), "image_url", srv.URL+path)
		wantError(t, path, err, fetch.ErrInvalid, "image_url: the file is larger than 1 KiB")
	}
}

func TestFetchDefaultSizeCapIsNamed(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(50<<20+1))
		w.Write(pngData) // the client gives up before the rest
	})
	_, err := fetcher(t, srv).Fetch(context.Background(), "image_url", srv.URL)
	wantError(t, srv.URL, err, fetch.ErrInvalid, "image_url: the file is larger than 50 MiB")
}

func TestFetchTimeout(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/stall-body" {
			w.Header().Set("Content-Length", "100000")
			w.Write(pngData)
			w.(http.Flusher).Flush()
		}
		<-r.Context().Done()
	})
	f := fetcher(t, srv)
	f.Timeout = 100 * time.Millisecond
	for _, path := range []string{"/stall-headers", "/stall-body"} {
		_, err := f.Fetch(context.Background(), "image_url", srv.URL+path)
		wantError(t, path, err, fetch.ErrInvalid, "image_url: fetch timed out after 100ms")
	}
}

// When the caller's context ends (the job was cancelled, the Lambda is out
// of time), Fetch says so rather than blaming the input.
func TestFetchCallerContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		cancel()
		<-r.Context().Done()
	})
	_, err := fetcher(t, srv).Fetch(ctx, "image_url", srv.URL)
	if err != context.Canceled {
		t.Errorf("Fetch after the caller cancelled: %v, want context.Canceled", err)
	}
	if _, err := fetcher(t, srv).Fetch(ctx, "image_url", srv.URL); err != context.Canceled {
		t.Errorf("Fetch with a cancelled context: %v, want context.Canceled", err)
	}
}

func TestFetchRedirects(t *testing.T) {
	// /hop/n redirects to /hop/n-1; /hop/0 is the image.
	var final atomic.Int32
	var srv *server
	srv = newServer(t, func(w http.ResponseWriter, r *http.Request) {
		var n int
		fmt.Sscanf(r.URL.Path, "/hop/%d", &n)
		if n == 0 {
			final.Add(1)
			w.Write(pngData)
			return
		}
		http.Redirect(w, r, fmt.Sprintf("%s/hop/%d", srv.URL, n-1), http.StatusMovedPermanently)
	})
	f := fetcher(t, srv)
	if img, err := f.Fetch(context.Background(), "image_url", srv.URL+"/hop/5"); err != nil || img.ContentType != "image/png" {
		t.Errorf("Fetch through 5 redirects = %s, %v; want the PNG", img.ContentType, err)
	}
	final.Store(0)
	_, err := f.Fetch(context.Background(), "image_url", srv.URL+"/hop/6")
	wantError(t, "/hop/6", err, fetch.ErrInvalid, "image_url: more than 5 redirects")
	if final.Load() != 0 {
		t.Error("the sixth redirect was followed")
	}
}

func TestFetchRedirectToAnotherScheme(t *testing.T) {
	for _, c := range []struct{ location, want string }{
		{"file:///etc/passwd", "image_url: a redirect leads to a file: URL; only http and https are followed"},
		{"ftp://example.com/a.png", "image_url: a redirect leads to a ftp: URL; only http and https are followed"},
		{"data:image/png;base64," + base64.StdEncoding.EncodeToString(pngData), "image_url: a redirect leads to a data: URL; only http and https are followed"},
	} {
		srv := newServer(t, redirectTo(c.location))
		_, err := fetcher(t, srv).Fetch(context.Background(), "image_url", srv.URL)
		wantError(t, c.location, err, fetch.ErrInvalid, c.want)
	}
}

func TestFetchDataURI(t *testing.T) {
	b64 := base64.StdEncoding.EncodeToString
	f := fetch.New(loopbackGuard(t, &netguard.Guard{}))
	for _, c := range []struct {
		ref, contentType string
		data             []byte
	}{
		{"data:image/png;base64," + b64(pngData), "image/png", pngData},
		{"data:image/jpeg;base64," + b64(jpegData), "image/jpeg", jpegData},
		{"data:image/webp;base64," + b64(webpData), "image/webp", webpData},
		{"DATA:Image/PNG;BASE64," + b64(pngData), "image/png", pngData},
		// The declared type is not trusted either way: the bytes decide.
		{"data:image/jpeg;base64," + b64(pngData), "image/png", pngData},
	} {
		img, err := f.Fetch(context.Background(), "reference_images[1]", c.ref)
		if err != nil || img.ContentType != c.contentType || !bytes.Equal(img.Data, c.data) {
			t.Errorf("Fetch(%.40s) = %s, %v; want %s", c.ref, img.ContentType, err, c.contentType)
		}
	}

	const (
		badType   = "reference_images[1]: a data URI must start with data:image/png;base64, data:image/jpeg;base64 or data:image/webp;base64"
		badBase64 = "reference_images[1]: the data URI is not valid base64"
	)
	pngB64 := b64(pngData)
	for _, c := range []struct{ ref, want string }{
		{"data:image/gif;base64," + b64(gifData), badType},
		{"data:image/png," + pngB64, badType},
		{"data:image/png;charset=utf-8;base64," + pngB64, badType},
		{"data:image/png;base64", badType},
		{"data:;base64," + pngB64, badType},
		{"data:image/png;base64," + base64.RawStdEncoding.EncodeToString(pngData[:len(pngData)/3*3+1]), badBase64}, // padding left off
		{"data:image/png;base64," + base64.URLEncoding.EncodeToString(append(pngData, 0xfb, 0xff)), badBase64},
		{"data:image/png;base64," + pngB64[:20] + "\n" + pngB64[20:], badBase64},
		{"data:image/png;base64," + pngB64[:20] + "%2B" + pngB64[20:], badBase64},
		{"data:image/png;base64,iVBORw0KGgp=", badBase64},
		{"data:image/png;base64,", "reference_images[1]: the file is empty"},
		{"data:image/png;base64," + b64([]byte("hello, world")), "reference_images[1]: not a PNG, JPEG or WebP image (it looks like text/plain)"},
	} {
		_, err := f.Fetch(context.Background(), "reference_images[1]", c.ref)
		wantError(t, c.ref, err, fetch.ErrInvalid, c.want)
	}

	f.MaxBytes = 100
	big := append(append([]byte{}, pngData...), make([]byte, 200)...)
	_, err := f.Fetch(context.Background(), "reference_images[1]", "data:image/png;base64,"+b64(big))
	wantError(t, "a 200-byte data URI", err, fetch.ErrInvalid, "reference_images[1]: the file is larger than 100 bytes")
}

func TestFetchRefusesOtherRefs(t *testing.T) {
	f := fetch.New(loopbackGuard(t, &netguard.Guard{}))
	for _, ref := range []string{"ftp://example.com/a.png", "file:///etc/passwd", "/assets/a1", "example.com/a.png", "http://", "http://%zz/"} {
		_, err := f.Fetch(context.Background(), "image_url", ref)
		wantError(t, ref, err, fetch.ErrInvalid, "image_url: is not an http(s) URL, a data:image URI or an asset URL")
	}
	_, err := f.Fetch(context.Background(), "image_url", "")
	wantError(t, `""`, err, fetch.ErrInvalid, "image_url: is empty")
}

func loopbackGuard(t *testing.T, g *netguard.Guard) *netguard.Guard {
	g.Connect = testenv.LoopbackOnly(t).Connect
	return g
}
