// Package enginetest holds what the engines' tests share: stand-in photos,
// their encodings, sample files, and a way to run an engine and keep what it
// reported. Only tests import it.
package enginetest

import (
	"bytes"
	"compress/zlib"
	"context"
	"embed"
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/HugoSmits86/nativewebp"

	"genjobs/internal/engine"
)

//go:embed testdata/*.webp
var testdata embed.FS

// Testdata is the sample file testdata/name (see testdata/README.md).
func Testdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := testdata.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func PNGBytes(m image.Image) []byte {
	var b bytes.Buffer
	if err := png.Encode(&b, m); err != nil {
		panic(err)
	}
	return b.Bytes()
}

func JPEGBytes(m image.Image, quality int) []byte {
	var b bytes.Buffer
	if err := jpeg.Encode(&b, m, &jpeg.Options{Quality: quality}); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// WebPBytes is m as a lossless WebP file.
func WebPBytes(m image.Image) []byte {
	var b bytes.Buffer
	if err := nativewebp.Encode(&b, m, nil); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// HugePNGHeader is the start of a PNG whose header claims width x height.
func HugePNGHeader(width, height int) []byte {
	var b bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.NoCompression}
	if err := enc.Encode(&b, image.NewGray(image.Rect(0, 0, 1, 1))); err != nil {
		panic(err)
	}
	data := b.Bytes()[:33] // signature and IHDR chunk
	ihdr := data[8:33]
	binary.BigEndian.PutUint32(ihdr[8:12], uint32(width))
	binary.BigEndian.PutUint32(ihdr[12:16], uint32(height))
	binary.BigEndian.PutUint32(ihdr[21:25], crc32.ChecksumIEEE(ihdr[4:21]))
	return data
}

// Photo is a stand-in for a photograph: smooth shading, hard edges of
// several colours and a little grain, the same for a given size.
func Photo(w, h int) *image.NRGBA {
	rng := rand.New(rand.NewPCG(uint64(w), uint64(h)))
	m := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			fx, fy := float64(x)/float64(w), float64(y)/float64(h)
			r := 120 + 80*math.Sin(6*fx+2*fy)
			g := 100 + 60*math.Cos(4*fy-3*fx)
			b := 90 + 50*math.Sin(9*fx*fy)
			if (x/(w/8)+y/(h/6))%3 == 0 { // hard-edged patches
				r, g, b = 230, 210, 40
			}
			n := rng.NormFloat64() * 4
			m.SetNRGBA(x, y, color.NRGBA{clamp8(r + n), clamp8(g + n), clamp8(b + n), 255})
		}
	}
	return m
}

func clamp8(v float64) uint8 { return uint8(math.Round(min(max(v, 0), 255))) }

// Solid is a w x h image of one colour.
func Solid(w, h int, c color.RGBA) *image.RGBA {
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := 0; i < len(m.Pix); i += 4 {
		m.Pix[i], m.Pix[i+1], m.Pix[i+2], m.Pix[i+3] = c.R, c.G, c.B, c.A
	}
	return m
}

// NRGBA is pixel (x, y) of m, unpremultiplied.
func NRGBA(m image.Image, x, y int) color.NRGBA {
	return color.NRGBAModel.Convert(m.At(x, y)).(color.NRGBA)
}

// MaxPremultipliedDiff is the largest difference, in 8-bit steps, between two
// images' premultiplied channels: what a viewer sees, whatever colour a
// transparent pixel claims.
func MaxPremultipliedDiff(t testing.TB, a, b image.Image) int {
	t.Helper()
	if a.Bounds().Size() != b.Bounds().Size() {
		t.Fatalf("sizes differ: %v and %v", a.Bounds().Size(), b.Bounds().Size())
	}
	worst := 0
	for y := range a.Bounds().Dy() {
		for x := range a.Bounds().Dx() {
			r1, g1, b1, a1 := a.At(a.Bounds().Min.X+x, a.Bounds().Min.Y+y).RGBA()
			r2, g2, b2, a2 := b.At(b.Bounds().Min.X+x, b.Bounds().Min.Y+y).RGBA()
			for _, d := range []int{int(r1>>8) - int(r2>>8), int(g1>>8) - int(g2>>8), int(b1>>8) - int(b2>>8), int(a1>>8) - int(a2>>8)} {
				worst = max(worst, d, -d)
			}
		}
	}
	return worst
}

// Request is req as the catalog hands it over: JSON.
func Request(req map[string]any) json.RawMessage {
	raw, err := json.Marshal(req)
	if err != nil {
		panic(err)
	}
	return raw
}

// PNGInput is m as the PNG input of field.
func PNGInput(field string, index int, m image.Image) engine.Input {
	return engine.Input{Field: field, Index: index, ContentType: "image/png", Data: PNGBytes(m)}
}

// Run runs e on j with a report that records every update and refuses
// nothing, and expects one file.
func Run(t testing.TB, e engine.Engine, j engine.Job) ([]engine.File, []engine.Update) {
	t.Helper()
	var updates []engine.Update
	files, err := e.Run(context.Background(), j, func(u engine.Update) error {
		updates = append(updates, u)
		return nil
	})
	if err != nil {
		t.Fatalf("%s: Run: %v", j.Model, err)
	}
	if len(files) != 1 {
		t.Fatalf("%s: Run gave %d files, want 1", j.Model, len(files))
	}
	return files, updates
}

// Benchmark runs j and reports, besides the time, the output's size and
// the longest stretch of work without a report (the worker notices a
// cancellation only at a report; the goal is well under a second).
func Benchmark(b *testing.B, e engine.Engine, j engine.Job) {
	b.ReportAllocs()
	var size int
	var gap time.Duration
	for b.Loop() {
		last := time.Now()
		files, err := e.Run(context.Background(), j, func(engine.Update) error {
			now := time.Now()
			gap = max(gap, now.Sub(last))
			last = now
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		gap = max(gap, time.Since(last))
		size = len(files[0].Data)
	}
	b.ReportMetric(float64(size)/1e6, "output-MB")
	b.ReportMetric(float64(gap.Milliseconds()), "max-report-gap-ms")
}

// LyingPNG is a PNG whose header claims width x height RGBA pixels at 16
// bits and whose data holds a few bytes.
func LyingPNG(width, height uint32) []byte {
	chunk := func(kind string, body []byte) []byte {
		var b bytes.Buffer
		_ = binary.Write(&b, binary.BigEndian, uint32(len(body)))
		b.WriteString(kind)
		b.Write(body)
		_ = binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(append([]byte(kind), body...)))
		return b.Bytes()
	}
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr, width)
	binary.BigEndian.PutUint32(ihdr[4:], height)
	ihdr[8], ihdr[9] = 16, 6 // 16 bits, RGBA
	var z bytes.Buffer
	w := zlib.NewWriter(&z)
	_, _ = w.Write(make([]byte, 16))
	_ = w.Close()
	out := []byte("\x89PNG\r\n\x1a\n")
	out = append(out, chunk("IHDR", ihdr)...)
	out = append(out, chunk("IDAT", z.Bytes())...)
	return append(out, chunk("IEND", nil)...)
}

// LyingJPEG is a real 16 x 16 JPEG whose frame header claims width x height.
func LyingJPEG(t testing.TB, width, height uint16) []byte {
	var b bytes.Buffer
	if err := jpeg.Encode(&b, image.NewYCbCr(image.Rect(0, 0, 16, 16), image.YCbCrSubsampleRatio420), nil); err != nil {
		t.Fatal(err)
	}
	data := b.Bytes()
	sof := bytes.Index(data, []byte{0xff, 0xc0})
	binary.BigEndian.PutUint16(data[sof+5:], height)
	binary.BigEndian.PutUint16(data[sof+7:], width)
	return data
}

// Allocated is how many bytes fn allocates on the heap.
func Allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// LieBudget is what decoding a lying header may cost on the heap.
const LieBudget = 64 << 20

// PeakHeap runs fn and returns the most heap it held at once: the largest
// live heap seen above the heap before it, sampled every 5 ms, garbage not
// yet collected included. (HeapSys growth would read 0 once an earlier run
// has grown the heap.)
func PeakHeap(fn func()) (peak uint64) {
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		var m runtime.MemStats
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapAlloc-min(m.HeapAlloc, before.HeapAlloc))
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	})
	fn()
	close(stop)
	wg.Wait()
	return peak
}
