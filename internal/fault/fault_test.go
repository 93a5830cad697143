package fault_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"genjobs/internal/fault"
)

func TestReserveKeepsTheMarginBeforeTheDeadline(t *testing.T) {
	deadline := time.Now().Add(time.Hour)
	parent, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	ctx, stop := fault.Reserve(parent, time.Second)
	defer stop()
	if got, ok := ctx.Deadline(); !ok || !got.Equal(deadline.Add(-time.Second)) {
		t.Errorf("deadline %v; want %v, a second before the invocation's", got, deadline.Add(-time.Second))
	}

	// A deadline closer than four margins keeps a quarter of what is left.
	deadline = time.Now().Add(2 * time.Second)
	short, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	ctx, stop = fault.Reserve(short, time.Second)
	defer stop()
	if got, _ := ctx.Deadline(); !got.Before(deadline) || deadline.Sub(got) > 500*time.Millisecond {
		t.Errorf("deadline %v before the invocation's; want at most a quarter of 2 s", deadline.Sub(got))
	}

	// No deadline (a direct call): none is made up.
	ctx, stop = fault.Reserve(context.Background(), time.Second)
	defer stop()
	if _, ok := ctx.Deadline(); ok {
		t.Error("a deadline was added to a context without one")
	}
}

func TestWhatIsAnOutage(t *testing.T) {
	marked := fmt.Errorf("read job: %w", &fault.Unavailable{Code: "ThrottlingException", Err: errors.New("api error")})
	for _, c := range []struct {
		err  error
		code string
	}{
		{marked, "ThrottlingException"},
		{fmt.Errorf("list: %w", context.DeadlineExceeded), "DeadlineExceeded"},
		{context.Canceled, "Canceled"},
		{errors.New("decode: bad item"), ""},
		{nil, ""},
	} {
		if fault.IsUnavailable(c.err) != (c.code != "") || fault.Code(c.err) != c.code {
			t.Errorf("%v: IsUnavailable %v, Code %q; want code %q", c.err, fault.IsUnavailable(c.err), fault.Code(c.err), c.code)
		}
	}
	if !errors.Is(marked, fault.ErrUnavailable) {
		t.Error("a marked error is not ErrUnavailable")
	}
}
