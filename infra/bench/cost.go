package main

import (
	"context"
	"fmt"
	"reflect"
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
// the write and read units of its DynamoDB calls (both what DynamoDB Local
// reported with ReturnConsumedCapacity and what AWS would bill by its
// documented rules, dynamorules.go: the cost is AWS's), its SQS and S3
// requests and its worker's run time, priced with the table below at the
// memory template.yaml gives; and of a webhook: its notifier and deliverer
// invocations, KMS Sign, SQS messages and DynamoDB units.

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
	kmsAsymmetric                 float64 // Sign with an ECC key
}{
	date:           "2026-11-24",
	lambdaGBSecond: 0.0000133334, lambdaRequest: 0.20 / 1e6,
	dynamoWRU: 0.625 / 1e6, dynamoRRU: 0.125 / 1e6,
	sqsRequest: 0.40 / 1e6,
	s3Put:      0.005 / 1000, s3Get: 0.0004 / 1000,
	httpAPIRequest: 1.00 / 1e6,
	kmsAsymmetric:  0.15 / 1e4,
}

// meter counts what the functions' AWS calls consumed: DynamoDB's capacity
// (every call asks for it) and requests by service and operation.
type meter struct {
	mu       sync.Mutex
	wru, rru float64
	calls    map[string]int // "S3.PutObject" -> count
	// bill counts what AWS would bill the same DynamoDB calls, when its
	// middleware is on the client too.
	bill *awsBill
}

// newMeter meters clients built from the stack's; raw reads the items
// written for the AWS bill.
func newMeter(raw *dynamodb.Client) *meter { return &meter{bill: &awsBill{raw: raw}} }

// apiOptions are the middlewares of a metered client (any service).
func (m *meter) apiOptions() []func(*middleware.Stack) error {
	return []func(*middleware.Stack) error{m.capacity, m.count, m.bill.middleware}
}

type usage struct {
	wru, rru float64 // as DynamoDB Local reported them
	aws      awsUnits
	calls    map[string]int
}

func (m *meter) snapshot() usage {
	var bill awsUnits
	if m.bill != nil {
		bill = m.bill.snapshot()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	u := usage{wru: m.wru, rru: m.rru, aws: bill, calls: map[string]int{}}
	for k, v := range m.calls {
		u.calls[k] = v
	}
	return u
}

func (u usage) minus(o usage) usage {
	d := usage{wru: u.wru - o.wru, rru: u.rru - o.rru, aws: u.aws.minus(o.aws), calls: map[string]int{}}
	for k, v := range u.calls {
		d.calls[k] = v - o.calls[k]
	}
	return d
}

// unmeteredKey marks the context of an invocation whose calls no meter
// counts: the sweeper's, which runs once a minute however many jobs there
// are (every 5 s locally), priced a month at a time (sweeperRun).
type unmeteredKey struct{}

func unmetered(ctx context.Context) bool { return ctx.Value(unmeteredKey{}) != nil }

// unmeterSweeper marks the sweeper's scheduled invocations unmetered and
// returns its handler as it was, to meter one run of it.
func unmeterSweeper(handlers map[string]triggers.Handlers) triggers.ScheduleHandler {
	h, ok := handlers["SweeperFunction"]
	if !ok || h.Schedule == nil {
		return nil
	}
	sweep := h.Schedule
	h.Schedule = func(ctx context.Context, e events.EventBridgeEvent) error {
		return sweep(context.WithValue(ctx, unmeteredKey{}, true), e)
	}
	handlers["SweeperFunction"] = h
	return sweep
}

// count is a middleware counting each call by service and operation.
func (m *meter) count(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("BenchCount",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			if unmetered(ctx) {
				return next.HandleInitialize(ctx, in)
			}
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
			if unmetered(ctx) {
				return next.HandleInitialize(ctx, in)
			}
			askConsumedCapacity(in.Parameters)
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

// askConsumedCapacity sets ReturnConsumedCapacity to TOTAL on the input of
// each call whose output capacity counts (each has the field).
func askConsumedCapacity(params any) {
	switch params.(type) {
	case *dynamodb.GetItemInput, *dynamodb.PutItemInput, *dynamodb.UpdateItemInput, *dynamodb.DeleteItemInput,
		*dynamodb.QueryInput, *dynamodb.BatchGetItemInput, *dynamodb.TransactWriteItemsInput:
		reflect.ValueOf(params).Elem().FieldByName("ReturnConsumedCapacity").Set(reflect.ValueOf(types.ReturnConsumedCapacityTotal))
	}
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

func (r *runTimes) add(d time.Duration) {
	r.mu.Lock()
	r.d = append(r.d, d)
	r.mu.Unlock()
}

// timedBy wraps an event handler (an SQS or a stream handler) so that r
// records how long each invocation took.
func timedBy[E, R any](r *runTimes, h func(context.Context, E) (R, error)) func(context.Context, E) (R, error) {
	return func(ctx context.Context, e E) (R, error) {
		start := time.Now()
		resp, err := h(ctx, e)
		r.add(time.Since(start))
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

// jobUsage is what one job of the queue phase (or one webhook) consumed,
// on average.
type jobUsage struct {
	jobs     int
	wru, rru float64  // as DynamoDB Local reported them
	aws      awsUnits // as AWS would bill them
	s3Put    float64  // PutObject, CreateMultipartUpload, UploadPart, CompleteMultipartUpload
	s3Get    float64  // GetObject, HeadObject
	sqsSends float64
	kmsSigns float64
	runTime  time.Duration // the worker's (or the deliverer's) handler, p50
}

func perJob(u usage, jobs int, runs []time.Duration) jobUsage {
	if jobs == 0 {
		return jobUsage{}
	}
	n := float64(jobs)
	ju := jobUsage{jobs: jobs, wru: u.wru / n, rru: u.rru / n, runTime: percentile(runs, 50), aws: awsUnits{
		tableWRU: u.aws.tableWRU / n, txWRU: u.aws.txWRU / n, indexWRU: u.aws.indexWRU / n, rru: u.aws.rru / n, refused: u.aws.refused,
	}}
	for k, v := range u.calls {
		switch {
		case k == "S3.PutObject" || k == "S3.CreateMultipartUpload" || k == "S3.UploadPart" || k == "S3.CompleteMultipartUpload":
			ju.s3Put += float64(v) / n
		case k == "S3.GetObject" || k == "S3.HeadObject":
			ju.s3Get += float64(v) / n
		case strings.HasPrefix(k, "SQS.SendMessage"):
			ju.sqsSends += float64(v) / n
		case k == "KMS.Sign":
			ju.kmsSigns += float64(v) / n
		}
	}
	return ju
}

// hookUsage is what one webhook consumed: its notifier and deliverer
// invocations (one each: the bench ends one job at a time) and their calls.
type hookUsage struct {
	jobUsage                // runTime: the deliverer's
	notifierRun             time.Duration
	notifierMB, delivererMB int
}

// mix is one kind of job the cost table prices.
type mix struct {
	name     string
	memoryMB int
	runTime  time.Duration
	source   string // where the run time comes from
}

// heartbeatWRU is what AWS bills one progress write of a running job: the
// job's item (under 1 KB: 1 WRU) and its jobs-by-workspace entry, which
// projects progress (1).
const heartbeatWRU = 2

// cost is a price in USD, by service.
type cost struct {
	lambda, dynamo, api, sqs, s3, kms float64
	wru, rru                          float64 // the DynamoDB units priced
}

func (c cost) total() float64 { return c.lambda + c.dynamo + c.api + c.sqs + c.s3 + c.kms }

// jobCost is the price of one job of a mix: the worker's run time at its
// memory, two Lambda invocations (creation and worker), one HTTP API
// request, the DynamoDB units AWS would bill for the measured job with the
// heartbeat's share for the run time beyond the measured job's (one
// progress write per 2 s, two small reads per second), the measured S3
// requests, and SQS's send, receive and delete per message sent.
func jobCost(m mix, ju jobUsage) cost {
	extra := max(0, (m.runTime - ju.runTime).Seconds())
	c := cost{wru: ju.aws.wru() + extra/2*heartbeatWRU, rru: ju.aws.rru + extra*2}
	c.lambda = float64(m.memoryMB)/1024*m.runTime.Seconds()*prices.lambdaGBSecond + 2*prices.lambdaRequest
	c.dynamo = c.wru*prices.dynamoWRU + c.rru*prices.dynamoRRU
	c.api = prices.httpAPIRequest
	c.sqs = 3 * ju.sqsSends * prices.sqsRequest
	c.s3 = ju.s3Put*prices.s3Put + ju.s3Get*prices.s3Get
	return c
}

// hookCost is the price of one webhook: the notifier's and the deliverer's
// invocations at their memory, KMS Sign, the deliveries message (send,
// receive, delete) and the DynamoDB units AWS would bill.
func hookCost(h hookUsage) cost {
	c := cost{wru: h.aws.wru(), rru: h.aws.rru}
	gbs := (float64(h.notifierMB)*h.notifierRun.Seconds() + float64(h.delivererMB)*h.runTime.Seconds()) / 1024
	c.lambda = gbs*prices.lambdaGBSecond + 2*prices.lambdaRequest
	c.dynamo = c.wru*prices.dynamoWRU + c.rru*prices.dynamoRRU
	c.sqs = 3 * h.sqsSends * prices.sqsRequest
	c.kms = h.kmsSigns * prices.kmsAsymmetric
	c.s3 = h.s3Put*prices.s3Put + h.s3Get*prices.s3Get
	return c
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

// functionMemory is the MemorySize template.yaml gives function id.
func functionMemory(tpl *sam.Template, id string) int {
	for _, f := range tpl.Functions() {
		if f.LogicalID == id {
			return f.MemorySize
		}
	}
	return 0
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

// sweeperRuns is how many times a month the sweeper runs (30 days, once a
// minute).
const sweeperRuns = 30 * 24 * 60

// sweeperMonth is the sweeper's price a month: a fixed cost, its Queries of
// every shard of jobs-by-status and deliveries-due (empty ones billed at
// the minimum) whether or not any job runs.
func sweeperMonth(u usage, run time.Duration, memoryMB int) cost {
	c := cost{wru: u.aws.wru() * sweeperRuns, rru: u.aws.rru * sweeperRuns}
	c.lambda = sweeperRuns * (float64(memoryMB)/1024*run.Seconds()*prices.lambdaGBSecond + prices.lambdaRequest)
	c.dynamo = c.wru*prices.dynamoWRU + c.rru*prices.dynamoRRU
	return c
}

// costs adds the cost section to the report.
func (r *report) costs(runs *runReport, hook hookUsage, sweeperMB int, mixes []mix) {
	ju := runs.usage
	if ju.jobs == 0 {
		r.t.add("cost of 1M jobs", "", "", "", "", "", r.fail("no job of the queue phase was measured"))
		return
	}
	r.t.add("DynamoDB units per job, DynamoDB Local", "enhance 1024² → 2048² jpg", fmt.Sprint(ju.jobs), "",
		fmt.Sprintf("%.1f WRU", ju.wru), fmt.Sprintf("%.1f RRU", ju.rru),
		fmt.Sprintf("creation + worker, ReturnConsumedCapacity; S3 %.1f PUT-class + %.1f GET, SQS %.1f sends a job",
			ju.s3Put, ju.s3Get, ju.sqsSends))
	r.t.add("DynamoDB units per job, AWS's rules", "enhance 1024² → 2048² jpg", fmt.Sprint(ju.jobs), "",
		fmt.Sprintf("%.1f WRU", ju.aws.wru()), fmt.Sprintf("%.1f RRU", ju.aws.rru),
		fmt.Sprintf("items %.1f + in transactions %.1f (2 a KB) + indexes %.1f WRU; %d refused conditions",
			ju.aws.tableWRU, ju.aws.txWRU, ju.aws.indexWRU, ju.aws.refused))
	var hc cost
	if hook.jobs > 0 {
		hc = hookCost(hook)
		r.t.add("a webhook", "notifier + deliverer", fmt.Sprint(hook.jobs), fmt.Sprintf("$%.0f / 1M", hc.total()*1e6),
			fmt.Sprintf("%.1f WRU", hc.wru), fmt.Sprintf("%.1f RRU", hc.rru),
			fmt.Sprintf("Lambda $%.2f (notifier %s at %d MB, deliverer %s at %d MB), KMS Sign %.1f $%.2f, SQS $%.2f, DynamoDB $%.2f (Local said %.1f WRU)",
				hc.lambda*1e6, ms(hook.notifierRun), hook.notifierMB, ms(hook.runTime), hook.delivererMB,
				hook.kmsSigns, hc.kms*1e6, hc.sqs*1e6, hc.dynamo*1e6, hook.wru))
	} else {
		r.t.add("a webhook", "", "", "", "", "", r.fail("no webhook was measured"))
	}
	if runs.sweeperErr != nil {
		r.t.add("the sweeper, a month", "", "", "", "", "", r.fail("its metered run failed: %v", runs.sweeperErr))
	} else {
		sc := sweeperMonth(runs.sweeper, runs.sweeperRun, sweeperMB)
		r.t.add("the sweeper, a month", "43,200 runs (1 a minute)", "1", fmt.Sprintf("$%.2f", sc.total()),
			fmt.Sprintf("%.1f WRU", runs.sweeper.aws.wru()), fmt.Sprintf("%.1f RRU", runs.sweeper.aws.rru),
			fmt.Sprintf("per run, AWS's rules (Local said %.1f WRU, %.1f RRU): run %s at %d MB; Lambda $%.2f, DynamoDB $%.2f a month, whatever the traffic",
				runs.sweeper.wru, runs.sweeper.rru, ms(runs.sweeperRun), sweeperMB, sc.lambda, sc.dynamo))
	}
	sort.SliceStable(mixes, func(i, j int) bool { return mixes[i].runTime < mixes[j].runTime })
	for _, m := range mixes {
		c := jobCost(m, ju)
		r.t.add("cost of 1M jobs", m.name, "", fmt.Sprintf("$%.0f", c.total()*1e6),
			fmt.Sprintf("%.1f WRU", c.wru), fmt.Sprintf("%.1f RRU", c.rru),
			fmt.Sprintf("run %s at %d MB (%s): Lambda $%.0f, DynamoDB $%.2f, API $%.2f, SQS $%.2f, S3 $%.2f; with a webhook each $%.0f",
				ms(m.runTime), m.memoryMB, m.source, c.lambda*1e6, c.dynamo*1e6, c.api*1e6, c.sqs*1e6, c.s3*1e6, (c.total()+hc.total())*1e6))
	}
	r.t.note("cost: AWS on-demand prices of %s, us-east-1, arm64 Lambda ($%.10f/GB-s, $0.20/1M invocations), DynamoDB $0.625/1M WRU,",
		prices.date, prices.lambdaGBSecond)
	r.t.note("  $0.125/1M RRU, SQS $0.40/1M requests, S3 $0.005/1k PUT and $0.0004/1k GET, HTTP API $1.00/1M, KMS $0.15/10k ECC Sign;")
	r.t.note("  free tiers, the KMS key's $1 a month and the table's default encryption (AWS-owned key: no charge) left out. DynamoDB is")
	r.t.note("  priced by AWS's rules (items rounded up per KB, twice in a transaction, index entries written, reads per 4 KB), the items")
	r.t.note("  sized before and after each write (an empty Query or a read of no item billed at the minimum); DynamoDB Local's own")
	r.t.note("  count is shown above it. Units measured on %d jobs run one at a time after the queue phase, no API polling (the bench", costJobs)
	r.t.note("  reads the table directly), the sweeper apart; run times are the queue phase's. Longer jobs add one progress write per 2 s")
	r.t.note("  (%d WRU) and two reads per second of run time. Run times are this machine's (%s); Lambda's 10,240 MB has ~6 vCPUs.", heartbeatWRU, loadAverage())
}

// lightQueue is the queue of the worker sized for light jobs.
const lightQueue = "LightJobsQueue"
