package enhance

import (
	"context"
	"image"
	"sync"
	"sync/atomic"
	"testing"

	"genjobs/internal/engine"
	"genjobs/internal/engine/enginetest"
)

// A default request (every filter at 0.5) on a 1024x1024 JPEG photo.
func benchmarkEnhance(b *testing.B, width, height int) {
	input := jpegBytes(photo(1024, 1024), 85)
	for _, format := range []string{"jpg", "png", "webp"} {
		b.Run(format, func(b *testing.B) {
			j := job(request(width, height, map[string]any{
				"output_format": format, "sharpen": 0.5, "denoise": 0.5, "fix_compression": 0.5,
			}), input)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := (Engine{}).Run(context.Background(), j, func(engine.Update) error { return nil }); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkEnhance1024to2048(b *testing.B) { benchmarkEnhance(b, 2048, 2048) }
func BenchmarkEnhance1024to4096(b *testing.B) { benchmarkEnhance(b, 4096, 4096) }

// BenchmarkEnhancePeakHeap4096 reports the most heap one 4096x4096 job
// holds at once (sampled every 5 ms), which sizes the worker's memory.
func BenchmarkEnhancePeakHeap4096(b *testing.B) {
	input := jpegBytes(photo(1024, 1024), 85)
	for _, format := range []string{"jpg", "png", "webp"} {
		b.Run(format, func(b *testing.B) {
			j := job(request(4096, 4096, map[string]any{
				"output_format": format, "sharpen": 0.5, "denoise": 0.5, "fix_compression": 0.5,
			}), input)
			var peak uint64
			for b.Loop() {
				peak = max(peak, enginetest.PeakHeap(func() {
					if _, err := (Engine{}).Run(context.Background(), j, func(engine.Update) error { return nil }); err != nil {
						b.Fatal(err)
					}
				}))
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
		})
	}
}

// BenchmarkEnhanceFill is the pipeline alone, without an encoder: a
// 1024x1024 JPEG photo to 4096x4096, filled in 64-row strips on every core,
// every filter at 0 (the plain resample) and at the defaults.
func BenchmarkEnhanceFill(b *testing.B) {
	input := jpegBytes(photo(1024, 1024), 85)
	for _, c := range []struct {
		name    string
		filters float64
		format  string
	}{{"plain-jpg", 0, "jpg"}, {"defaults-jpg", 0.5, "jpg"}, {"plain-png", 0, "png"}} {
		b.Run(c.name, func(b *testing.B) {
			req := request(4096, 4096, map[string]any{
				"output_format": c.format, "sharpen": c.filters, "denoise": c.filters, "fix_compression": c.filters,
			})
			for b.Loop() {
				e := decodedJob(b, context.Background(), req, input, func(engine.Update) error { return nil })
				fillDiscarding(b, e, 64)
			}
			b.ReportMetric(4096*4096/1e6*float64(b.N)/b.Elapsed().Seconds(), "Mpx/s")
		})
	}
}

// fillDiscarding fills e's whole output in strips of the given height on
// GOMAXPROCS goroutines, each reusing one strip buffer.
func fillDiscarding(tb testing.TB, e *enhanceJob, strip int) {
	g := e.plan.geo
	var next atomic.Int64
	var wg sync.WaitGroup
	for range e.run.Workers {
		wg.Go(func() {
			rgba := image.NewRGBA(image.Rect(0, 0, g.outW, strip))
			nrgba := image.NewNRGBA(image.Rect(0, 0, g.outW, strip))
			for y := int(next.Add(int64(strip)) - int64(strip)); y < g.outH; y = int(next.Add(int64(strip)) - int64(strip)) {
				r := image.Rect(0, y, g.outW, min(y+strip, g.outH))
				var err error
				if e.out.hasAlpha {
					nrgba.Rect = r
					err = e.fillNRGBA(nrgba)
				} else {
					rgba.Rect = r
					err = e.fillRGBA(rgba)
				}
				if err != nil {
					tb.Error(err)
				}
			}
		})
	}
	wg.Wait()
}
