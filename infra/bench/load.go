package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"genjobs/infra/local/devstack"
	"genjobs/infra/local/sam"
	"genjobs/infra/local/triggers"
	"genjobs/internal/auth"
	"genjobs/internal/billing"
	"genjobs/internal/emulator"
	"genjobs/internal/httpapi/apigw"
	"genjobs/internal/job"
	"genjobs/internal/store"
	"genjobs/internal/store/accountsdb"
	"genjobs/internal/store/tokensdb"
)

// Bounds of each load run: whichever of the count and the time comes first.
const (
	loadClients  = 8
	loadRequests = 2000
	loadDuration = 10 * time.Second
	// The JVM of DynamoDB Local compiles its hot paths during the first
	// requests; these are sent first and not counted.
	warmupRequests = 100
)

// The request driven through the API: the cheapest model's job creation.
const (
	generatePath = "/generate/3d/vendor-g/model-g-3.1-rapid"
	generateBody = `{"prompt": "a teapot"}`
)

// loadStats is one load run.
type loadStats struct {
	lat     []time.Duration // of each successful call
	errs    []string        // one per failed call
	elapsed time.Duration
}

func (s loadStats) rate() float64 {
	if s.elapsed <= 0 {
		return 0
	}
	return float64(len(s.lat)) / s.elapsed.Seconds()
}

// loadReport is the load runs.
type loadReport struct {
	api, raw, rawTx loadStats
	itemBytes       int // size of the job item, as DynamoDB counts it
}

// drive calls call from clients goroutines until n calls have been made or
// d has passed, and times each call.
func drive(ctx context.Context, clients, n int, d time.Duration, call func(context.Context) error) loadStats {
	calls := make([]func(context.Context) error, clients)
	for i := range calls {
		calls[i] = call
	}
	return driveEach(ctx, n, d, calls)
}

// driveEach is drive with a call of its own for each goroutine (one that
// keeps state between its calls, such as a cursor).
func driveEach(ctx context.Context, n int, d time.Duration, calls []func(context.Context) error) loadStats {
	var issued atomic.Int64
	deadline := time.Now().Add(d)
	per := make([]loadStats, len(calls))
	start := time.Now()
	var wg sync.WaitGroup
	for w := range per {
		wg.Go(func() {
			for issued.Add(1) <= int64(n) && time.Now().Before(deadline) && ctx.Err() == nil {
				t := time.Now()
				if err := calls[w](ctx); err != nil {
					per[w].errs = append(per[w].errs, err.Error())
					continue
				}
				per[w].lat = append(per[w].lat, time.Since(t))
			}
		})
	}
	wg.Wait()
	all := loadStats{elapsed: time.Since(start)}
	for _, s := range per {
		all.lat = append(all.lat, s.lat...)
		all.errs = append(all.errs, s.errs...)
	}
	return all
}

// measureStack starts DynamoDB Local and fauxqs once and measures, on
// them, job creation (measureLoad), job runs (measureRuns) and webhooks
// (measureWebhooks), each on a table, queues and buckets of its own: the
// runs' worker never sees the load's jobs.
func measureStack(ctx context.Context, root string, tpl *sam.Template, src []byte, tmp string) (load *loadReport, runs *runReport, hooks *webhookReport, err error) {
	err = withStack(ctx, root, "bench-", func(clients *devstack.Stack) error {
		if load, err = measureLoad(ctx, tpl, clients); err != nil {
			return err
		}
		if runs, err = measureRuns(ctx, tpl, clients, src); err != nil {
			return err
		}
		hooks, err = measureWebhooks(ctx, tpl, clients, tmp)
		return err
	})
	return load, runs, hooks, err
}

// withStack starts DynamoDB Local, fauxqs and moto, their logs named by
// logPrefix, runs fn on clients of them and stops them.
func withStack(ctx context.Context, root, logPrefix string, fn func(*devstack.Stack) error) error {
	stack, err := emulator.StartStack(ctx, emulator.StackOptions{RepoRoot: root, LogPrefix: logPrefix})
	if err != nil {
		return err
	}
	defer func() {
		if err := stack.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
		}
	}()
	clients := devstack.New(emulator.DynamoDBClient(stack.DynamoDB.Endpoint()),
		emulator.SQSClient(stack.Fauxqs.Endpoint()), emulator.S3Client(stack.Fauxqs.Endpoint()), "")
	clients.UseMoto(stack.Moto.Endpoint())
	return fn(clients)
}

// loadWorkspace holds the load's jobs. None of them ever runs, so each one
// keeps its slots: the limits must exceed every job the load creates, or the
// run would measure 429s (the demo workspace allows 20 jobs at once).
const (
	loadWorkspace = "ws_bench_load"
	loadLimit     = 1_000_000
)

// measureLoad serves the API as `make run` does, on the local stack's usual
// table and queue, and measures job creation through it, then plain PutItem
// calls of the same job item on the same table: the ceiling DynamoDB Local
// puts on any write path here. No worker runs: the jobs stay queued.
func measureLoad(ctx context.Context, tpl *sam.Template, local *devstack.Stack) (*loadReport, error) {
	served, token, err := serveBench(ctx, tpl, local, store.New(local.DynamoDB, local.Table), loadWorkspace, loadLimit)
	if err != nil {
		return nil, err
	}
	defer served.close()

	// One kept-alive connection per client goroutine.
	api := newRESTClient(served.url, token, startTimeout, loadClients)
	body, err := api.createJob(ctx)
	if err != nil {
		return nil, fmt.Errorf("first job through the API: %w", err)
	}
	id, err := jobID(body)
	if err != nil {
		return nil, fmt.Errorf("first job through the API: %w", err)
	}
	put, err := newRawPut(ctx, local.DynamoDB, id)
	if err != nil {
		return nil, err
	}
	rep := &loadReport{itemBytes: itemSize(put.item)}

	fmt.Fprintf(os.Stderr, "bench: job creation through the API (%d clients)...\n", loadClients)
	drive(ctx, loadClients, warmupRequests, loadDuration, api.createCall)
	rep.api = drive(ctx, loadClients, loadRequests, loadDuration, api.createCall)

	// As many calls as the API run made, from as many clients.
	n := len(rep.api.lat) + len(rep.api.errs)
	fmt.Fprintf(os.Stderr, "bench: %d raw PutItem calls...\n", n)
	drive(ctx, loadClients, warmupRequests, loadDuration, put.call)
	rep.raw = drive(ctx, loadClients, n, loadDuration, put.call)
	fmt.Fprintf(os.Stderr, "bench: %d raw TransactWriteItems calls...\n", n)
	drive(ctx, loadClients, warmupRequests, loadDuration, put.transact)
	rep.rawTx = drive(ctx, loadClients, n, loadDuration, put.transact)
	return rep, ctx.Err()
}

// benchBalance funds a bench workspace for every job a run creates: the
// load's cheapest jobs cost 0.10 USD each.
const benchBalance = 1_000_000 * billing.USD

// benchWorkspace creates a workspace with API access and both slot limits
// at limit, and a token for it, and returns the token.
func benchWorkspace(ctx context.Context, st *store.Store, id string, limit int) (string, error) {
	now := time.Now()
	s := accountsdb.New(st)
	err := s.CreateWorkspace(ctx, auth.Workspace{
		ID: id, Name: "Bench", APIEnabled: true, MaxConcurrent: limit, MaxRunning: limit, CreatedAt: now,
	})
	if err != nil {
		return "", fmt.Errorf("bench workspace: %w", err)
	}
	if _, err := s.TopUp(ctx, id, "pay_bench", benchBalance, now); err != nil {
		return "", fmt.Errorf("bench workspace balance: %w", err)
	}
	token, hash := auth.NewToken()
	err = tokensdb.New(st).CreateToken(ctx, auth.Token{
		ID: auth.NewID("tok_"), WorkspaceID: id, Name: "bench", Hash: hash, CreatedAt: now,
	})
	if err != nil {
		return "", fmt.Errorf("bench workspace token: %w", err)
	}
	return token, nil
}

// serveBench makes local's table, queues (the template's others too: the
// light jobs queue, the provider queue, their DLQs, whose URLs every
// function's environment names) and buckets, a workspace of the bench in st
// with both slot limits at limit, and serves the API on them (serveAPI).
// It returns the served API and the workspace's token.
func serveBench(ctx context.Context, tpl *sam.Template, local *devstack.Stack, st *store.Store, workspace string, limit int) (*servedAPI, string, error) {
	if err := local.Provision(ctx); err != nil {
		return nil, "", err
	}
	if err := local.ProvisionQueues(ctx, tpl); err != nil {
		return nil, "", err
	}
	token, err := benchWorkspace(ctx, st, workspace, limit)
	if err != nil {
		return nil, "", err
	}
	served, err := serveAPI(tpl, local)
	if err != nil {
		return nil, "", err
	}
	return served, token, nil
}

// playTriggers plays the template's event sources (queues, stream,
// schedule) into handlers with triggers.Start, as `make run` does, until the
// returned stop, which waits for the invocations in flight.
func playTriggers(ctx context.Context, tpl *sam.Template, handlers map[string]triggers.Handlers, o triggers.Options) (stop func(), err error) {
	ctx, cancel := context.WithCancel(ctx)
	runner, err := triggers.Start(ctx, tpl, handlers, o)
	if err != nil {
		cancel()
		return nil, err
	}
	return func() {
		cancel()
		runner.Wait()
	}, nil
}

// servedAPI is the local API on a loopback port, and the handlers of every
// function of the template behind it.
type servedAPI struct {
	url      string
	handlers map[string]triggers.Handlers
	close    func()
}

// serveAPI serves the API the way `make run` does, on a free loopback port,
// with logs discarded so that logging does not weigh on the numbers. It
// builds every function of the template (the worker and the sweeper too:
// triggers.Start plays them from the handlers it returns).
func serveAPI(tpl *sam.Template, local *devstack.Stack) (*servedAPI, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	baseURL := "http://" + ln.Addr().String()
	log := slog.New(slog.DiscardHandler)
	local.BaseURL = baseURL
	handlers, err := local.Functions(tpl, log)
	if err != nil {
		ln.Close()
		return nil, err
	}
	gw, err := apigw.New(tpl.Routes(), triggers.HTTP(tpl, handlers), log)
	if err != nil {
		ln.Close()
		return nil, err
	}
	srv := &http.Server{Handler: gw, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return &servedAPI{url: baseURL, handlers: handlers, close: func() { _ = srv.Close() }}, nil
}

// createJob creates one job of the load's kind and returns the response
// body; anything but 200 is an error.
func (c *restClient) createJob(ctx context.Context) ([]byte, error) {
	return c.do(ctx, http.MethodPost, generatePath, "application/json", []byte(generateBody), http.StatusOK)
}

// createCall is createJob as a load's call.
func (c *restClient) createCall(ctx context.Context) error {
	_, err := c.createJob(ctx)
	return err
}

// jobID is the job_id of a creation's answer.
func jobID(body []byte) (string, error) {
	var rec struct {
		ID string `json:"job_id"`
	}
	if err := json.Unmarshal(body, &rec); err != nil || rec.ID == "" {
		return "", fmt.Errorf("no job_id in %s", body)
	}
	return rec.ID, nil
}

// rawPut writes copies of a job item the service wrote, each under a new job
// id of the same length, with the store's create condition: the same size,
// indexes and conditional write as a job creation's PutItem.
type rawPut struct {
	db    *dynamodb.Client
	item  map[string]types.AttributeValue   // the job's item
	more  []map[string]types.AttributeValue // the other items under the job's key (its request)
	jobID string
	// workspace is the one whose item every transaction writes: the
	// load's, unless set; table is where the items are.
	workspace, table string
}

// newRawPut reads the items of job jobID. A scan, rather than a GetItem, so
// that the bench does not depend on the store's key layout; the table holds
// only the load's workspace, its token, its top-up and this job yet.
func newRawPut(ctx context.Context, db *dynamodb.Client, jobID string) (*rawPut, error) {
	return newRawPutIn(ctx, db, devstack.Table, jobID)
}

// newRawPutIn is newRawPut on table.
func newRawPutIn(ctx context.Context, db *dynamodb.Client, table, jobID string) (*rawPut, error) {
	out, err := db.Scan(ctx, &dynamodb.ScanInput{
		TableName: aws.String(table),
		// The job's ledger entry names it too, under the workspace's key.
		FilterExpression:          aws.String("contains(PK, :id)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":id": &types.AttributeValueMemberS{Value: jobID}},
		ConsistentRead:            aws.Bool(true),
	})
	if err != nil {
		return nil, fmt.Errorf("read job %s: %w", jobID, err)
	}
	p := &rawPut{db: db, jobID: jobID, table: table}
	for _, it := range out.Items {
		if _, ok := it["status"]; ok && p.item == nil {
			p.item = it
		} else {
			p.more = append(p.more, it)
		}
	}
	if p.item == nil {
		return nil, fmt.Errorf("job %s: no item with a status among the %d under its key", jobID, len(out.Items))
	}
	return p, nil
}

// copyItem is the job item under a new job id.
func (p *rawPut) copyItem() (string, map[string]types.AttributeValue) {
	id := job.NewID(time.Now())
	return id, p.renamed(p.item, id)
}

// renamed is a copy of item with job id id in place of the job's.
func (p *rawPut) renamed(item map[string]types.AttributeValue, id string) map[string]types.AttributeValue {
	out := make(map[string]types.AttributeValue, len(item))
	for k, v := range item {
		if s, ok := v.(*types.AttributeValueMemberS); ok && strings.Contains(s.Value, p.jobID) {
			v = &types.AttributeValueMemberS{Value: strings.ReplaceAll(s.Value, p.jobID, id)}
		}
		out[k] = v
	}
	return out
}

// transact is a creation's transaction without the service around it: the
// job item's Put, a conditional ADD on the load workspace's item, a
// ledger-sized Put in its partition and the Puts of the job's other items
// (its request), in one TransactWriteItems. Every call writes the same
// workspace item, as every creation of a workspace does.
func (p *rawPut) transact(ctx context.Context) error {
	id, item := p.copyItem()
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	n := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	wsID := cmp.Or(p.workspace, loadWorkspace)
	ws := map[string]types.AttributeValue{"PK": s("WS#" + wsID), "SK": s("WS")}
	var more []types.TransactWriteItem
	for _, it := range p.more {
		more = append(more, types.TransactWriteItem{Put: &types.Put{TableName: aws.String(p.table), Item: p.renamed(it, id)}})
	}
	_, err := p.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: append([]types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(p.table), Item: item, ConditionExpression: aws.String("attribute_not_exists(PK)")}},
		{Update: &types.Update{
			TableName: aws.String(p.table), Key: ws,
			UpdateExpression:          aws.String("ADD bench_available :minus, bench_reserved :plus"),
			ConditionExpression:       aws.String("attribute_exists(PK)"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":minus": n("-100000"), ":plus": n("100000")},
		}},
		{Put: &types.Put{TableName: aws.String(p.table), ConditionExpression: aws.String("attribute_not_exists(PK)"),
			Item: map[string]types.AttributeValue{
				"PK": s("WS#" + wsID), "SK": s("BENCH#" + id), "kind": s("reserve"),
				"amount_micros": n("100000"), "job_id": s(id), "endpoint": s(generatePath), "created_at": s(job.TimeOf(time.Now()).String()),
			}}},
	}, more...)})
	return err
}

func (p *rawPut) call(ctx context.Context) error {
	id, item := p.copyItem()
	_, err := p.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:           aws.String(p.table),
		Item:                item,
		ConditionExpression: aws.String("attribute_not_exists(PK)"),
	})
	var failed *types.ConditionalCheckFailedException
	if errors.As(err, &failed) {
		return fmt.Errorf("job id %s taken", id)
	}
	return err
}
