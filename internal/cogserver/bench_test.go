package cogserver_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"genjobs/internal/engine"
)

// BenchmarkPrediction makes one model-e-4 image (512x512) per iteration
// twice, interleaved: by the engine in process, and through the model
// server (PUT with Prefer: respond-async, then the completed webhook with
// the output as a data: URI, decoded). It reports both times and their
// ratio: the protocol's overhead.
func BenchmarkPrediction(b *testing.B) {
	input := map[string]any{"prompt": "a lighthouse at dusk", "width": 512, "height": 512}
	h := newHarness(b, engine.Reference(), nil)
	var direct, served time.Duration
	i := 0
	for b.Loop() {
		i++
		t0 := time.Now()
		engineOutput(b, engine.Image{}, "/generate/image/vendor-b/model-e-4", input)
		t1 := time.Now()
		status, _ := h.putAsync("image/vendor-b/model-e-4", fmt.Sprint("bench-", i), map[string]any{
			"input": input, "webhook": h.hook.url, "webhook_events_filter": []string{"completed"},
		})
		if status != http.StatusAccepted {
			b.Fatalf("PUT answered %d", status)
		}
		done := h.hook.next().body
		if done["status"] != "succeeded" {
			b.Fatalf("completed: %v", done["status"])
		}
		dataURI(b, done["output"])
		served += time.Since(t1)
		direct += t1.Sub(t0)
	}
	b.ReportMetric(float64(direct.Milliseconds())/float64(i), "engine-ms/op")
	b.ReportMetric(float64(served.Milliseconds())/float64(i), "cogserver-ms/op")
	b.ReportMetric(float64(served)/float64(direct), "cogserver/engine")
}
