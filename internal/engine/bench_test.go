package engine

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"
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
				if _, err := (Enhance{}).Run(context.Background(), j, func(Update) error { return nil }); err != nil {
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
				peak = max(peak, peakHeap(func() {
					if _, err := (Enhance{}).Run(context.Background(), j, func(Update) error { return nil }); err != nil {
						b.Fatal(err)
					}
				}))
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
		})
	}
}

// peakHeap runs fn and returns the most heap it held at once: the largest
// live heap seen above the heap before it. (HeapSys growth would read 0
// once an earlier run has grown the heap.)
func peakHeap(fn func()) (peak uint64) {
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
