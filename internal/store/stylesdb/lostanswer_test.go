package stylesdb_test

import (
	"bytes"
	"context"
	"testing"

	"genjobs/internal/emulator"
	"genjobs/internal/store"
	"genjobs/internal/store/storetest"
	"genjobs/internal/store/stylesdb"
	"genjobs/internal/style"
	"genjobs/internal/testenv"
)

// lossy is the styles of a fresh table through a proxy that loses the
// answer of the first attempt of every TransactWriteItems whose body holds
// marker: DynamoDB applies the write, the SDK retries it, and the retry
// meets its own success. direct reads the table past the proxy.
func lossy(t *testing.T, loss testenv.Loss, marker string) (s, direct *stylesdb.DB, proxy *testenv.Lossy) {
	t.Helper()
	direct = stylesdb.New(storetest.New(t))
	addWorkspace(t, direct.Store, "ws_a")
	addWorkspace(t, direct.Store, "ws_b")
	proxy = testenv.NewLossy(t, testenv.DynamoDBEndpoint(), 1, func(op string, body []byte) (string, float64) {
		if op == "TransactWriteItems" && bytes.Contains(body, []byte(marker)) {
			return op, 1
		}
		return "", 0
	})
	proxy.Losses = []testenv.Loss{loss}
	return stylesdb.New(store.New(emulator.DynamoDBClient(proxy.URL), direct.Table())), direct, proxy
}

var answerLosses = []testenv.Loss{testenv.Reset, testenv.ServerError}

func addStyle(t *testing.T, s *stylesdb.DB, id string, owner style.Caller) {
	t.Helper()
	st := style.Style{ID: id, Title: id, Prompt: "p", Models: []string{"model-e-4"}, CreatedAt: t0,
		WorkspaceID: owner.WorkspaceID, Owner: ownerOf(owner), Public: true}
	if err := s.CreateStyle(context.Background(), st); err != nil {
		t.Fatal(err)
	}
}

// A share link whose creation's answer was lost is the new link the
// request made (201, is_new true), not an old one.
func TestRetriedShareLinkCreationIsNew(t *testing.T) {
	for _, loss := range answerLosses {
		t.Run(loss.String(), func(t *testing.T) {
			s, direct, proxy := lossy(t, loss, "share_token")
			addStyle(t, direct, "sty_a", apiA)
			ctx := context.Background()
			mine := style.NewShareToken()
			tok, isNew, err := s.ShareLink(ctx, "sty_a", apiA.UserID, mine, t0)
			if proxy.Lost("TransactWriteItems", loss) != 1 {
				t.Fatalf("the proxy lost %d answers; want 1", proxy.Lost("TransactWriteItems", loss))
			}
			if err != nil || tok != mine || !isNew {
				t.Fatalf("a creation whose answer was lost: %q new=%v %v; want its own token %q, new", tok, isNew, err, mine)
			}
			if st, err := direct.SharedStyle(ctx, mine); err != nil || st.ID != "sty_a" {
				t.Errorf("the link resolves to %q, %v; want sty_a", st.ID, err)
			}
			// The next request answers the same link, not new.
			tok, isNew, err = direct.ShareLink(ctx, "sty_a", apiA.UserID, style.NewShareToken(), t0)
			if err != nil || tok != mine || isNew {
				t.Errorf("a later request: %q new=%v %v; want %q, not new", tok, isNew, err, mine)
			}
		})
	}
}

// A change of a style's flags whose answer was lost is applied once and
// answered as applied.
func TestRetriedStyleChangeIsAppliedOnce(t *testing.T) {
	for _, loss := range answerLosses {
		t.Run(loss.String(), func(t *testing.T) {
			s, direct, proxy := lossy(t, loss, "version = :v")
			addStyle(t, direct, "sty_a", apiA)
			ctx := context.Background()
			st, err := s.ShareStyle(ctx, "sty_a", "ws_b")
			if proxy.Lost("TransactWriteItems", loss) != 1 {
				t.Fatalf("the proxy lost %d answers; want 1", proxy.Lost("TransactWriteItems", loss))
			}
			if err != nil || len(st.SharedWith) != 1 || st.SharedWith[0] != "ws_b" {
				t.Fatalf("a change whose answer was lost: %+v, %v; want it shared with ws_b", st.SharedWith, err)
			}
			if v := stylesdb.Version(t, direct, "sty_a"); v != 1 {
				t.Errorf("version %d after one change; want 1", v)
			}
			page, err := direct.ListStyles(ctx, apiB, style.Query{Filter: style.Shared, Limit: 10})
			if err != nil || len(page.Styles) != 1 {
				t.Errorf("ws_b's shared styles: %d, %v; want the one", len(page.Styles), err)
			}
		})
	}
}
