// Command bigenhance runs one large enhance job end to end against a running
// stack, as a client would, and times each step: it makes a photo-like JPEG,
// uploads it through POST /assets/uploads and its presigned PUT, asks
// standard-enhance for a large output, polls the job until it ends, streams
// the result to a file and checks its size from the image header alone.
//
//	make run   # in another terminal
//	go run ./examples/bigenhance                                # 4000x4000 in, 22000x22000 JPEG out
//	go run ./examples/bigenhance --width 8000 --height 8000 --format png
//
// The API and token come from --api and --token, else $API and $TOKEN, else
// http://127.0.0.1:3000 and .local/demo-token. It exits 1 when the job does
// not complete with an output of the requested size.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"image"
	"image/color"
	_ "image/gif" // DecodeConfig knows every output format
	"image/jpeg"
	_ "image/png"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "golang.org/x/image/webp"

	"genjobs/infra/local/endpoints"
)

// Config is one run's settings.
type Config struct {
	API, Token    string
	InSize        int    // the source image's width and height
	Width, Height int    // the requested output size
	Format        string // output_format: jpg, png or webp
	Out           string // where the result goes; empty: a temporary file, removed at the end
	Poll          time.Duration
	Timeout       time.Duration // for the whole run
}

func main() {
	c := Config{}
	flag.StringVar(&c.API, "api", envOr("API", endpoints.DefaultAPI()), "the API's base `URL` ($API; default: the running make run's)")
	flag.StringVar(&c.Token, "token", os.Getenv("TOKEN"), "a bearer `token` ($TOKEN; default: the contents of .local/demo-token)")
	flag.IntVar(&c.InSize, "in", 4000, "the source JPEG's width and height in `pixels`")
	flag.IntVar(&c.Width, "width", 22000, "the output's width in `pixels`")
	flag.IntVar(&c.Height, "height", 22000, "the output's height in `pixels`")
	flag.StringVar(&c.Format, "format", "jpg", "the output `format`: jpg, png or webp")
	flag.StringVar(&c.Out, "out", "", "keep the result in this `file` (default: a temporary file, removed)")
	flag.DurationVar(&c.Poll, "poll", time.Second, "how often to read the job")
	flag.DurationVar(&c.Timeout, "timeout", 30*time.Minute, "give up after this long")
	flag.Parse()
	if c.Token == "" {
		file := filepath.Join(".local", "demo-token")
		if st, err := endpoints.Running(); err == nil {
			file = st.DemoToken
		}
		b, err := os.ReadFile(file)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bigenhance: no token: pass --token, set $TOKEN or run from the repository after make run")
			os.Exit(2)
		}
		c.Token = strings.TrimSpace(string(b))
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.Timeout)
	defer cancel()
	if err := Run(ctx, c, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bigenhance:", err)
		os.Exit(1)
	}
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// Run does the whole round trip, printing a line per step to w.
func Run(ctx context.Context, c Config, w io.Writer) error {
	cl := &client{api: strings.TrimRight(c.API, "/"), token: c.Token}
	start := time.Now()
	step := func(name string, t0 time.Time, format string, args ...any) {
		fmt.Fprintf(w, "%-10s %8.2fs  %s\n", name, time.Since(t0).Seconds(), fmt.Sprintf(format, args...))
	}

	t0 := time.Now()
	src, err := photoJPEG(c.InSize)
	if err != nil {
		return err
	}
	step("source", t0, "%dx%d JPEG, %s", c.InSize, c.InSize, mib(int64(len(src))))

	t0 = time.Now()
	var up struct {
		UploadURL string `json:"upload_url"`
		AssetURL  string `json:"asset_url"`
	}
	if err := cl.call(ctx, "POST", "/assets/uploads", map[string]any{"content_type": "image/jpeg", "size": len(src)}, http.StatusCreated, &up); err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, "PUT", up.UploadURL, bytes.NewReader(src))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "image/jpeg") // signed: it must be the declared type
	if err := expect(http.DefaultClient.Do(req))(http.StatusOK, nil); err != nil {
		return fmt.Errorf("PUT to the presigned upload URL: %w", err)
	}
	step("upload", t0, "%s", up.AssetURL)

	t0 = time.Now()
	var created struct {
		JobID  string `json:"job_id"`
		Status string `json:"status"`
	}
	body := map[string]any{"image_url": up.AssetURL, "width": c.Width, "height": c.Height, "model": "Standard V2", "output_format": c.Format}
	if err := cl.call(ctx, "POST", "/generate/enhance/vendor-a/standard-enhance", body, http.StatusOK, &created); err != nil {
		return err
	}
	step("create", t0, "job %s %s, %dx%d %s", created.JobID, created.Status, c.Width, c.Height, c.Format)

	t0 = time.Now()
	rec, raw, err := cl.wait(ctx, created.JobID, c.Poll, func(r record) {
		p := "-"
		if r.Progress != nil {
			p = fmt.Sprintf("%.2f", *r.Progress)
		}
		step("poll", t0, "%s, progress %s", r.Status, p)
	})
	if err != nil {
		return err
	}
	step("ended", t0, "%s", rec.Status)
	fmt.Fprintf(w, "record     %s\n", raw)
	if rec.Status != "completed" || rec.Result == nil || len(rec.Result.URLs) == 0 {
		return fmt.Errorf("the job ended %s", rec.Status)
	}

	t0 = time.Now()
	out := c.Out
	if out == "" {
		f, err := os.CreateTemp("", "bigenhance-*."+c.Format)
		if err != nil {
			return err
		}
		f.Close()
		out = f.Name()
		defer os.Remove(out)
	}
	n, err := download(ctx, rec.Result.URLs[0], out)
	if err != nil {
		return err
	}
	secs := time.Since(t0).Seconds()
	step("download", t0, "%s to %s (%.0f MiB/s)", mib(n), out, float64(n)/(1<<20)/math.Max(secs, 1e-3))

	t0 = time.Now()
	cfg, format, err := decodeHeader(out)
	if err != nil {
		return err
	}
	step("header", t0, "%s %dx%d", format, cfg.Width, cfg.Height)
	if cfg.Width != c.Width || cfg.Height != c.Height {
		return fmt.Errorf("the result is %dx%d; %dx%d was asked for", cfg.Width, cfg.Height, c.Width, c.Height)
	}
	step("total", start, "ok")
	return nil
}

// record is the part of a job record this program reads.
type record struct {
	Status   string   `json:"status"`
	Progress *float64 `json:"progress"`
	Result   *struct {
		URLs []string `json:"urls"`
	} `json:"result"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

type client struct{ api, token string }

// call sends a JSON request and decodes the answer, which must have status want.
func (c *client) call(ctx context.Context, method, path string, in any, want int, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.api+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if err := expect(http.DefaultClient.Do(req))(want, out); err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	return nil
}

// expect checks an answer's status and decodes its JSON body into out.
func expect(resp *http.Response, err error) func(want int, out any) error {
	return func(want int, out any) error {
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if err != nil {
			return err
		}
		if resp.StatusCode != want {
			return fmt.Errorf("answered %d: %s", resp.StatusCode, bytes.TrimSpace(b))
		}
		if out == nil {
			return nil
		}
		return json.Unmarshal(b, out)
	}
}

// wait polls a job until it ends, calling seen on each change of status or
// (tenth of) progress, and returns the final record and its JSON.
func (c *client) wait(ctx context.Context, id string, every time.Duration, seen func(record)) (record, []byte, error) {
	last := ""
	for {
		var raw json.RawMessage
		if err := c.call(ctx, "GET", "/jobs/"+id, nil, http.StatusOK, &raw); err != nil {
			return record{}, nil, err
		}
		var r record
		if err := json.Unmarshal(raw, &r); err != nil {
			return record{}, nil, err
		}
		now := r.Status
		if r.Progress != nil {
			now += fmt.Sprintf(" %.1f", *r.Progress)
		}
		if now != last {
			seen(r)
			last = now
		}
		switch r.Status {
		case "completed", "failed", "cancelled":
			return r, raw, nil
		}
		select {
		case <-ctx.Done():
			return record{}, nil, fmt.Errorf("job %s still %s: %w", id, r.Status, ctx.Err())
		case <-time.After(every):
		}
	}
}

// download streams a URL to a file and returns its size.
func download(ctx context.Context, url, path string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET of the result answered %d", resp.StatusCode)
	}
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(f, resp.Body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return n, fmt.Errorf("download of the result: %w", err)
	}
	return n, nil
}

// decodeHeader reads an image file's format and size from its header,
// never its pixels.
func decodeHeader(path string) (image.Config, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return image.Config{}, "", err
	}
	defer f.Close()
	cfg, format, err := image.DecodeConfig(bufio.NewReader(f))
	if err != nil {
		return image.Config{}, "", fmt.Errorf("the result's header: %w", err)
	}
	return cfg, format, nil
}

// photoJPEG makes a size x size JPEG that compresses like a photograph: a
// sky-to-ground gradient, soft-edged shapes, fine texture and sensor noise,
// so that neither the decoder nor the encoder gets an easy flat image.
func photoJPEG(size int) ([]byte, error) {
	if size < 1 {
		return nil, errors.New("the source size must be positive")
	}
	r := rand.New(rand.NewPCG(uint64(size), 2026))
	type blob struct{ x, y, rad, r, g, b float64 }
	blobs := make([]blob, 24)
	for i := range blobs {
		blobs[i] = blob{r.Float64(), r.Float64(), 0.03 + 0.12*r.Float64(), 255 * r.Float64(), 255 * r.Float64(), 255 * r.Float64()}
	}
	img := image.NewRGBA(image.Rect(0, 0, size, size))
	var row []blob // the shapes that reach this row
	for y := 0; y < size; y++ {
		v := float64(y) / float64(size)
		row = row[:0]
		for _, b := range blobs {
			if math.Abs(v-b.y) < 1.2*b.rad {
				row = append(row, b)
			}
		}
		for x := 0; x < size; x++ {
			u := float64(x) / float64(size)
			cr, cg, cb := 90+120*(1-v), 140+80*(1-v), 200*(1-v)+60*v // sky above, earth below
			for _, b := range row {
				d := math.Hypot(u-b.x, v-b.y) / b.rad
				if d < 1.2 {
					a := math.Max(0, math.Min(1, (1.2-d)*2.5)) // soft edge
					cr, cg, cb = cr+(b.r-cr)*a, cg+(b.g-cg)*a, cb+(b.b-cb)*a
				}
			}
			tex := 12 * math.Sin(float64(x)*0.31+math.Sin(float64(y)*0.05)*4) * math.Sin(float64(y)*0.23)
			n := r.NormFloat64() * 6
			img.SetRGBA(x, y, color.RGBA{clamp(cr + tex + n), clamp(cg + tex + n), clamp(cb + tex*0.5 + n), 255})
		}
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 90}); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func clamp(v float64) uint8 {
	return uint8(math.Max(0, math.Min(255, v)))
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
