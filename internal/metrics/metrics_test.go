package metrics_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"genjobs/internal/clock"
	"genjobs/internal/metrics"
)

// checkEMF checks one line against CloudWatch's Embedded Metric Format
// specification: a JSON object whose _aws member holds a millisecond
// Timestamp and CloudWatchMetrics, an array of directives; each directive
// a Namespace (1-255 characters), Dimensions (arrays of at most 30 names,
// each a string member of the root) and Metrics (at most 100, each a
// Name that is a number member of the root, and a Unit CloudWatch knows).
func checkEMF(line []byte) error {
	var root map[string]json.RawMessage
	if err := json.Unmarshal(line, &root); err != nil {
		return fmt.Errorf("not a JSON object: %v", err)
	}
	var meta struct {
		Timestamp         *json.Number `json:"Timestamp"`
		CloudWatchMetrics []struct {
			Namespace  *string    `json:"Namespace"`
			Dimensions [][]string `json:"Dimensions"`
			Metrics    []struct {
				Name *string `json:"Name"`
				Unit string  `json:"Unit"`
			} `json:"Metrics"`
		} `json:"CloudWatchMetrics"`
	}
	d := json.NewDecoder(bytes.NewReader(root["_aws"]))
	d.UseNumber()
	if err := d.Decode(&meta); err != nil {
		return fmt.Errorf("_aws: %v", err)
	}
	if meta.Timestamp == nil {
		return fmt.Errorf("_aws.Timestamp missing")
	}
	if _, err := meta.Timestamp.Int64(); err != nil {
		return fmt.Errorf("_aws.Timestamp %s is not whole milliseconds", *meta.Timestamp)
	}
	if len(meta.CloudWatchMetrics) == 0 {
		return fmt.Errorf("_aws.CloudWatchMetrics empty")
	}
	units := map[string]bool{"": true, "Seconds": true, "Microseconds": true, "Milliseconds": true, "Bytes": true,
		"Kilobytes": true, "Megabytes": true, "Gigabytes": true, "Terabytes": true, "Bits": true, "Kilobits": true,
		"Megabits": true, "Gigabits": true, "Terabits": true, "Percent": true, "Count": true, "Bytes/Second": true,
		"Kilobytes/Second": true, "Megabytes/Second": true, "Gigabytes/Second": true, "Terabytes/Second": true,
		"Bits/Second": true, "Kilobits/Second": true, "Megabits/Second": true, "Gigabits/Second": true,
		"Terabits/Second": true, "Count/Second": true, "None": true}
	for _, dir := range meta.CloudWatchMetrics {
		if dir.Namespace == nil || len(*dir.Namespace) < 1 || len(*dir.Namespace) > 255 {
			return fmt.Errorf("Namespace %v", dir.Namespace)
		}
		if dir.Dimensions == nil {
			return fmt.Errorf("Dimensions missing")
		}
		for _, set := range dir.Dimensions {
			if len(set) > 30 {
				return fmt.Errorf("a dimension set of %d names", len(set))
			}
			for _, name := range set {
				var v string
				if err := json.Unmarshal(root[name], &v); err != nil {
					return fmt.Errorf("dimension %s is not a string member of the root", name)
				}
			}
		}
		if len(dir.Metrics) == 0 || len(dir.Metrics) > 100 {
			return fmt.Errorf("%d metrics in a directive", len(dir.Metrics))
		}
		for _, m := range dir.Metrics {
			if m.Name == nil || *m.Name == "" {
				return fmt.Errorf("a metric without a Name")
			}
			var v float64
			if err := json.Unmarshal(root[*m.Name], &v); err != nil {
				return fmt.Errorf("metric %s is not a number member of the root", *m.Name)
			}
			if !units[m.Unit] {
				return fmt.Errorf("metric %s: unit %q is not CloudWatch's", *m.Name, m.Unit)
			}
		}
	}
	return nil
}

func TestEveryMetricIsAValidEMFLine(t *testing.T) {
	var out bytes.Buffer
	clk := &clock.Fixed{T: time.Date(2026, 11, 24, 19, 0, 0, 0, time.UTC)}
	e := metrics.New(&out, "worker", clk)
	e.Count(metrics.JobsCreated, "model-e-4", 1)
	e.Count(metrics.JobsCompleted, "standard-enhance", 1)
	e.Count(metrics.JobsFailed, "model-e-4", 1, metrics.Code("engine_error"))
	e.Count(metrics.JobsCancelled, "model-e-4", 1)
	e.Duration(metrics.QueueWait, "model-e-4", 1500*time.Millisecond)
	e.Duration(metrics.RunTime, "model-e-4", 2*time.Second)
	e.Duration(metrics.ProviderLatency, "model-c", 800*time.Millisecond)
	e.Count(metrics.WebhookAttempts, "", 1, metrics.Outcome("delivered"))
	e.Duration(metrics.WebhookLatency, "", 120*time.Millisecond)
	e.Count(metrics.PaymentRequired, "", 1)
	e.Count(metrics.TooManyRequests, "", 1)

	sc := bufio.NewScanner(&out)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Bytes()
		if err := checkEMF(line); err != nil {
			t.Errorf("line %d %s: %v", n, line, err)
		}
		var root map[string]any
		_ = json.Unmarshal(line, &root)
		aws := root["_aws"].(map[string]any)
		if ts := aws["Timestamp"].(float64); int64(ts) != clk.T.UnixMilli() {
			t.Errorf("line %d: Timestamp %v; want the clock's %d", n, ts, clk.T.UnixMilli())
		}
		dir := aws["CloudWatchMetrics"].([]any)[0].(map[string]any)
		if dir["Namespace"] != metrics.Namespace {
			t.Errorf("line %d: namespace %v", n, dir["Namespace"])
		}
		for k := range root {
			if k2 := strings.ToLower(k); strings.Contains(k2, "workspace") || strings.Contains(k2, "job_id") || k2 == "job" {
				t.Errorf("line %d carries %s: metrics are never per workspace or job", n, k)
			}
		}
	}
	if n != 11 {
		t.Errorf("%d lines; want one per call, 11", n)
	}
	if err := checkEMF([]byte(`{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"GenJobs","Dimensions":[["Function"]],"Metrics":[{"Name":"X"}]}]},"X":1}`)); err == nil {
		t.Error("the check accepts a dimension missing from the root")
	}
}

func TestFailuresAreDimensionedByCodeAndModel(t *testing.T) {
	var out bytes.Buffer
	metrics.New(&out, "sweeper", clock.System{}).Count(metrics.JobsFailed, "model-e-4", 1, metrics.Code("timeout"))
	var root struct {
		AWS struct {
			CloudWatchMetrics []struct{ Dimensions [][]string } `json:"CloudWatchMetrics"`
		} `json:"_aws"`
		Function, Model, Code string
		JobsFailed            float64
	}
	if err := json.Unmarshal(out.Bytes(), &root); err != nil {
		t.Fatal(err)
	}
	dims := root.AWS.CloudWatchMetrics[0].Dimensions
	if fmt.Sprint(dims) != "[[Function Model Code]]" || root.Function != "sweeper" || root.Model != "model-e-4" ||
		root.Code != "timeout" || root.JobsFailed != 1 {
		t.Errorf("line %s", out.Bytes())
	}
}

func TestANilEmitterDoesNothing(t *testing.T) {
	var e *metrics.Emitter
	e.Count(metrics.JobsCreated, "m", 1) // must not panic
	e.Duration(metrics.RunTime, "m", time.Second)
}
