package stylesdb_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"

	"genjobs/internal/store"
	"genjobs/internal/store/stylesdb"
	"genjobs/internal/style"
)

// listReads records the keys of each BatchGetItem call of a listing.
type listReads struct {
	mu   sync.Mutex
	keys []int
}

func (r *listReads) option(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("list reads", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
		if b, ok := in.Parameters.(*dynamodb.BatchGetItemInput); ok {
			r.mu.Lock()
			for _, ka := range b.RequestItems {
				r.keys = append(r.keys, len(ka.Keys))
			}
			r.mu.Unlock()
		}
		return next.HandleInitialize(ctx, in)
	}), middleware.After)
}

// A page of filter=all merges four sets (own, shared, service, listed)
// and reads the styles of its entries by key: the page and the one that
// says another follows. A page of 50 reads those 51 in two calls of 26
// and 25 keys, in parallel (one call of 51 before, and 100 and 1 for a
// page of 100: DynamoDB Local reads a call's keys one after another).
func TestAPagesStylesAreReadInTwoEvenCalls(t *testing.T) {
	f := newStyleFixture(t)
	kinds := []styleSpec{
		{owner: ptr(apiA)},
		{owner: ptr(ann), sharedWith: []string{"ws_a"}},
		{},
		{owner: ptr(apiB), public: true, approved: true},
	}
	for i := range 100 {
		sp := kinds[i%len(kinds)]
		sp.name = fmt.Sprintf("s%03d", i)
		f.add(sp)
	}
	reads := &listReads{}
	db := stylesdb.New(store.New(dynamodb.New(f.s.Client().Options(), func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, reads.option)
	}), f.s.Table()))
	p, err := db.ListStyles(context.Background(), apiA, style.Query{Filter: style.All, Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Styles) != 50 || p.Styles[0].ID != "sty_s099" || p.Styles[49].ID != "sty_s050" || p.Next == "" {
		t.Fatalf("the page: %d styles from %s, next %q; want the newest 50 and a cursor", len(p.Styles), p.Styles[0].ID, p.Next)
	}
	if len(reads.keys) != 2 || max(reads.keys[0], reads.keys[1]) > 26 || reads.keys[0]+reads.keys[1] != 51 {
		t.Errorf("the styles were read in BatchGetItem calls of %v keys; want two of 26 and 25", reads.keys)
	}
}
