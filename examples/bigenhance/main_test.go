package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"genjobs/infra/local/devstack"
	"genjobs/infra/local/sam"
	"genjobs/infra/local/triggers"
	"genjobs/internal/httpapi/apigw"
	"genjobs/internal/store"
	"genjobs/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// served starts the local stack on fresh resources behind the API Gateway
// stand-in, with the template's queue mapping playing, as `make run` does,
// and returns the API's URL and the demo token.
func served(t *testing.T) (api, token string) {
	t.Helper()
	ctx := context.Background()
	local := devstack.New(testenv.DynamoDB(t), testenv.SQS(t), testenv.S3(t), "http://127.0.0.1:3000")
	local.Table, local.JobsQueue = testenv.UniqueName(t, "tbl"), testenv.UniqueName(t, "jobs")
	local.DeliveriesQueue = testenv.UniqueName(t, "dlv")
	local.UseMoto(testenv.MotoEndpoint())
	local.ResultsBucket, local.AssetsBucket = testenv.NewBucket(t), testenv.NewBucket(t)
	tpl, err := sam.Load("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := local.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	if err := local.ProvisionQueues(ctx, tpl); err != nil {
		t.Fatal(err)
	}
	token, err = devstack.SeedDemo(ctx, store.New(local.DynamoDB, local.Table), filepath.Join(t.TempDir(), "demo-token"))
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	hs, err := local.Functions(tpl, log)
	if err != nil {
		t.Fatal(err)
	}
	gw, err := apigw.New(tpl.Routes(), triggers.HTTP(tpl, hs), log)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gw)
	t.Cleanup(srv.Close)
	runCtx, stop := context.WithCancel(ctx)
	o := local.TriggerOptions()
	o.PollWait, o.ScheduleEvery, o.Log = time.Second, time.Hour, log
	runner, err := triggers.Start(runCtx, tpl, hs, o)
	if err != nil {
		stop()
		t.Fatal(err)
	}
	t.Cleanup(func() { stop(); runner.Wait() })
	return srv.URL, token
}

func TestARoundTripChecksTheResultsSize(t *testing.T) {
	api, token := served(t)
	var out bytes.Buffer
	c := Config{API: api, Token: token, InSize: 300, Width: 640, Height: 480, Format: "jpg",
		Out: filepath.Join(t.TempDir(), "out.jpg"), Poll: 50 * time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := Run(ctx, c, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{"upload", `"status":"completed"`, "jpeg 640x480", "total"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, out.String())
		}
	}
	cfg, format, err := decodeHeader(c.Out)
	if err != nil || format != "jpeg" || cfg.Width != 640 || cfg.Height != 480 {
		t.Errorf("the downloaded file: %s %dx%d, %v", format, cfg.Width, cfg.Height, err)
	}

	// A request the API refuses (over 22000 x 22000 pixels) fails the run.
	c.Width, c.Height = 32000, 32000
	out.Reset()
	if err := Run(ctx, c, &out); err == nil || !strings.Contains(err.Error(), "answered 400") {
		t.Errorf("a refused request: %v; want the 400 reported\n%s", err, out.String())
	}
}
