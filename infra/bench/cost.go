package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"genjobs/infra/local/sam"
	"genjobs/infra/local/triggers"
	"genjobs/internal/engine"
	"genjobs/internal/engine/generate"
)

// The cost of a million jobs, from what one job was measured to consume:
// the write and read units its DynamoDB calls reported
// (ReturnConsumedCapacity), its SQS and S3 requests, and its worker's run
// time, priced with the table below at the memory template.yaml gives.

// prices are AWS's public on-demand prices in us-east-1, arm64 Lambda, as
// of 2026-11-24 (DynamoDB's since its November 2024 cut). Free tiers left
// out.
var prices = struct {
	date                          string
	lambdaGBSecond, lambdaRequest float64
	dynamoWRU, dynamoRRU          float64
	sqsRequest                    float64
	s3Put, s3Get                  float64
	httpAPIRequest                float64
}{
	date:           "2026-11-24",
	lambdaGBSecond: 0.0000133334, lambdaRequest: 0.20 / 1e6,
	dynamoWRU: 0.625 / 1e6, dynamoRRU: 0.125 / 1e6,
	sqsRequest: 0.40 / 1e6,
	s3Put:      0.005 / 1000, s3Get: 0.0004 / 1000,
	httpAPIRequest: 1.00 / 1e6,
}

// meter counts what the functions' AWS calls consumed: DynamoDB's capacity
// (every call asks for it) and requests by service and operation.
type meter struct {
	mu       sync.Mutex
	wru, rru float64
	calls    map[string]int // "S3.PutObject" -> count
}

type usage struct {
	wru, rru float64
	calls    map[string]int
}

func (m *meter) snapshot() usage {
	m.mu.Lock()
	defer m.mu.Unlock()
	u := usage{wru: m.wru, rru: m.rru, calls: map[string]int{}}
	for k, v := range m.calls {
		u.calls[k] = v
	}
	return u
}

func (u usage) minus(o usage) usage {
	d := usage{wru: u.wru - o.wru, rru: u.rru - o.rru, calls: map[string]int{}}
	for k, v := range u.calls {
		d.calls[k] = v - o.calls[k]
	}
	return d
}

// count is a middleware counting each call by service and operation.
func (m *meter) count(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("BenchCount",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			name := middleware.GetServiceID(ctx) + "." + middleware.GetOperationName(ctx)
			m.mu.Lock()
			if m.calls == nil {
				m.calls = map[string]int{}
			}
			m.calls[name]++
			m.mu.Unlock()
			return next.HandleInitialize(ctx, in)
		}), middleware.Before)
}

// capacity is a middleware of the DynamoDB client: it asks every call for
// its consumed capacity and adds it up, writes and reads apart.
func (m *meter) capacity(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("BenchCapacity",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			total := types.ReturnConsumedCapacityTotal
			switch p := in.Parameters.(type) {
			case *dynamodb.GetItemInput:
				p.ReturnConsumedCapacity = total
			case *dynamodb.PutItemInput:
				p.ReturnConsumedCapacity = total
			case *dynamodb.UpdateItemInput:
				p.ReturnConsumedCapacity = total
			case *dynamodb.DeleteItemInput:
				p.ReturnConsumedCapacity = total
			case *dynamodb.QueryInput:
				p.ReturnConsumedCapacity = total
			case *dynamodb.BatchGetItemInput:
				p.ReturnConsumedCapacity = total
			case *dynamodb.TransactWriteItemsInput:
				p.ReturnConsumedCapacity = total
			}
			out, md, err := next.HandleInitialize(ctx, in)
			var write bool
			var cc []types.ConsumedCapacity
			switch o := out.Result.(type) {
			case *dynamodb.GetItemOutput:
				cc = one(o.ConsumedCapacity)
			case *dynamodb.QueryOutput:
				cc = one(o.ConsumedCapacity)
			case *dynamodb.BatchGetItemOutput:
				cc = o.ConsumedCapacity
			case *dynamodb.PutItemOutput:
				cc, write = one(o.ConsumedCapacity), true
			case *dynamodb.UpdateItemOutput:
				cc, write = one(o.ConsumedCapacity), true
			case *dynamodb.DeleteItemOutput:
				cc, write = one(o.ConsumedCapacity), true
			case *dynamodb.TransactWriteItemsOutput:
				cc, write = o.ConsumedCapacity, true
			}
			var units float64
			for _, c := range cc {
				units += aws.ToFloat64(c.CapacityUnits)
			}
			m.mu.Lock()
			if write {
				m.wru += units
			} else {
				m.rru += units
			}
			m.mu.Unlock()
			return out, md, err
		}), middleware.After)
}

func one(c *types.ConsumedCapacity) []types.ConsumedCapacity {
	if c == nil {
		return nil
	}
	return []types.ConsumedCapacity{*c}
}

// runTimes records how long each invocation of an SQS handler took: what
// Lambda bills.
type runTimes struct {
	mu sync.Mutex
	d  []time.Duration
}

func (r *runTimes) wrap(h triggers.SQSHandler) triggers.SQSHandler {
	return func(ctx context.Context, e events.SQSEvent) (events.SQSEventResponse, error) {
		start := time.Now()
		resp, err := h(ctx, e)
		r.mu.Lock()
		r.d = append(r.d, time.Since(start))
		r.mu.Unlock()
		return resp, err
	}
}

func (r *runTimes) since(n int) []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Duration(nil), r.d[n:]...)
}

func (r *runTimes) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.d)
}

// jobUsage is what one job of the queue phase consumed, on average.
type jobUsage struct {
	jobs     int
	wru, rru float64
	s3Put    float64 // PutObject, CreateMultipartUpload, UploadPart, CompleteMultipartUpload
	s3Get    float64 // GetObject, HeadObject
	sqsSends float64
	runTime  time.Duration // the worker's handler, p50
}

func perJob(u usage, jobs int, runs []time.Duration) jobUsage {
	if jobs == 0 {
		return jobUsage{}
	}
	n := float64(jobs)
	ju := jobUsage{jobs: jobs, wru: u.wru / n, rru: u.rru / n, runTime: percentile(runs, 50)}
	for k, v := range u.calls {
		switch {
		case k == "S3.PutObject" || k == "S3.CreateMultipartUpload" || k == "S3.UploadPart" || k == "S3.CompleteMultipartUpload":
			ju.s3Put += float64(v) / n
		case k == "S3.GetObject" || k == "S3.HeadObject":
			ju.s3Get += float64(v) / n
		case strings.HasPrefix(k, "SQS.SendMessage"):
			ju.sqsSends += float64(v) / n
		}
	}
	return ju
}

// mix is one kind of job the cost table prices.
type mix struct {
	name     string
	memoryMB int
	runTime  time.Duration
	source   string // where the run time comes from
}

// jobCost is the price of one job of a mix: the worker's run time at its
// memory, two Lambda invocations (creation and worker), one HTTP API
// request, the measured DynamoDB units with the heartbeat's share for the
// run time beyond the measured job's (one progress write per 2 s, two
// small reads per second), the measured S3 requests, and SQS's send,
// receive and delete per message sent.
func jobCost(m mix, ju jobUsage) (total, lambda, dynamo, other float64, wru, rru float64) {
	extra := max(0, (m.runTime - ju.runTime).Seconds())
	wru = ju.wru + extra/2
	rru = ju.rru + extra*2
	lambda = float64(m.memoryMB)/1024*m.runTime.Seconds()*prices.lambdaGBSecond + 2*prices.lambdaRequest
	dynamo = wru*prices.dynamoWRU + rru*prices.dynamoRRU
	other = prices.httpAPIRequest + 3*ju.sqsSends*prices.sqsRequest + ju.s3Put*prices.s3Put + ju.s3Get*prices.s3Get
	return lambda + dynamo + other, lambda, dynamo, other, wru, rru
}

// videoRunTime runs the video engine in this process on a 10 s 720p video,
// as the worker would.
func videoRunTime(ctx context.Context) (time.Duration, error) {
	start := time.Now()
	_, err := generate.Video{}.Run(ctx, engine.Job{Model: "model-d-flash-1.1",
		Request: []byte(`{"prompt":"a lighthouse at dusk","aspect_ratio":"16:9","duration":10,"seed":7}`)},
		func(engine.Update) error { return nil })
	return time.Since(start), err
}

// workerMemory is the MemorySize template.yaml gives the function that
// reads queue (a parameter's default when it is one).
func workerMemory(tpl *sam.Template, queue string) int {
	for _, f := range tpl.Functions() {
		for name, ev := range f.Events {
			if ev.Type != sam.EventSQS {
				continue
			}
			if q, err := f.SQSEvent(name); err == nil && q.Queue == queue {
				return f.MemorySize
			}
		}
	}
	return 0
}

// costs adds the cost section to the report.
func (r *report) costs(ju jobUsage, mixes []mix) {
	if ju.jobs == 0 {
		r.t.add("cost of 1M jobs", "", "", "", "", "", r.fail("no job of the queue phase was measured"))
		return
	}
	r.t.add("DynamoDB units per job, measured", "enhance 1024² → 2048² jpg", fmt.Sprint(ju.jobs), "",
		fmt.Sprintf("%.1f WRU", ju.wru), fmt.Sprintf("%.1f RRU", ju.rru),
		fmt.Sprintf("creation + worker + sweeper, ReturnConsumedCapacity; S3 %.1f PUT-class + %.1f GET, SQS %.1f sends a job",
			ju.s3Put, ju.s3Get, ju.sqsSends))
	sort.SliceStable(mixes, func(i, j int) bool { return mixes[i].runTime < mixes[j].runTime })
	for _, m := range mixes {
		total, lambda, dynamo, other, wru, rru := jobCost(m, ju)
		r.t.add("cost of 1M jobs", m.name, "", fmt.Sprintf("$%.0f", total*1e6),
			fmt.Sprintf("%.1f WRU", wru), fmt.Sprintf("%.1f RRU", rru),
			fmt.Sprintf("run %s at %d MB (%s): Lambda $%.0f, DynamoDB $%.2f, API+SQS+S3 $%.2f",
				ms(m.runTime), m.memoryMB, m.source, lambda*1e6, dynamo*1e6, other*1e6))
	}
	was, _, _, _, _, _ := jobCost(mix{memoryMB: 10240, runTime: 2 * time.Second}, jobUsage{wru: 88, runTime: 2 * time.Second})
	r.t.note("cost: AWS on-demand prices of %s, us-east-1, arm64 Lambda ($%.10f/GB-s, $0.20/1M invocations), DynamoDB $0.625/1M WRU,",
		prices.date, prices.lambdaGBSecond)
	r.t.note("  $0.125/1M RRU, SQS $0.40/1M requests, S3 $0.005/1k PUT and $0.0004/1k GET, HTTP API $1.00/1M; free tiers left out. Units measured")
	r.t.note("  on the queue phase's jobs (no API polling: the bench reads the table directly); longer jobs add one progress write per 2 s")
	r.t.note("  and two reads per second of run time. Run times are this machine's (%s); Lambda's 10,240 MB has ~6 vCPUs.", loadAverage())
	r.t.note("  Before this change: ~88 WRU and ~$%.0f per 1M two-second jobs at 10,240 MB (the request in the job's item, a write every 0.5 s).", was*1e6)
}

// lightQueue is the queue of the worker sized for light jobs.
const lightQueue = "LightJobsQueue"
