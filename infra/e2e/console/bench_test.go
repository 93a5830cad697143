package console_test

import (
	"net/http"
	"sort"
	"testing"
	"time"

	"genjobs/internal/member"
)

// BenchmarkPageRender times a signed-in page view on the local stack, as a
// browser makes it: through the API Gateway stand-in and the Lambda
// adapter, the session and memberships read from DynamoDB Local, the page
// rendered. It reports the median (p50) and p99 of the tokens, billing and
// usage pages in turn.
//
//	go run ./infra/local exec -- go test -run '^$' -bench PageRender -benchtime 200x ./infra/e2e/console/
func BenchmarkPageRender(b *testing.B) {
	s, br := signedIn(b, member.Owner)
	pages := []string{"/app/settings/api-tokens", "/app/settings/billing", "/app/settings/usage"}
	durations := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req, _ := http.NewRequest(http.MethodGet, s.URL+pages[i%len(pages)], nil)
		start := time.Now()
		resp, err := br.client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		durations = append(durations, time.Since(start))
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("%s: %d", pages[i%len(pages)], resp.StatusCode)
		}
	}
	b.StopTimer()
	sort.Slice(durations, func(i, j int) bool { return durations[i] < durations[j] })
	b.ReportMetric(float64(durations[len(durations)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(durations[len(durations)*99/100].Microseconds())/1000, "p99-ms")
}
