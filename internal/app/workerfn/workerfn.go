// Package workerfn wires the worker functions: the worker, on the jobs
// queue, and the light worker, the same code on the light jobs' queue
// (WORKER_QUEUE_URL and MAX_SOURCE_PIXELS tell them apart). Only their
// binaries link the engines and their image codecs (their packages register
// decoders at init).
package workerfn

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"genjobs/internal/app"
	"genjobs/internal/app/dynamodbwire"
	"genjobs/internal/app/s3wire"
	"genjobs/internal/app/sqswire"
	"genjobs/internal/blob"
	"genjobs/internal/catalog"
	"genjobs/internal/engine/reference"
	"genjobs/internal/fetch"
	"genjobs/internal/netguard"
	"genjobs/internal/queue"
	"genjobs/internal/store/assetsdb"
	"genjobs/internal/worker"
	"genjobs/internal/xray"
)

// Build builds the handler of a worker's queue: functions/worker and
// functions/lightworker both start it.
func Build(d app.Deps) (app.SQSHandler, error) {
	if err := app.Require(map[string]string{
		"TABLE_NAME": d.Table, "JOBS_QUEUE_URL": d.Queues.Jobs, "RESULTS_BUCKET": d.Buckets.Results,
		"ASSETS_BUCKET": d.Buckets.Assets,
	}); err != nil {
		return nil, err
	}
	cat, err := catalog.New()
	if err != nil {
		return nil, err
	}
	sq := sqswire.Client(d)
	st, jobs := dynamodbwire.Store(d), sqswire.JobQueue(d, sq)
	w := &worker.Worker{
		Metrics:   d.Metrics,
		Store:     st,
		Ender:     sqswire.Lifecycle(d, st, jobs),
		Catalog:   cat,
		Engines:   reference.Engines(),
		Inputs:    Inputs(d.Network.Guard(), xray.Lambda),
		Blobs:     Blobs{s3wire.Store(d)},
		Assets:    assetsdb.New(st),
		Clock:     d.Clock,
		Log:       d.Log,
		LeaseFor:  cmp.Or(d.Worker.LeaseFor, worker.DefaultLeaseFor),
		Heartbeat: worker.DefaultHeartbeat,
	}
	if d.Worker.Queue != "" {
		w.Retry = queue.NewRedeliverer(sq, d.Worker.Queue)
	}
	if d.Worker.MaxSourcePixels > 0 { // the light worker
		w.MaxSourcePixels, w.Handover = d.Worker.MaxSourcePixels, jobs
	}
	return w.HandleSQS, nil
}

// Inputs is the worker's fetcher of input URLs: through the guard g, each
// request of a sampled invocation in its X-Ray trace (daemon d; nil: none),
// as the provider function's calls are. A subsegment names the URL's scheme
// and host only: a client's URL may carry its token in its path.
func Inputs(g *netguard.Guard, d *xray.Daemon) *fetch.Fetcher {
	f := fetch.New(g)
	f.Client.Transport = d.HostTransport(f.Client.Transport)
	return f
}

// Blobs is the S3 adapter as the worker uses it: its uploads as
// worker.Upload, its errors as the worker's.
type Blobs struct{ *blob.Store }

// CreateResult starts a streamed upload of an output.
func (b Blobs) CreateResult(ctx context.Context, key, contentType string) worker.Upload {
	return b.Store.CreateResult(ctx, key, contentType)
}

// ReadAsset reads an uploaded asset's file, at most max bytes.
func (b Blobs) ReadAsset(ctx context.Context, key string, max int64) ([]byte, string, error) {
	data, contentType, err := b.Store.ReadAsset(ctx, key, max)
	switch {
	case errors.Is(err, blob.ErrNotFound):
		return nil, "", fmt.Errorf("%w: %w", worker.ErrNotUploaded, err)
	case errors.Is(err, blob.ErrTooLarge):
		return nil, "", fmt.Errorf("%w: %w", worker.ErrTooLarge, err)
	}
	return data, contentType, err
}
