package provider_test

import (
	"bytes"
	"sort"
	"testing"
	"time"

	"genjobs/internal/job"
	"genjobs/internal/provider/providertest"
)

// BenchmarkCallbackToCompleted times a Replicate completion callback with a
// 1 MiB output, from the callback's POST to the job completed: the
// callback's verification and stash, the step's read of it, the streamed
// copy into the results bucket and the end. It reports p50 and p99; the
// jobs are submitted before the clock runs.
//
//	go run ./infra/local exec -- go test -run '^$' -bench CallbackToCompleted -benchtime 30x ./internal/provider/
func BenchmarkCallbackToCompleted(b *testing.B) {
	e := newEnv(b, replicateRoutes)
	data := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	out := e.files.Put("/out/1mib.png", providertest.File{ContentType: "image/png", Data: data, ClaimLength: true})
	var took []time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		j := e.create(imageEndpoint, fox)
		for k := 0; k < 10; k++ {
			if _, ok := e.rep.ForJob(j.ID); ok {
				break
			}
			e.step()
		}
		pid, _ := e.rep.ForJob(j.ID)
		e.rep.Set(pid, "succeeded", "", out, "")
		url, body, h := e.rep.Webhook(pid, time.Now())
		b.StartTimer()
		start := time.Now()
		if code := providertest.Send(b, url, body, h); code != 204 {
			b.Fatalf("callback answered %d", code)
		}
		if got := e.steps(j.ID, 5); got.Status != job.Completed {
			b.Fatalf("job %s", got.Status)
		}
		took = append(took, time.Since(start))
		b.StopTimer()
		e.drain()
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(took[min(len(took)-1, len(took)*99/100)].Microseconds())/1000, "p99-ms")
}
