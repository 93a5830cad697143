package main

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"genjobs/infra/local/sam"
)

// near compares prices in USD to a millionth of a cent.
func near(got, want float64) bool { return math.Abs(got-want) < 1e-11 }

// measured is a queue-phase job as the meter saw it: AWS's rules billed 3
// WRU of items, 4 in transactions, 1 of indexes and 2 RRU; 1 SQS send, 2
// PUT-class and 1 GET S3 requests; the worker ran 1 s.
var measured = jobUsage{jobs: 10, wru: 5, rru: 1,
	aws:   awsUnits{tableWRU: 3, txWRU: 4, indexWRU: 1, rru: 2},
	s3Put: 2, s3Get: 1, sqsSends: 1, runTime: time.Second}

// The cost of a job, by AWS's prices of the table (us-east-1, arm64): the
// figures of the cost rows.
func TestJobCostByAWSPrices(t *testing.T) {
	for _, c := range []struct {
		name                                     string
		mix                                      mix
		wru, rru                                 float64
		lambda, dynamo, api, sqs, s3, perMillion float64
	}{
		{
			// 1 s beyond the measured job: one progress write per 2 s (2
			// WRU) and two reads a second.
			name: "a longer job pays its heartbeats", mix: mix{memoryMB: 1024, runTime: 2 * time.Second},
			wru: 8 + 1, rru: 2 + 2,
			lambda: 1.0*2*0.0000133334 + 2*0.20e-6, dynamo: 9*0.625e-6 + 4*0.125e-6, api: 1e-6,
			sqs: 3 * 0.40e-6, s3: 2*0.005e-3 + 1*0.0004e-3, perMillion: 45.7918,
		},
		{
			name: "a shorter job pays no negative heartbeats", mix: mix{memoryMB: 2048, runTime: 500 * time.Millisecond},
			wru: 8, rru: 2,
			lambda: 2.0*0.5*0.0000133334 + 2*0.20e-6, dynamo: 8*0.625e-6 + 2*0.125e-6, api: 1e-6,
			sqs: 3 * 0.40e-6, s3: 2*0.005e-3 + 1*0.0004e-3, perMillion: 31.5834,
		},
	} {
		got := jobCost(c.mix, measured)
		if got.wru != c.wru || got.rru != c.rru {
			t.Errorf("%s: %.2f WRU, %.2f RRU, want %.2f, %.2f", c.name, got.wru, got.rru, c.wru, c.rru)
		}
		for _, f := range []struct {
			what      string
			got, want float64
		}{{"lambda", got.lambda, c.lambda}, {"dynamo", got.dynamo, c.dynamo}, {"api", got.api, c.api},
			{"sqs", got.sqs, c.sqs}, {"s3", got.s3, c.s3}, {"kms", got.kms, 0}} {
			if !near(f.got, f.want) {
				t.Errorf("%s: %s $%.10f, want $%.10f", c.name, f.what, f.got, f.want)
			}
		}
		if pm := got.total() * 1e6; math.Abs(pm-c.perMillion) > 1e-6 {
			t.Errorf("%s: $%.4f per million jobs, want $%.4f", c.name, pm, c.perMillion)
		}
	}
}

// A webhook: the notifier's and the deliverer's run at their memory, two
// invocations, KMS Sign, the deliveries message's three requests and the
// units AWS would bill.
func TestHookCostByAWSPrices(t *testing.T) {
	h := hookUsage{
		jobUsage:    jobUsage{jobs: 10, aws: awsUnits{tableWRU: 2, indexWRU: 1, rru: 1}, sqsSends: 1, kmsSigns: 1, runTime: 200 * time.Millisecond},
		notifierRun: 100 * time.Millisecond, notifierMB: 256, delivererMB: 512,
	}
	c := hookCost(h)
	gbs := (256*0.1 + 512*0.2) / 1024
	for _, f := range []struct {
		what      string
		got, want float64
	}{
		{"lambda", c.lambda, gbs*0.0000133334 + 2*0.20e-6},
		{"dynamo", c.dynamo, 3*0.625e-6 + 1*0.125e-6},
		{"sqs", c.sqs, 3 * 0.40e-6},
		{"kms", c.kms, 0.15 / 1e4},
		{"s3", c.s3, 0},
		{"api", c.api, 0}, // a webhook is no API request
	} {
		if !near(f.got, f.want) {
			t.Errorf("%s $%.10f, want $%.10f", f.what, f.got, f.want)
		}
	}
}

// The sweeper runs 43,200 times a month whatever the traffic.
func TestSweeperMonthIs43200Runs(t *testing.T) {
	run := usage{aws: awsUnits{rru: 1.5}}
	c := sweeperMonth(run, 100*time.Millisecond, 256)
	if c.rru != 1.5*43200 || c.wru != 0 {
		t.Errorf("%.1f WRU, %.1f RRU a month, want 0 and %.1f", c.wru, c.rru, 1.5*43200)
	}
	if want := 43200 * (0.25*0.1*0.0000133334 + 0.20e-6); !near(c.lambda, want) {
		t.Errorf("Lambda $%.8f a month, want $%.8f", c.lambda, want)
	}
	if want := 1.5 * 43200 * 0.125e-6; !near(c.dynamo, want) {
		t.Errorf("DynamoDB $%.8f a month, want $%.8f", c.dynamo, want)
	}
}

// What the meter counted over the metered jobs becomes one job's share; S3
// and SQS calls are sorted into the classes AWS prices.
func TestPerJobDividesWhatTheJobsConsumed(t *testing.T) {
	u := usage{wru: 20, rru: 6, aws: awsUnits{tableWRU: 6, txWRU: 8, indexWRU: 2, rru: 4}, calls: map[string]int{
		"S3.PutObject": 4, "S3.CreateMultipartUpload": 2, "S3.UploadPart": 2, "S3.CompleteMultipartUpload": 2,
		"S3.GetObject": 2, "S3.HeadObject": 2, "S3.ListObjectsV2": 8,
		"SQS.SendMessage": 2, "SQS.SendMessageBatch": 2, "SQS.ReceiveMessage": 50,
		"KMS.Sign": 2, "DynamoDB.GetItem": 10,
	}}
	got := perJob(u, 2, millis(30, 10, 20))
	want := jobUsage{jobs: 2, wru: 10, rru: 3, aws: awsUnits{tableWRU: 3, txWRU: 4, indexWRU: 1, rru: 2},
		s3Put: 5, s3Get: 2, sqsSends: 2, kmsSigns: 1, runTime: 20 * time.Millisecond}
	if got != want {
		t.Errorf("perJob =\n%+v\nwant\n%+v", got, want)
	}
	if got := perJob(u, 0, nil); got != (jobUsage{}) {
		t.Errorf("no job measured: %+v, want nothing", got)
	}
}

func TestUsageMinusIsWhatHappenedBetween(t *testing.T) {
	before := usage{wru: 1, rru: 2, aws: awsUnits{tableWRU: 1, rru: 1, refused: 1}, calls: map[string]int{"KMS.Sign": 1}}
	after := usage{wru: 4, rru: 2, aws: awsUnits{tableWRU: 3, rru: 2, refused: 1}, calls: map[string]int{"KMS.Sign": 3, "SQS.SendMessage": 2}}
	d := after.minus(before)
	if d.wru != 3 || d.rru != 0 || d.aws != (awsUnits{tableWRU: 2, rru: 1}) || d.calls["KMS.Sign"] != 2 || d.calls["SQS.SendMessage"] != 2 {
		t.Errorf("minus = %+v", d)
	}
}

// costRow finds the row of measure and subject.
func costRow(t *testing.T, r *report, measure, subject string) []string {
	t.Helper()
	for _, row := range r.t.rows {
		if len(row) > 1 && row[0] == measure && row[1] == subject {
			return row
		}
	}
	t.Fatalf("no row %q / %q in %q", measure, subject, r.t.rows)
	return nil
}

// The cost section prices each mix per million jobs, cheapest first, and
// adds a webhook's price to each.
func TestTheCostRowsPriceEachMixPerMillionJobs(t *testing.T) {
	r := &report{t: newReportTable()}
	hook := hookUsage{jobUsage: jobUsage{jobs: 10, aws: awsUnits{tableWRU: 2, rru: 1}, kmsSigns: 1, runTime: 200 * time.Millisecond},
		notifierRun: 100 * time.Millisecond, notifierMB: 256, delivererMB: 256}
	runs := &runReport{usage: measured, sweeper: usage{aws: awsUnits{rru: 1}}, sweeperRun: 100 * time.Millisecond}
	r.costs(runs, hook, 256, []mix{
		{name: "long", memoryMB: 1024, runTime: 2 * time.Second, source: "test"},
		{name: "short", memoryMB: 2048, runTime: 500 * time.Millisecond, source: "test"},
	})
	if r.failed {
		t.Fatalf("a measured run failed the report: %q", r.t.rows)
	}
	var order []string
	for _, row := range r.t.rows {
		if row[0] == "cost of 1M jobs" {
			order = append(order, row[1])
		}
	}
	if strings.Join(order, ",") != "short,long" {
		t.Errorf("mixes in the order %v, want the shorter run first", order)
	}
	long := costRow(t, r, "cost of 1M jobs", "long")
	if long[3] != "$46" || long[4] != "9.0 WRU" || long[5] != "4.0 RRU" {
		t.Errorf("long mix: %q, want $46, 9.0 WRU, 4.0 RRU", long)
	}
	hc := hookCost(hook).total() * 1e6
	if want := "with a webhook each $" + strings.TrimSpace(fmtDollars(45.7918+hc)); !strings.HasSuffix(long[6], want) {
		t.Errorf("long mix's note %q does not end with %q", long[6], want)
	}
	aws := costRow(t, r, "DynamoDB units per job, AWS's rules", "enhance 1024² → 2048² jpg")
	if aws[4] != "8.0 WRU" || aws[5] != "2.0 RRU" {
		t.Errorf("AWS's units per job: %q", aws)
	}
	sweeper := costRow(t, r, "the sweeper, a month", "43,200 runs (1 a minute)")
	if want := fmtCents(sweeperMonth(runs.sweeper, runs.sweeperRun, 256).total()); sweeper[3] != want {
		t.Errorf("the sweeper's month: %q, want %s", sweeper[3], want)
	}
}

func fmtDollars(v float64) string { return fmt.Sprintf("%.0f", v) }
func fmtCents(v float64) string   { return fmt.Sprintf("$%.2f", v) }

func TestTheCostRowsFailWhatWasNotMeasured(t *testing.T) {
	r := &report{t: newReportTable()}
	r.costs(&runReport{}, hookUsage{}, 256, nil)
	if !r.failed || !strings.Contains(costRow(t, r, "cost of 1M jobs", "")[6], "FAIL: no job of the queue phase was measured") {
		t.Errorf("no measured job: failed %v, rows %q", r.failed, r.t.rows)
	}
	r = &report{t: newReportTable()}
	r.costs(&runReport{usage: measured, sweeperErr: errString("sweep: boom")}, hookUsage{}, 256, nil)
	if !r.failed {
		t.Error("a failed sweeper run and no webhook did not fail the report")
	}
	if n := costRow(t, r, "a webhook", "")[6]; n != "FAIL: no webhook was measured" {
		t.Errorf("webhook row: %q", n)
	}
	if n := costRow(t, r, "the sweeper, a month", "")[6]; n != "FAIL: its metered run failed: sweep: boom" {
		t.Errorf("sweeper row: %q", n)
	}
}

type errString string

func (e errString) Error() string { return string(e) }

// template is a template whose two workers read the heavy and the light
// jobs queues.
const workersTemplate = `
Resources:
  JobsQueue: {Type: AWS::SQS::Queue}
  LightJobsQueue: {Type: AWS::SQS::Queue}
  WorkerFunction:
    Type: AWS::Serverless::Function
    Properties:
      MemorySize: 3008
      Events:
        Jobs: {Type: SQS, Properties: {Queue: !GetAtt JobsQueue.Arn}}
  LightWorkerFunction:
    Type: AWS::Serverless::Function
    Properties:
      MemorySize: 2048
      Events:
        Jobs: {Type: SQS, Properties: {Queue: !GetAtt LightJobsQueue.Arn}}
  SweeperFunction:
    Type: AWS::Serverless::Function
    Properties:
      MemorySize: 256
`

func parseTemplate(t *testing.T, text string) *sam.Template {
	t.Helper()
	tpl, err := sam.Parse([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return tpl
}

// The mixes take their memory from the template: the light worker's for the
// small enhance and the video, the worker's for the 16K enhance, whose run
// time is the enhance table's median.
func TestCostMixesTakeMemoryFromTheTemplate(t *testing.T) {
	tpl := parseTemplate(t, workersTemplate)
	if got := functionMemory(tpl, "SweeperFunction"); got != 256 {
		t.Errorf("functionMemory(SweeperFunction) = %d, want 256", got)
	}
	if got := workerMemory(tpl, "JobsQueue"); got != 3008 {
		t.Errorf("workerMemory(JobsQueue) = %d, want 3008", got)
	}
	enhanced := []enhanceResult{
		{c: enhanceCase{src: 1024, side: 4096, format: "jpg"}, full: []toolRun{{wall: time.Second}}},
		{c: enhanceCase{src: 4000, side: 16000, format: "jpg"}, full: []toolRun{{wall: 3 * time.Second}, {wall: time.Second}, {wall: 2 * time.Second}}},
	}
	mixes := costMixes(tpl, jobUsage{runTime: 700 * time.Millisecond}, enhanced, 5*time.Second, nil)
	want := []mix{
		{name: "small enhance 1024² → 2048² jpg", memoryMB: 2048, runTime: 700 * time.Millisecond, source: "the queue phase's worker, p50"},
		{name: "16K enhance 4000² → 16000² jpg", memoryMB: 3008, runTime: 2 * time.Second, source: "the enhance table, median"},
		{name: "10 s video 1280x720 (model-d-flash-1.1)", memoryMB: 2048, runTime: 5 * time.Second, source: "the video engine in process"},
	}
	if len(mixes) != len(want) {
		t.Fatalf("mixes = %+v", mixes)
	}
	for i := range want {
		if mixes[i] != want[i] {
			t.Errorf("mix %d = %+v, want %+v", i, mixes[i], want[i])
		}
	}
	// No video measured, no enhance table (bench cost), no light worker.
	noLight := parseTemplate(t, workersTemplate[:strings.Index(workersTemplate, "  LightWorkerFunction:")])
	mixes = costMixes(noLight, jobUsage{runTime: time.Second}, nil, 0, errString("video failed"))
	if len(mixes) != 1 || mixes[0].memoryMB != 3008 {
		t.Errorf("without the video, the 16K case and a light queue: %+v", mixes)
	}
}
