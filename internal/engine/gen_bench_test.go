package engine

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// benchmarkGen runs j and reports, besides the time, the output's size and
// the longest stretch of work without a report (the worker notices a
// cancellation only at a report; the goal is well under a second).
func benchmarkGen(b *testing.B, e Engine, j Job) {
	b.ReportAllocs()
	var size int
	var gap time.Duration
	for b.Loop() {
		last := time.Now()
		files, err := e.Run(context.Background(), j, func(Update) error {
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

func BenchmarkImage(b *testing.B) {
	for _, size := range [][2]int{{1024, 1024}, {4096, 4096}} {
		b.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(b *testing.B) {
			benchmarkGen(b, Image{}, imageJob("a lighthouse at dusk", size[0], size[1], 1337))
		})
	}
}
