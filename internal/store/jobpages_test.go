package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"

	"genjobs/internal/job"
	"genjobs/internal/store"
	"genjobs/internal/store/schema"
	"genjobs/internal/testenv"
)

// calls counts a client's DynamoDB calls by operation.
type calls struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *calls) count(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("count", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
		c.mu.Lock()
		c.n[awsmiddleware.GetOperationName(ctx)]++
		c.mu.Unlock()
		return next.HandleInitialize(ctx, in)
	}), middleware.After)
}

func (c *calls) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.n
	c.n = map[string]int{}
	return n
}

// countedStore is a store on a fresh table whose calls are counted.
func countedStore(t *testing.T) (*store.Store, *calls) {
	t.Helper()
	raw := testenv.DynamoDB(t)
	name := testenv.UniqueName(t, "tbl")
	if err := schema.CreateTable(context.Background(), raw, name); err != nil {
		t.Fatal(err)
	}
	c := &calls{n: map[string]int{}}
	db := dynamodb.New(raw.Options(), func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, c.count) })
	return store.New(db, name), c
}

// JobsPage serves each filter from one Query and one BatchGetItem, with
// exactly the workspace's jobs that pass it, newest first, 2 at a time,
// and refuses a cursor of another filter.
func TestJobsPageFiltersInTwoReads(t *testing.T) {
	s, c := countedStore(t)
	ctx := context.Background()
	addWorkspace(t, s, "ws_a", 100, 100)
	addWorkspace(t, s, "ws_b", 100, 100)
	endpoints := []string{"/generate/image/vendor-b/model-e-4", "/generate/3d/vendor-g/model-g-3.1-rapid"}
	type made struct {
		id                       string
		endpoint, source, person string
		status                   job.Status
	}
	var all []made // newest first
	for i := 0; i < 12; i++ {
		j := newJob("ws_a", t0.Add(time.Duration(i)*time.Second))
		j.Endpoint = endpoints[i%2]
		j.Source = []string{job.SourceAPI, job.SourceMCP, job.SourceApp}[i%3]
		if j.Source != job.SourceAPI {
			j.PersonID = fmt.Sprintf("user-%d", i%2)
		}
		if err := s.CreateJob(ctx, j); err != nil {
			t.Fatal(err)
		}
		status := job.Queued
		if i%4 == 0 {
			cur, err := s.Transition(ctx, j, job.Change{To: job.Cancelled}, t0.Add(time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			status = cur.Status
		}
		all = append([]made{{j.ID, j.Endpoint, j.Source, j.PersonID, status}}, all...)
	}
	// Another workspace's job of every value: never listed.
	other := newJob("ws_b", t0.Add(time.Minute))
	other.Endpoint, other.Source, other.PersonID = endpoints[0], job.SourceApp, "user-0"
	if err := s.CreateJob(ctx, other); err != nil {
		t.Fatal(err)
	}
	c.take()
	for _, f := range []job.Filter{
		{},
		{Endpoint: endpoints[0]},
		{Source: job.SourceMCP},
		{Person: "user-1"},
		{Status: job.Queued},
		{Status: job.Cancelled},
		{Endpoint: endpoints[1], Source: job.SourceApp},
	} {
		var want []string
		for _, m := range all {
			if f.Matches(&job.Job{Status: m.status, Endpoint: m.endpoint, Source: m.source, PersonID: m.person}) {
				want = append(want, m.id)
			}
		}
		var got []string
		cursor := ""
		for pages := 0; ; pages++ {
			p, err := s.JobsPage(ctx, "ws_a", f, cursor, 2)
			if err != nil {
				t.Fatalf("%+v: %v", f, err)
			}
			if n := c.take(); n["Query"] != 1 || n["BatchGetItem"] > 1 || len(n) > 2 {
				t.Fatalf("%+v: a page made %v; want one Query and at most one BatchGetItem", f, n)
			}
			for _, j := range p.Jobs {
				got = append(got, j.ID)
			}
			if cursor = p.NextCursor; cursor == "" || pages > 20 {
				break
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%+v: listed %v; want %v", f, got, want)
		}
	}
	p, err := s.JobsPage(ctx, "ws_a", job.Filter{Source: job.SourceAPI}, "", 1)
	if err != nil || p.NextCursor == "" {
		t.Fatalf("first page: %v %q", err, p.NextCursor)
	}
	for _, f := range []job.Filter{{Source: job.SourceMCP}, {}, {Source: job.SourceAPI, Status: job.Queued}} {
		if _, err := s.JobsPage(ctx, "ws_a", f, p.NextCursor, 1); !errors.Is(err, job.ErrBadCursor) {
			t.Errorf("the api filter's cursor under %+v: %v; want ErrBadCursor", f, err)
		}
	}
	if _, err := s.JobsPage(ctx, "ws_b", job.Filter{Source: job.SourceAPI}, p.NextCursor, 1); !errors.Is(err, job.ErrBadCursor) {
		t.Errorf("the cursor in another workspace: %v; want ErrBadCursor", err)
	}
}
