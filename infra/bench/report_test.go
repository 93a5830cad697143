package main

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// row is the first row of r's table with measure and subject ("" matches
// any), its missing cells empty.
func row(t *testing.T, r *report, measure, subject string) []string {
	t.Helper()
	for _, row := range r.t.rows {
		if len(row) > 1 && (measure == "" || row[0] == measure) && (subject == "" || row[1] == subject) {
			return append(row, make([]string, 7-len(row))...)
		}
	}
	t.Fatalf("no row %q / %q in %q", measure, subject, r.t.rows)
	return nil
}

func newTestReport() *report { return &report{t: newReportTable(), host: "linux/arm64"} }

// Each function's size is held to its own limit (the workers 16 MB, the
// deliverer, provider, callbacks and mcp 13 MB, the console 20 MB, the rest
// 12 MB) with 1 MB to spare, as the Makefile's sizes target holds them.
func TestSizesAreHeldToEachFunctionsLimit(t *testing.T) {
	for _, c := range []struct {
		name  string
		bytes int64
		note  string
	}{
		{"bare", 5_000_000, "baseline"},
		{"jobs", 10_000_000, "+5.00 MB vs bare; 2.00 MB to spare"},
		{"generate", 11_500_000, "FAIL: 11,500,000 B: less than 1 MB to spare under the 12 MB limit"},
		{"notfound", 12_000_000, "FAIL: 12,000,000 B: not under the 12 MB limit"},
		{"worker", 14_000_000, "+9.00 MB vs bare; 2.00 MB to spare"},
		{"lightworker", 15_500_000, "FAIL: 15,500,000 B: less than 1 MB to spare under the 16 MB limit"},
		{"mcp", 12_500_000, "FAIL: 12,500,000 B: less than 1 MB to spare under the 13 MB limit"},
		{"deliverer", 11_000_000, "+6.00 MB vs bare; 2.00 MB to spare"},
		{"console", 13_000_000, "+8.00 MB vs bare; 2.00 MB to spare"},
		{"console", 14_500_000, "FAIL: 14,500,000 B: less than 1 MB to spare under the 15 MB limit"},
	} {
		r := newTestReport()
		r.sizes([]target{{name: bareName}, {name: c.name}}, map[string]int64{bareName: 5_000_000, c.name: c.bytes})
		got := row(t, r, "size, linux/arm64", c.name)
		if got[3] != megabytes(c.bytes) || got[6] != c.note {
			t.Errorf("%s at %d B: %q %q, want %q", c.name, c.bytes, got[3], got[6], c.note)
		}
		if failed := strings.HasPrefix(c.note, "FAIL"); r.failed != failed {
			t.Errorf("%s at %d B: report failed = %v, want %v", c.name, c.bytes, r.failed, failed)
		}
	}
}

// A function's median cold start is held to 1.3 times bare's; a start that
// failed, or a first invocation that answered another status than its
// probe's, fails the run.
func TestColdStartsAreHeldToBare(t *testing.T) {
	r := newTestReport()
	cold := map[string]*coldStats{
		bareName:   {cold: millis(10, 10, 11), invoke: millis(1), want: 200, statuses: map[int]int{200: 1}},
		"generate": {cold: millis(12, 13, 12), invoke: millis(2, 3), want: 401, statuses: map[int]int{401: 2}},
		"jobs":     {cold: millis(14, 14, 14), invoke: millis(2), want: 401, statuses: map[int]int{200: 1}},
		"usage":    {cold: millis(9), errs: []string{"exited (exit status 2) before first next; output:\npanic: x"}},
		"styles":   {cold: millis(10), want: 401, statuses: map[int]int{}},
	}
	r.coldStarts([]target{{name: bareName}, {name: "generate"}, {name: "jobs"}, {name: "usage"}, {name: "styles"}}, cold)
	for _, c := range []struct{ measure, subject, n, p50, p99, note string }{
		{"cold start, linux/arm64", bareName, "3", "10.0 ms", "11.0 ms", "baseline"},
		{"cold start, linux/arm64", "generate", "3", "12.0 ms", "13.0 ms", "1.20x bare (p50), +2.00 ms"},
		{"cold start, linux/arm64", "jobs", "3", "14.0 ms", "14.0 ms", "FAIL: 1.40x bare (p50), over 1.3x"},
		{"cold start, linux/arm64", "usage", "1", "9.00 ms", "9.00 ms", "FAIL: 1 of 21 starts failed: exited (exit status 2) before first next; output: panic: x"},
		{"first invoke, linux/arm64", "generate", "2", "2.00 ms", "3.00 ms", "answered 401 ×2 as expected"},
		{"first invoke, linux/arm64", "jobs", "1", "2.00 ms", "2.00 ms", "FAIL: want 401, got 200 ×1"},
		{"first invoke, linux/arm64", "styles", "0", "0.00 ms", "0.00 ms", "FAIL: want 401, got nothing"},
	} {
		got := row(t, r, c.measure, c.subject)
		if got[2] != c.n || got[4] != c.p50 || got[5] != c.p99 || got[6] != c.note {
			t.Errorf("%s %s: %q\nwant N %s, P50 %s, P99 %s, %q", c.measure, c.subject, got, c.n, c.p50, c.p99, c.note)
		}
	}
	if !r.failed {
		t.Error("a slow, a failed and a wrongly answering function did not fail the report")
	}
	for _, rw := range r.t.rows {
		if rw[0] == "first invoke, linux/arm64" && rw[1] == "usage" {
			t.Error("a function without a probe has a first-invoke row")
		}
	}
}

// stats is n requests of d each over elapsed, and the failures.
func stats(n int, d, elapsed time.Duration, errs ...string) loadStats {
	s := loadStats{elapsed: elapsed, errs: errs}
	for range n {
		s.lat = append(s.lat, d)
	}
	return s
}

// The creation rows: requests a second, and the API's share of DynamoDB
// Local's raw ceiling.
func TestTheLoadRowsCompareTheAPIWithRawWrites(t *testing.T) {
	r := newTestReport()
	r.load(&loadReport{
		api:       stats(100, 4*time.Millisecond, 2*time.Second),
		raw:       stats(200, 2*time.Millisecond, 2*time.Second),
		rawTx:     stats(100, 8*time.Millisecond, 4*time.Second, "TransactionCanceledException", "TransactionCanceledException"),
		itemBytes: 812,
	})
	api := row(t, r, "create job, local API", "POST "+generatePath)
	if api[2] != "100" || api[3] != "50 req/s" || api[4] != "4.00 ms" || !strings.HasSuffix(api[6], ", 2.0 s, all 200") {
		t.Errorf("API row: %q", api)
	}
	raw := row(t, r, "raw PutItem, same table", "job item of 812 B")
	if raw[3] != "100 req/s" || raw[6] != "API: 50% of this rate, p50 ×2.0" {
		t.Errorf("raw row: %q", raw)
	}
	tx := row(t, r, "raw TransactWriteItems", "job Put + workspace ADD + ledger Put + request Put")
	if tx[3] != "25 req/s" || tx[6] != `FAIL: 2 of 102 TransactWriteItems calls failed: "TransactionCanceledException" ×2` {
		t.Errorf("transaction row: %q", tx)
	}
	if !r.failed {
		t.Error("failed transactions did not fail the report")
	}
}

func TestLoadRate(t *testing.T) {
	if got := stats(30, time.Millisecond, 1500*time.Millisecond).rate(); got != 20 {
		t.Errorf("30 calls in 1.5 s: %v a second, want 20", got)
	}
	r := &runReport{done: millis(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), elapsed: 4 * time.Second}
	if got := r.rate(); got != 2.5 {
		t.Errorf("10 jobs in 4 s: %v jobs a second, want 2.5", got)
	}
	if got := stats(3, time.Millisecond, 0).rate(); got != 0 {
		t.Errorf("calls in no elapsed time: %v a second, want 0 (not +Inf)", got)
	}
	if got := (&runReport{done: millis(1)}).rate(); got != 0 {
		t.Errorf("no elapsed time: %v jobs a second, want 0", got)
	}
}

// The job runs' rows, and their checks: a result that is not what was
// asked, or none, fails the run.
func TestTheRunRowsCheckTheResult(t *testing.T) {
	rr := &runReport{delivered: millis(2, 3), claimed: millis(5, 6), done: millis(300, 400), elapsed: time.Second,
		doneDelivered: millis(4), doneClaimed: millis(7), result: "2048x2048 JPEG, 1,234 B"}
	r := newTestReport()
	r.runs(rr)
	if r.failed {
		t.Fatalf("a good run failed: %q", r.t.rows)
	}
	done := row(t, r, "creation → completed, local stack", "")
	if done[2] != "2" || done[3] != "2.00 jobs/s" || done[4] != "300 ms" || done[5] != "400 ms" {
		t.Errorf("completion row: %q", done)
	}
	if check := row(t, r, "result check, local stack", "GET result.urls[0]"); check[6] != "decodes as asked: 2048x2048 JPEG, 1,234 B" {
		t.Errorf("check row: %q", check)
	}
	for _, bad := range []*runReport{
		{done: millis(1), elapsed: time.Second},
		{done: millis(1), elapsed: time.Second, result: "x", resultErr: errString("result is a 1x1 JPEG, want 2048x2048\nmore")},
		{done: millis(1), elapsed: time.Second, result: "x", queueErrs: []string{"job j1 failed"}},
		{done: millis(1), elapsed: time.Second, result: "x", runErrs: []string{"job j2 failed"}},
	} {
		r := newTestReport()
		r.runs(bad)
		if !r.failed {
			t.Errorf("%+v did not fail the report", bad)
		}
	}
	r = newTestReport()
	r.runs(&runReport{result: "", resultErr: nil})
	if check := row(t, r, "result check, local stack", "GET result.urls[0]"); check[6] != "FAIL: no completed job to check" {
		t.Errorf("no result: %q", check)
	}
}

func TestTheStylesRowsShowTheWalkCheck(t *testing.T) {
	r := newTestReport()
	r.styles(&stylesReport{visible: 6000, list: stats(60, 5*time.Millisecond, 2*time.Second), walk: walkCheck{pages: 60, styles: 6000}})
	if got := row(t, r, "style walk check, local API", "every page of filter=all"); got[6] != "60 pages, each of the 6,000 visible styles once" || r.failed {
		t.Errorf("walk row: %q (failed %v)", got, r.failed)
	}
	if got := row(t, r, "list styles, local API", "GET /styles?filter=all"); got[3] != "30 req/s" {
		t.Errorf("list row: %q", got)
	}
	r = newTestReport()
	r.styles(&stylesReport{list: stats(1, time.Millisecond, time.Second), walk: walkCheck{pages: 3, err: errString("style sty_1 shown twice")}})
	if got := row(t, r, "style walk check, local API", "every page of filter=all"); got[6] != "FAIL: style sty_1 shown twice" || !r.failed {
		t.Errorf("failed walk: %q (failed %v)", got, r.failed)
	}
}

func TestTheWebhookAndSigningRowsFailOnErrors(t *testing.T) {
	r := newTestReport()
	r.webhooks(&webhookReport{lat: millis(20, 30)})
	r.signing(stats(10, time.Millisecond, time.Second))
	if r.failed {
		t.Fatalf("good runs failed: %q", r.t.rows)
	}
	if got := row(t, r, "", "SDK client → moto's KMS (ECC_NIST_P256 key)"); got[3] != "10 tokens/s" {
		t.Errorf("signing row: %q", got)
	}
	r.webhooks(&webhookReport{lat: millis(20), errs: []string{"no webhook within 30 s of job j"}})
	if !r.failed {
		t.Error("a lost webhook did not fail the report")
	}
}

// The soak's rows: latency by kind of request, the answers by status, and
// the memory at the end against the first sample after the warm-up.
func TestTheSoakRowsSplitAnswersAndMemory(t *testing.T) {
	mib := int64(1 << 20)
	s := &soakReport{rate: 50, duration: time.Minute, elapsed: 2 * time.Second, created: 2, completed: 1,
		storedFiles: 3, storedBytes: 6 * mib,
		answers: []soakAnswer{
			{kind: "create", status: http.StatusOK, took: 10 * time.Millisecond},
			{kind: "list", status: http.StatusOK, took: 4 * time.Millisecond},
			{kind: "get", status: http.StatusOK, took: 2 * time.Millisecond},
			{kind: "get", status: http.StatusOK, took: 3 * time.Millisecond},
		},
		mem: []memSample{
			{at: -1, runner: 50 * mib, dynamodb: 300 * mib, fauxqs: 80 * mib},
			{at: 5 * time.Second, runner: 70 * mib, dynamodb: 400 * mib, fauxqs: 90 * mib},
			{at: 10 * time.Second, runner: 100 * mib, dynamodb: 500 * mib, fauxqs: 100 * mib},
			{at: 15 * time.Second, runner: 150 * mib, dynamodb: 450 * mib, fauxqs: 100 * mib},
		},
	}
	r := newTestReport()
	r.soak(s)
	if r.failed {
		t.Fatalf("a good soak failed: %q", r.t.rows)
	}
	all := row(t, r, "soak, make run's runner", "all requests")
	if all[2] != "4" || all[3] != "2.0 req/s" || all[6] != "open loop, 50 req/s asked for 1m0s; answers: 200 ×4" {
		t.Errorf("all requests: %q", all)
	}
	if get := row(t, r, "soak, make run's runner", "GET /jobs/{id}"); get[2] != "2" || get[4] != "2.00 ms" || get[5] != "3.00 ms" {
		t.Errorf("reads: %q", get)
	}
	runner := row(t, r, "soak memory, RSS at the end", "runner (infra/local serve)")
	if runner[3] != "150 MiB" || runner[6] != "before the load 50 MiB, at +10s 100 MiB, most 150 MiB; end vs +10s: +50.0%" {
		t.Errorf("runner's memory: %q", runner)
	}
	java := row(t, r, "soak memory, RSS at the end", "DynamoDB Local (java)")
	if !strings.HasSuffix(java[6], "most 500 MiB; end vs +10s: -10.0%") {
		t.Errorf("DynamoDB Local's memory: %q", java)
	}
	if f := row(t, r, "soak memory, RSS at the end", fauxqsRow); !strings.HasSuffix(f[6], "; it holds 3 result files, 6 MiB") {
		t.Errorf("fauxqs's memory: %q", f)
	}

	bad := *s
	bad.answers = append(append([]soakAnswer(nil), s.answers...), soakAnswer{kind: "list", status: 503, took: time.Millisecond},
		soakAnswer{kind: "get", err: "connection reset"})
	bad.dropped = 2
	bad.mem = append(append([]memSample(nil), s.mem...), memSample{at: 20 * time.Second, dynamodb: 1, fauxqs: 1})
	r = newTestReport()
	r.soak(&bad)
	all = row(t, r, "soak, make run's runner", "all requests")
	if want := `FAIL: 1 not 2xx, 1 without an answer ("connection reset" ×1), 2 not sent (500 in flight); answers: 200 ×4, 503 ×1`; all[6] != want {
		t.Errorf("failed soak: %q\nwant %q", all[6], want)
	}
	if m := row(t, r, "soak memory, RSS at the end", "runner (infra/local serve)"); m[6] != "FAIL: no RSS read for this process" {
		t.Errorf("no RSS at the end: %q", m[6])
	}
	r = newTestReport()
	r.soak(&soakReport{err: errString("build infra/local: exit status 1\noutput")})
	if got := row(t, r, "soak, make run's runner", ""); got[6] != "FAIL: build infra/local: exit status 1" || !r.failed {
		t.Errorf("a soak that could not run: %q", got)
	}
}
