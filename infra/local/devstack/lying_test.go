package devstack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"genjobs/infra/local/devstack"
	"genjobs/infra/local/triggers"
	"genjobs/internal/engine/enginetest"
	"genjobs/internal/job"
	"genjobs/internal/store/ledgerdb"
)

// Six concurrent enhance jobs whose input is a PNG of a hundred bytes
// claiming 14000 x 14000 pixels at 16 bits: the light worker hands each to
// the heavy lane (its header claims more than the light worker decodes),
// and the heavy worker refuses it. Every job ends failed invalid_input by
// its workers alone: the sweeper, the rescuer of lost messages and lapsed
// leases, is switched off, so a job whose attempt returned without ending
// it or leaving its message for a retry would stay running (and hold one of
// the workspace's running slots) until the test gives up. Nothing is
// charged.
func TestConcurrentLyingInputsEndByTheirWorkers(t *testing.T) {
	noSweeper := func(hs map[string]triggers.Handlers) {
		h := hs["SweeperFunction"]
		h.Schedule = func(context.Context, events.EventBridgeEvent) error { return nil }
		hs["SweeperFunction"] = h
	}
	_, srv, st, token := servedStackWithHandlers(t, noSweeper)
	call := func(method, path, contentType string, body []byte) (int, []byte) {
		req, _ := http.NewRequest(method, srv.URL+path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return 0, nil
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}

	lie := enginetest.LyingPNG(14000, 14000)
	status, body := call("POST", "/assets", "image/png", lie)
	if status != 201 {
		t.Fatalf("POST /assets: %d %s", status, body)
	}
	var up struct {
		AssetURL string `json:"asset_url"`
	}
	_ = json.Unmarshal(body, &up)

	// Light jobs (a 1024 x 1024 output), sent at once.
	const jobs = 6
	ids := make([]string, jobs)
	var wg sync.WaitGroup
	for i := range jobs {
		wg.Go(func() {
			status, body := call("POST", "/generate/enhance/vendor-a/standard-enhance", "application/json",
				[]byte(`{"width":1024,"height":1024,"image_url":"`+up.AssetURL+`","model":"Standard V2","output_format":"jpg"}`))
			if status != 200 {
				t.Errorf("POST /generate: %d %s", status, body)
				return
			}
			var rec struct {
				ID string `json:"job_id"`
			}
			_ = json.Unmarshal(body, &rec)
			ids[i] = rec.ID
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	type record struct {
		Status string `json:"status"`
		Error  *struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	// Long enough for six attempts on a loaded machine; far shorter than a
	// job's deadline, and the sweeper that would rescue them is off.
	deadline := time.Now().Add(90 * time.Second)
	ended := map[string]record{}
	for len(ended) < jobs && time.Now().Before(deadline) {
		for _, id := range ids {
			if _, done := ended[id]; done {
				continue
			}
			_, body := call("GET", "/jobs/"+id, "", nil)
			var rec record
			_ = json.Unmarshal(body, &rec)
			if job.Status(rec.Status).Terminal() {
				ended[id] = rec
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, id := range ids {
		rec, done := ended[id]
		switch {
		case !done:
			j, _ := st.Job(context.Background(), id)
			t.Errorf("job %s is still %s (lane %q, attempts %d): an attempt returned without ending it or leaving it for a retry",
				id, j.Status, j.Lane, j.Attempts)
		case rec.Status != "failed" || rec.Error == nil || rec.Error.Code != job.CodeInvalidInput:
			t.Errorf("job %s ended %s %+v; want failed with %s", id, rec.Status, rec.Error, job.CodeInvalidInput)
		}
	}
	audit, err := ledgerdb.New(st).AuditLedger(context.Background(), devstack.DemoWorkspace)
	if err != nil {
		t.Fatal(err)
	}
	if audit.Stored.Spent != 0 || audit.Stored.Reserved != 0 || len(audit.Differences) > 0 {
		t.Errorf("demo balance %+v, ledger differences %v; want nothing spent or reserved", audit.Stored, audit.Differences)
	}
}
