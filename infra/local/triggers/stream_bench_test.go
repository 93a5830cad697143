package triggers

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// BenchmarkStreamDelivery measures the time from a write to DynamoDB Local
// to its record's arrival in the handler, through the notifier's filter:
// each iteration moves one job to completed and waits for it. It reports
// the median and the 99th percentile in milliseconds.
//
//	go run ./infra/local exec -- go test -run '^$' -bench StreamDelivery -benchtime 200x ./infra/local/triggers
func BenchmarkStreamDelivery(b *testing.B) {
	tpl := parse(b, notifierTemplate("FilterCriteria: {Filters: [{Pattern: '"+terminalJobs+"'}]}"))
	table, arn := streamTable(b)
	o, _, _ := streamOptions(b, tpl, arn)
	o.StreamIdleWait = 0 // the default, as `make run` has it
	arrived := make(chan time.Time, 1)
	run(b, tpl, map[string]Handlers{"NotifierFunction": {Stream: func(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		for range ev.Records {
			arrived <- time.Now()
		}
		return events.DynamoDBEventResponse{}, nil
	}}}, o)
	var lat []time.Duration
	b.ResetTimer()
	for i := range b.N {
		id := fmt.Sprint("j", i)
		job(b, table, id, "processing", true)
		start := time.Now()
		setStatus(b, table, id, "completed")
		select {
		case at := <-arrived:
			lat = append(lat, at.Sub(start))
		case <-time.After(patience):
			b.Fatal("a record never arrived")
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2])/1e6, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100])/1e6, "p99-ms")
}
