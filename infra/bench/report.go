package main

import (
	"cmp"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"genjobs/infra/local/triggers"
)

// report turns the measurements into the table and notes any failed check.
type report struct {
	t      *table
	host   string
	failed bool
}

func newReportTable() *table {
	return newTable(
		column{title: "MEASURE"},
		column{title: "SUBJECT"},
		column{title: "N", right: true},
		column{title: "VALUE", right: true},
		column{title: "P50", right: true},
		column{title: "P99", right: true},
		column{title: "NOTE"},
	)
}

// fail marks the run failed and returns the note that says why.
func (r *report) fail(format string, args ...any) string {
	r.failed = true
	return "FAIL: " + fmt.Sprintf(format, args...)
}

func (r *report) sizes(ts []target, size map[string]int64) {
	bare := size[bareName]
	for _, t := range ts {
		n := size[t.name]
		limit := int64(sizeLimit)
		switch t.name {
		case "worker", "lightworker":
			limit = workerSizeLimit
		case "deliverer", "provider", "callbacks", "mcp":
			limit = delivererSizeLimit
		case "console":
			limit = consoleSizeLimit
		}
		var note string
		switch {
		case n >= limit:
			note = r.fail("%s B: not under the %d MB limit", commas(n), limit/1_000_000)
		case t.name == bareName:
			note = "baseline"
		case limit-n < minSpare:
			note = r.fail("%s B: less than %.0f MB to spare under the %d MB limit", commas(n), float64(minSpare)/1e6, limit/1_000_000)
		default:
			note = fmt.Sprintf("%+.2f MB vs bare; %.2f MB to spare", float64(n-bare)/1e6, float64(limit-n)/1e6)
		}
		r.t.add("size, linux/arm64", t.name, "", megabytes(n), "", "", note)
	}
}

func (r *report) coldStarts(ts []target, cold map[string]*coldStats) {
	bare := percentile(cold[bareName].cold, 50)
	for _, t := range ts {
		st := cold[t.name]
		p50 := percentile(st.cold, 50)
		note := "baseline"
		if t.name != bareName {
			x := ratio(p50, bare)
			note = fmt.Sprintf("%.2fx bare (p50), %s", x, signedMS(p50-bare))
			if x > maxColdRatio {
				note = r.fail("%.2fx bare (p50), over %.1fx", x, maxColdRatio)
			}
		}
		if len(st.errs) > 0 {
			note = r.fail("%d of %d starts failed: %s", len(st.errs), coldRuns+1, strings.Join(strings.Fields(st.errs[0]), " "))
		}
		r.t.add("cold start, "+r.host, t.name, strconv.Itoa(len(st.cold)), "",
			ms(p50), ms(percentile(st.cold, 99)), note)
	}
	for _, t := range ts {
		st := cold[t.name]
		if st.want == 0 {
			continue
		}
		r.t.add("first invoke, "+r.host, t.name, strconv.Itoa(len(st.invoke)), "",
			ms(percentile(st.invoke, 50)), ms(percentile(st.invoke, 99)), r.statusNote(st))
	}
}

// statusNote says whether every first invocation answered the probe's status.
func (r *report) statusNote(st *coldStats) string {
	var got []string
	for _, code := range slices.Sorted(maps.Keys(st.statuses)) {
		got = append(got, fmt.Sprintf("%d ×%d", code, st.statuses[code]))
	}
	if len(st.statuses) == 1 && st.statuses[st.want] > 0 {
		return fmt.Sprintf("answered %s as expected", strings.Join(got, ", "))
	}
	if len(got) == 0 {
		got = []string{"nothing"}
	}
	return r.fail("want %d, got %s", st.want, strings.Join(got, ", "))
}

func (r *report) load(l *loadReport) {
	api, raw := l.api, l.raw
	apiNote := fmt.Sprintf("%d clients, %.1f s, all 200", loadClients, api.elapsed.Seconds())
	if len(api.errs) > 0 {
		apiNote = r.fail("%d of %d not 200: %s", len(api.errs), len(api.lat)+len(api.errs), failureSummary(api.errs))
	}
	r.t.add("create job, local API", "POST "+generatePath, strconv.Itoa(len(api.lat)),
		fmt.Sprintf("%.0f req/s", api.rate()), ms(percentile(api.lat, 50)), ms(percentile(api.lat, 99)), apiNote)

	rawNote := fmt.Sprintf("API: %.0f%% of this rate, p50 ×%.1f", 100*api.rate()/raw.rate(),
		ratio(percentile(api.lat, 50), percentile(raw.lat, 50)))
	if len(raw.errs) > 0 {
		rawNote = r.fail("%d of %d PutItem calls failed: %s", len(raw.errs), len(raw.lat)+len(raw.errs), failureSummary(raw.errs))
	}
	r.t.add("raw PutItem, same table", fmt.Sprintf("job item of %d B", l.itemBytes),
		strconv.Itoa(len(raw.lat)), fmt.Sprintf("%.0f req/s", raw.rate()),
		ms(percentile(raw.lat, 50)), ms(percentile(raw.lat, 99)), rawNote)

	tx := l.rawTx
	txNote := fmt.Sprintf("API (billing on): %.0f%% of this rate, p50 ×%.1f", 100*api.rate()/tx.rate(),
		ratio(percentile(api.lat, 50), percentile(tx.lat, 50)))
	if len(tx.errs) > 0 {
		txNote = r.fail("%d of %d TransactWriteItems calls failed: %s", len(tx.errs), len(tx.lat)+len(tx.errs), failureSummary(tx.errs))
	}
	r.t.add("raw TransactWriteItems", "job Put + workspace ADD + ledger Put + request Put",
		strconv.Itoa(len(tx.lat)), fmt.Sprintf("%.0f req/s", tx.rate()),
		ms(percentile(tx.lat, 50)), ms(percentile(tx.lat, 99)), txNote)
}

// webhooks reports measureWebhooks.
func (r *report) webhooks(w *webhookReport) {
	note := "one job at a time: stream -> notifier -> deliveries queue -> deliverer (signs) -> receiver; aim p50 < 100 ms, p99 < 500 ms"
	if len(w.errs) > 0 {
		note = r.fail("%d failed: %s", len(w.errs), failureSummary(w.errs))
	}
	r.t.add("webhook, local stack", "terminal write acknowledged → receiver's request", strconv.Itoa(len(w.lat)),
		"", ms(percentile(w.lat, 50)), ms(percentile(w.lat, 99)), note)
}

// signing reports measureSigning.
func (r *report) signing(s loadStats) {
	note := fmt.Sprintf("%d clients, %.1f s; in AWS each is a KMS Sign (ECC quota: 300/s per account and Region)", signClients, s.elapsed.Seconds())
	if len(s.errs) > 0 {
		note = r.fail("%d of %d failed: %s", len(s.errs), len(s.lat)+len(s.errs), failureSummary(s.errs))
	}
	r.t.add("webhook signing, KMS path", "SDK client → moto's KMS (ECC_NIST_P256 key)", strconv.Itoa(len(s.lat)),
		fmt.Sprintf("%.0f tokens/s", s.rate()), ms(percentile(s.lat, 50)), ms(percentile(s.lat, 99)), note)
}

// runs reports the job runs of measureRuns.
func (r *report) runs(rr *runReport) {
	queueNote := func(what string) string {
		if len(rr.queueErrs) > 0 {
			return r.fail("%d of %d jobs: %s", len(rr.queueErrs), queueJobs, failureSummary(rr.queueErrs))
		}
		return what
	}
	r.t.add("queue delivery, local stack", "creation → worker invoked", strconv.Itoa(len(rr.delivered)), "",
		ms(percentile(rr.delivered, 50)), ms(percentile(rr.delivered, 99)),
		queueNote("one job at a time, queue idle; the worker's SQS handler, wrapped, notes the message"))
	r.t.add("queue latency, local stack", "creation → first status write", strconv.Itoa(len(rr.claimed)), "",
		ms(percentile(rr.claimed, 50)), ms(percentile(rr.claimed, 99)),
		queueNote("same jobs; the claim's UpdateItem (-> processing) acknowledged, noted by a client middleware"))

	subject := fmt.Sprintf("enhance %d² → %d² %s", photoSide, runSide, runFormat)
	runNote := fmt.Sprintf("%d in flight, GET /jobs/{id} every %s, all completed; p50 delivery %s, first write %s",
		runInFlight, runPollEvery, ms(percentile(rr.doneDelivered, 50)), ms(percentile(rr.doneClaimed, 50)))
	if len(rr.runErrs) > 0 {
		runNote = r.fail("%d of %d jobs: %s", len(rr.runErrs), runJobs, failureSummary(rr.runErrs))
	}
	r.t.add("creation → completed, local stack", subject, strconv.Itoa(len(rr.done)), fmt.Sprintf("%.2f jobs/s", rr.rate()),
		ms(percentile(rr.done, 50)), ms(percentile(rr.done, 99)), runNote)

	check := "decodes as asked: " + rr.result
	switch {
	case rr.resultErr != nil:
		check = r.fail("%s", firstLine(rr.resultErr.Error()))
	case rr.result == "":
		check = r.fail("no completed job to check")
	}
	r.t.add("result check, local stack", "GET result.urls[0]", "1", "", "", "", check)
}

// footnotes say what each measure is, and how busy the machine was.
func (r *report) footnotes(srcBytes int, loadBefore, loadAtLoad, loadAtRuns string) {
	r.t.note("size: the deployed build (CGO_ENABLED=0, -tags lambda.norpc -trimpath -ldflags='-s -w'); limit 12 MB = 12,000,000 B (the workers, with the image codecs: 16 MB; the deliverer, provider, callbacks and mcp: 13 MB).")
	r.t.note("bare: config.LoadDefaultConfig + DynamoDB and SQS clients + lambda.Start with a trivial handler, none of our code.")
	r.t.note("cold start: exec to the first GET /2018-06-01/runtime/invocation/next under a fake Runtime API, built for %s.", r.host)
	r.t.note("first invoke: the process's first event handed over to its response posted back (no network: events without a token).")
	r.t.note("create job: workspace %s with max_concurrent = max_running = %s (no 429s, no backlog); %d-request warm-up first;",
		loadWorkspace, commas(loadLimit), warmupRequests)
	r.t.note("  each request = 1 TransactWriteItems (the job's conditional Put, the workspace's slot counters and reservation, the ledger entry, the request's Put) + 1 SQS SendMessage; the token and workspace GetItems only when the function instance has not read them in the last 5 s.")
	r.t.note("raw PutItem: copies of a job item the API wrote, with its condition, same count and clients: DynamoDB Local's ceiling.")
	r.t.note("raw TransactWriteItems: a creation's four writes (job, the one workspace item, a ledger entry, the request) without the service: the ceiling of billed creation in one workspace here.")
	r.t.note("job runs: own table, queue and buckets on the same emulators; workspace %s with max_concurrent = max_running = %d, so no",
		runsWorkspace, runsLimit)
	r.t.note("  backlog waits; WorkerFunction played from the queue by triggers.Start as in `make run` (batch 1, %d pollers), SweeperFunction every %s;",
		triggers.DefaultPollers, triggers.DefaultScheduleEvery)
	r.t.note("  source: one %dx%d synthetic photo (gradients, hard edges, grain; %s B PNG) uploaded once by POST /assets.",
		photoSide, photoSide, commas(int64(srcBytes)))
	r.t.note("queue: %d jobs (the enhance below) created one at a time, each once the one before completed (queue empty, both pollers in",
		queueJobs)
	r.t.note("  their long poll), from the creation's answer read to: the worker's handler receiving the message; DynamoDB acknowledging")
	r.t.note("  the worker's first status write (the claim). Exact instants, no polling; below 0: the worker was first. They warm the worker up.")
	r.t.note("creation → completed: %d jobs created by %d clients, each creating its next job once its last completed; latency = creation",
		runJobs, runInFlight)
	r.t.note("  answered -> GET /jobs/{id} answered completed; rate = jobs / (first creation sent -> last completion seen).")
	r.t.note("p99 is nearest-rank: of %d starts, %d or %d jobs it is the slowest one.", coldRuns, queueJobs, runJobs)
	r.t.note("machine: %d CPUs; 1-minute load average %s at the start, %s before the load runs, %s before the job runs.",
		runtime.NumCPU(), loadBefore, loadAtLoad, loadAtRuns)
}

func ratio(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// failureSummary counts the distinct failures, most frequent first, and
// shows the first three.
func failureSummary(errs []string) string {
	count := map[string]int{}
	for _, e := range errs {
		count[firstLine(e)]++
	}
	// Most frequent first; kinds as frequent as each other by their text, so
	// that two runs with the same failures print the same line.
	distinct := slices.SortedFunc(maps.Keys(count), func(a, b string) int {
		return cmp.Or(count[b]-count[a], strings.Compare(a, b))
	})
	var parts []string
	for i, e := range distinct {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("and %d more kinds", len(distinct)-3))
			break
		}
		parts = append(parts, fmt.Sprintf("%q ×%d", e, count[e]))
	}
	return strings.Join(parts, "; ")
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 160 {
		s = s[:160] + "..."
	}
	return s
}

// commas writes n with thousands separators.
func commas(n int64) string {
	s := strconv.FormatInt(n, 10)
	digits := strings.TrimPrefix(s, "-")
	for i := len(digits) - 3; i > 0; i -= 3 {
		digits = digits[:i] + "," + digits[i:]
	}
	return s[:len(s)-len(strings.TrimPrefix(s, "-"))] + digits
}
