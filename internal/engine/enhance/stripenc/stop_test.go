package stripenc

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"io"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// encoders runs each encoder on a fill that works on NRGBA strips.
var encoders = map[string]func(w io.Writer, width, height, workers int, fill FillNRGBA) error{
	"jpeg": func(w io.Writer, width, height, workers int, fill FillNRGBA) error {
		return JPEG(w, width, height, 90, workers, func(dst *image.RGBA) error {
			return fill(&image.NRGBA{Pix: dst.Pix, Stride: dst.Stride, Rect: dst.Rect})
		})
	},
	"png":  PNG,
	"webp": WebP,
}

// countingFill fills strips with noise (which no encoder compresses much),
// counts its calls, those under way and the strips begun (JPEG fills a
// strip a band at a time), and fails as fail says for strip y0/rows.
type countingFill struct {
	rows           int
	started, ended atomic.Int64
	strips         atomic.Int64
	fail           func(strip int) error
}

func (c *countingFill) fill(dst *image.NRGBA) error {
	c.started.Add(1)
	defer c.ended.Add(1)
	if dst.Rect.Min.Y%c.rows == 0 {
		c.strips.Add(1)
	}
	for i := range dst.Pix {
		h := uint32(i+dst.Rect.Min.Y*dst.Stride) * 0x9e3779b1
		h ^= h >> 15
		h *= 0x2c1b3c6d
		dst.Pix[i] = byte(h >> 24)
	}
	if c.fail != nil {
		return c.fail(dst.Rect.Min.Y / c.rows)
	}
	return nil
}

var errFill = errors.New("the fill failed")

// failingWriter accepts limit bytes, then fails.
type failingWriter struct {
	limit, written int
}

var errWrite = errors.New("the writer failed")

func (f *failingWriter) Write(p []byte) (int, error) {
	if f.written+len(p) > f.limit {
		n := f.limit - f.written
		f.written = f.limit
		return n, errWrite
	}
	f.written += len(p)
	return len(p), nil
}

// A failing or panicking fill, or a failing writer, ends the encoding with
// that error: strips already under way finish, no new strip starts (at most
// a window of 2 x workers strips past the last one written), no fill runs
// after the encoder returns and no goroutine is left behind.
func TestAFailureStopsEveryWorker(t *testing.T) {
	const width, workers, strips, failAt = 1024, 2, 40, 3
	rows := stripRows(width)
	height := rows * strips
	window := 2 * workers
	cases := []struct {
		name    string
		fail    func(strip int) error
		limit   int // of the writer; 0: none
		want    func(error) bool
		maxRuns int
		formats []string
	}{
		{
			name:    "fill error",
			fail:    func(s int) error { return failOn(s, failAt, func() error { return errFill }) },
			want:    func(err error) bool { return errors.Is(err, errFill) },
			maxRuns: failAt + window,
			formats: []string{"jpeg", "png", "webp"},
		},
		{
			name: "fill panic",
			fail: func(s int) error { return failOn(s, failAt, func() error { panic("a bug in the fill") }) },
			want: func(err error) bool {
				return err != nil && strings.Contains(err.Error(), "a bug in the fill")
			},
			maxRuns: failAt + window,
			formats: []string{"jpeg", "png", "webp"},
		},
		{
			name:    "writer error in the header",
			limit:   100,
			want:    func(err error) bool { return errors.Is(err, errWrite) },
			maxRuns: window,
			formats: []string{"jpeg", "png"},
		},
		{
			name:    "writer error in the data",
			limit:   300_000,
			want:    func(err error) bool { return errors.Is(err, errWrite) },
			maxRuns: strips / 2,
			formats: []string{"jpeg", "png"},
		},
	}
	for _, tc := range cases {
		for _, format := range tc.formats {
			t.Run(fmt.Sprintf("%s/%s", tc.name, format), func(t *testing.T) {
				before := runtime.NumGoroutine()
				c := &countingFill{rows: rows, fail: tc.fail}
				var w io.Writer = io.Discard
				if tc.limit > 0 {
					w = &failingWriter{limit: tc.limit}
				}
				err := encoders[format](w, width, height, workers, c.fill)
				started, ended, begun := c.started.Load(), c.ended.Load(), c.strips.Load()
				if !tc.want(err) {
					t.Fatalf("returned %v", err)
				}
				if started != ended {
					t.Errorf("%d fills still running after the encoder returned", started-ended)
				}
				if begun > int64(tc.maxRuns) {
					t.Errorf("%d of %d strips filled, want at most %d", begun, strips, tc.maxRuns)
				}
				if n := settledGoroutines(before); n > before {
					t.Errorf("%d goroutines left behind", n-before)
				}
			})
		}
	}
}

func failOn(strip, failAt int, fail func() error) error {
	if strip == failAt {
		return fail()
	}
	return nil
}

// settledGoroutines waits (up to a generous bound: this is no timing
// assertion) for the goroutine count to fall back to want, and returns it.
func settledGoroutines(want int) int {
	n := runtime.NumGoroutine()
	for deadline := time.Now().Add(5 * time.Second); n > want && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		n = runtime.NumGoroutine()
	}
	return n
}

// Every strip is filled exactly once, and strips are disjoint and cover the
// image: the encoders hold this promise to the fill.
func TestEveryRowIsFilledOnce(t *testing.T) {
	for format, encode := range encoders {
		t.Run(format, func(t *testing.T) {
			const width, height = 300, 1000 // strips of 224 rows, the last of 104
			var filled [height]atomic.Int32
			err := encode(io.Discard, width, height, 3, func(dst *image.NRGBA) error {
				if dst.Rect.Min.X != 0 || dst.Rect.Max.X != width || dst.Stride != 4*width ||
					len(dst.Pix) != 4*width*dst.Rect.Dy() || !bytes.Equal(dst.Pix, make([]byte, len(dst.Pix))) {
					return fmt.Errorf("strip %v: stride %d, %d bytes of pixels, not all zero", dst.Rect, dst.Stride, len(dst.Pix))
				}
				for y := dst.Rect.Min.Y; y < dst.Rect.Max.Y; y++ {
					filled[y].Add(1)
				}
				for i := range dst.Pix {
					dst.Pix[i] = 0xff // the next strip in this buffer must start from zero again
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			for y := range filled {
				if n := filled[y].Load(); n != 1 {
					t.Fatalf("row %d filled %d times", y, n)
				}
			}
		})
	}
}

// The runner's promise to fills: strip i starts only once all but the last
// window strips before it were consumed, and strips are consumed in order,
// each once.
func TestStripsStayWithinTheWindow(t *testing.T) {
	const n, workers, window = 300, 4, 8
	var consumed atomic.Int64
	var early atomic.Int64 // strips started too far ahead
	var order []int
	run := &stripRun[struct{}, int]{
		n: n, workers: workers, window: window,
		newState: func() struct{} { return struct{}{} },
		produce: func(_ struct{}, i int, r *int) error {
			if int64(i) >= consumed.Load()+window {
				early.Add(1)
			}
			*r = i
			runtime.Gosched()
			return nil
		},
		consume: func(i int, r *int) error {
			if *r != i {
				return fmt.Errorf("strip %d got the result of strip %d", i, *r)
			}
			order = append(order, i)
			consumed.Add(1)
			return nil
		},
	}
	if err := run.run(); err != nil {
		t.Fatal(err)
	}
	if early.Load() > 0 {
		t.Errorf("%d strips started more than %d ahead of the writer", early.Load(), window)
	}
	for i, s := range order {
		if s != i {
			t.Fatalf("consumed %v", order)
		}
	}
	if len(order) != n {
		t.Errorf("%d strips consumed, want %d", len(order), n)
	}
}
