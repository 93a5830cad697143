package oauthdb_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"genjobs/internal/emulator"
	"genjobs/internal/store"
	"genjobs/internal/store/oauthdb"
	"genjobs/internal/store/storetest"
	"genjobs/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

var t0 = time.Date(2026, 11, 27, 20, 0, 0, 0, time.UTC)

func newDB(t *testing.T) *oauthdb.DB { return oauthdb.New(storetest.New(t)) }

func code(client string) oauthdb.Code {
	return oauthdb.Code{
		ClientID: client, RedirectURI: "https://assistant.test/cb", Challenge: "chal",
		Resource: "https://api.test/mcp", Scope: "jobs", UserID: "usr_1", WorkspaceID: "ws_1", CreatedAt: t0,
	}
}

func grant(id, client string) oauthdb.Grant {
	return oauthdb.Grant{ID: id, ClientID: client, ClientName: "Assistant", RedirectURI: "https://assistant.test/cb",
		UserID: "usr_1", WorkspaceID: "ws_1", Scope: "jobs", Resource: "https://api.test/mcp", CreatedAt: t0}
}

func live(t *testing.T, s *oauthdb.DB, id string) bool {
	t.Helper()
	g, err := s.Grant(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return g.Live()
}

// A code is good once: its second use, by a read or by a racing
// redemption, is refused and revokes the grant the first use created.
func TestACodeUsedTwiceIsRefusedAndRevokesWhatItsFirstUseIssued(t *testing.T) {
	s, ctx := newDB(t), context.Background()
	if err := s.IssueCode(ctx, "code-1", code("oc_a")); err != nil {
		t.Fatal(err)
	}
	c, err := s.Code(ctx, "code-1", t0.Add(time.Second))
	if err != nil || c.ClientID != "oc_a" || c.Challenge != "chal" {
		t.Fatalf("Code = %+v, %v", c, err)
	}
	if err := s.Redeem(ctx, "code-1", grant("gr_1", "oc_a"), "refresh-1", t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if !live(t, s, "gr_1") {
		t.Fatal("the redeemed code's grant is not live")
	}
	// A redemption that read the code before the first one wrote.
	if err := s.Redeem(ctx, "code-1", grant("gr_2", "oc_a"), "refresh-2", t0.Add(2*time.Second)); !errors.Is(err, oauthdb.ErrReplayed) {
		t.Fatalf("second redemption: %v; want ErrReplayed", err)
	}
	if live(t, s, "gr_1") {
		t.Error("the first redemption's grant is still live after the code was used again")
	}
	if _, err := s.Grant(ctx, "gr_2"); !errors.Is(err, oauthdb.ErrNotFound) {
		t.Errorf("the refused redemption wrote its grant: %v", err)
	}
	if _, err := s.Code(ctx, "code-1", t0.Add(3*time.Second)); !errors.Is(err, oauthdb.ErrReplayed) {
		t.Errorf("reading a used code: %v; want ErrReplayed", err)
	}
	if _, usable, err := s.RefreshGrant(ctx, "refresh-1", t0.Add(3*time.Second)); err != nil || !usable {
		t.Fatalf("RefreshGrant = %v, %v", usable, err)
	}
	if _, err := s.Rotate(ctx, "refresh-1", "refresh-1b", t0.Add(3*time.Second)); !errors.Is(err, oauthdb.ErrRevoked) {
		t.Errorf("rotating the revoked grant's refresh token: %v; want ErrRevoked", err)
	}
}

func TestACodeExpiresSixtySecondsAfterItWasIssued(t *testing.T) {
	s, ctx := newDB(t), context.Background()
	if err := s.IssueCode(ctx, "code-1", code("oc_a")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Code(ctx, "code-1", t0.Add(59*time.Second)); err != nil {
		t.Fatalf("at 59 s: %v", err)
	}
	late := t0.Add(oauthdb.CodeLifetime)
	if _, err := s.Code(ctx, "code-1", late); !errors.Is(err, oauthdb.ErrExpired) {
		t.Errorf("read at 60 s: %v; want ErrExpired", err)
	}
	if err := s.Redeem(ctx, "code-1", grant("gr_1", "oc_a"), "r", late); !errors.Is(err, oauthdb.ErrExpired) {
		t.Errorf("redeemed at 60 s: %v; want ErrExpired", err)
	}
	if _, err := s.Grant(ctx, "gr_1"); !errors.Is(err, oauthdb.ErrNotFound) {
		t.Errorf("an expired code's redemption wrote a grant: %v", err)
	}
	if _, err := s.Code(ctx, "unknown", t0); !errors.Is(err, oauthdb.ErrNotFound) {
		t.Errorf("unknown code: %v", err)
	}
}

// Each refresh replaces the token; the replaced one used again (a copy
// someone else kept) revokes the whole grant, so the successor stops too.
func TestARefreshTokenUsedTwiceRevokesTheGrant(t *testing.T) {
	s, ctx := newDB(t), context.Background()
	if err := s.IssueCode(ctx, "code-1", code("oc_a")); err != nil {
		t.Fatal(err)
	}
	if err := s.Redeem(ctx, "code-1", grant("gr_1", "oc_a"), "r1", t0); err != nil {
		t.Fatal(err)
	}
	g, err := s.Rotate(ctx, "r1", "r2", t0.Add(time.Minute))
	if err != nil || g.ID != "gr_1" || g.WorkspaceID != "ws_1" {
		t.Fatalf("Rotate = %+v, %v", g, err)
	}
	if _, usable, _ := s.RefreshGrant(ctx, "r1", t0.Add(time.Minute)); usable {
		t.Error("the rotated token is still usable")
	}
	if _, err := s.Rotate(ctx, "r1", "r3", t0.Add(2*time.Minute)); !errors.Is(err, oauthdb.ErrReplayed) {
		t.Fatalf("reuse of r1: %v; want ErrReplayed", err)
	}
	if live(t, s, "gr_1") {
		t.Error("the grant is live after its old refresh token was reused")
	}
	if _, err := s.Rotate(ctx, "r2", "r4", t0.Add(3*time.Minute)); !errors.Is(err, oauthdb.ErrRevoked) {
		t.Errorf("the successor r2 after the reuse: %v; want ErrRevoked", err)
	}
	if _, err := s.Rotate(ctx, "nope", "r5", t0); !errors.Is(err, oauthdb.ErrNotFound) {
		t.Errorf("unknown refresh token: %v", err)
	}
}

func TestARefreshTokenExpires(t *testing.T) {
	s, ctx := newDB(t), context.Background()
	if err := s.IssueCode(ctx, "code-1", code("oc_a")); err != nil {
		t.Fatal(err)
	}
	if err := s.Redeem(ctx, "code-1", grant("gr_1", "oc_a"), "r1", t0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Rotate(ctx, "r1", "r2", t0.Add(oauthdb.RefreshLifetime)); !errors.Is(err, oauthdb.ErrExpired) {
		t.Errorf("rotation at the end of its lifetime: %v; want ErrExpired", err)
	}
	if !live(t, s, "gr_1") {
		t.Error("an expired token's use revoked the grant")
	}
}

// Neither codes, refresh tokens nor client secrets are written as they
// are: a copy of the table gives no one a usable credential.
func TestSecretsAreStoredHashed(t *testing.T) {
	s, ctx := newDB(t), context.Background()
	secret := oauthdb.NewSecret()
	if err := s.RegisterClient(ctx, oauthdb.Client{ID: "oc_a", Name: "A", RedirectURIs: []string{"https://a.test/cb"},
		AuthMethod: oauthdb.AuthSecretPost, SecretHash: oauthdb.Hash(secret), CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	codeValue, r := oauthdb.NewSecret(), oauthdb.NewSecret()
	if err := s.IssueCode(ctx, codeValue, code("oc_a")); err != nil {
		t.Fatal(err)
	}
	if err := s.Redeem(ctx, codeValue, grant("gr_1", "oc_a"), r, t0); err != nil {
		t.Fatal(err)
	}
	out, err := s.Client().Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(s.Table())})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Items) != 6 {
		t.Fatalf("%d items; want client, code, grant, refresh token and the grant's two list items", len(out.Items))
	}
	var items []map[string]any
	if err := attributevalue.UnmarshalListOfMaps(out.Items, &items); err != nil {
		t.Fatal(err)
	}
	dump := fmt.Sprint(items)
	if !strings.Contains(dump, "oc_a") {
		t.Fatalf("the dump of the table does not show its values: %s", dump)
	}
	for name, v := range map[string]string{"client secret": secret, "code": codeValue, "refresh token": r} {
		if strings.Contains(dump, v) {
			t.Errorf("the table holds the %s as it is", name)
		}
	}
	c, err := s.ClientByID(ctx, "oc_a")
	if err != nil || c.SecretHash != oauthdb.Hash(secret) || c.RedirectURIs[0] != "https://a.test/cb" {
		t.Errorf("Client = %+v, %v", c, err)
	}
}

var answerLosses = []testenv.Loss{testenv.Reset, testenv.ServerError}

// A registration, code, redemption or rotation whose answer was lost is
// retried by the SDK and meets its own write: the client is told it
// succeeded, not that its code was used twice (which would revoke the
// connection it just made).
func TestRetriedWritesMeetTheirOwnSuccess(t *testing.T) {
	for _, loss := range answerLosses {
		t.Run(loss.String(), func(t *testing.T) {
			direct := newDB(t)
			proxy := testenv.NewLossy(t, testenv.DynamoDBEndpoint(), 1, func(op string, body []byte) (string, float64) {
				if op == "PutItem" || op == "TransactWriteItems" {
					return op, 1
				}
				return "", 0
			})
			proxy.Losses = []testenv.Loss{loss}
			s := oauthdb.New(store.New(emulator.DynamoDBClient(proxy.URL), direct.Table()))
			ctx := context.Background()
			if err := s.RegisterClient(ctx, oauthdb.Client{ID: "oc_a", Name: "A", RedirectURIs: []string{"https://a.test/cb"},
				AuthMethod: oauthdb.AuthNone, CreatedAt: t0}); err != nil {
				t.Fatalf("registration whose answer was lost: %v", err)
			}
			if err := s.IssueCode(ctx, "code-1", code("oc_a")); err != nil {
				t.Fatalf("code whose answer was lost: %v", err)
			}
			if err := s.Redeem(ctx, "code-1", grant("gr_1", "oc_a"), "r1", t0); err != nil {
				t.Fatalf("redemption whose answer was lost: %v", err)
			}
			if _, err := s.Rotate(ctx, "r1", "r2", t0.Add(time.Minute)); err != nil {
				t.Fatalf("rotation whose answer was lost: %v", err)
			}
			if !live(t, direct, "gr_1") {
				t.Error("the grant was revoked by a retry meeting its own write")
			}
			if got := proxy.Lost("PutItem", loss) + proxy.Lost("TransactWriteItems", loss); got != 4 {
				t.Errorf("the proxy lost %d answers; want 4", got)
			}
			// Another registration under the same id is still refused.
			if err := direct.RegisterClient(ctx, oauthdb.Client{ID: "oc_a", Name: "B", CreatedAt: t0}); !errors.Is(err, store.ErrExists) {
				t.Errorf("a second client under the same id: %v; want ErrExists", err)
			}
		})
	}
}

// redeemAs makes a grant of user in ws through a code, as the token
// endpoint does.
func redeemAs(t *testing.T, s *oauthdb.DB, id, user, ws string, at time.Time) {
	t.Helper()
	ctx := context.Background()
	c := code("oc_a")
	c.UserID, c.WorkspaceID, c.CreatedAt = user, ws, at
	if err := s.IssueCode(ctx, "code-"+id, c); err != nil {
		t.Fatal(err)
	}
	g := grant(id, "oc_a")
	g.UserID, g.WorkspaceID, g.CreatedAt = user, ws, at
	if err := s.Redeem(ctx, "code-"+id, g, "refresh-"+id, at); err != nil {
		t.Fatal(err)
	}
}

func ids(gs []oauthdb.Grant) []string {
	var out []string
	for _, g := range gs {
		out = append(out, g.ID)
	}
	return out
}

// The connections page lists a person's grants, and an owner's view all of
// the workspace's, newest first, revoked ones marked.
func TestGrantsAreListedByWorkspaceAndByPersonNewestFirst(t *testing.T) {
	s, ctx := newDB(t), context.Background()
	redeemAs(t, s, "gr_1", "usr_1", "ws_1", t0)
	redeemAs(t, s, "gr_2", "usr_2", "ws_1", t0.Add(time.Minute))
	redeemAs(t, s, "gr_3", "usr_1", "ws_2", t0.Add(2*time.Minute))
	if err := s.RevokeGrant(ctx, "gr_1", t0.Add(3*time.Minute)); err != nil {
		t.Fatal(err)
	}
	ws, err := s.GrantsOfWorkspace(ctx, "ws_1")
	if err != nil || fmt.Sprint(ids(ws)) != "[gr_2 gr_1]" {
		t.Fatalf("ws_1's grants %v, %v; want gr_2, gr_1", ids(ws), err)
	}
	if ws[1].Live() || !ws[0].Live() || !ws[0].LastUsedAt.Equal(t0.Add(time.Minute)) || ws[0].ClientName != "Assistant" {
		t.Errorf("ws_1's grants %+v", ws)
	}
	mine, err := s.GrantsOfPerson(ctx, "usr_1")
	if err != nil || fmt.Sprint(ids(mine)) != "[gr_3 gr_1]" {
		t.Errorf("usr_1's grants %v, %v; want gr_3, gr_1", ids(mine), err)
	}
}

// Removing a member revokes their connections in that workspace, and no
// one else's.
func TestRevokingAMemberRevokesTheirConnectionsInThatWorkspaceOnly(t *testing.T) {
	s, ctx := newDB(t), context.Background()
	redeemAs(t, s, "gr_1", "usr_1", "ws_1", t0)
	redeemAs(t, s, "gr_2", "usr_1", "ws_1", t0.Add(time.Second))
	redeemAs(t, s, "gr_3", "usr_2", "ws_1", t0.Add(2*time.Second))
	redeemAs(t, s, "gr_4", "usr_1", "ws_2", t0.Add(3*time.Second))
	n, err := s.RevokeMember(ctx, "ws_1", "usr_1", t0.Add(time.Minute))
	if err != nil || n != 2 {
		t.Fatalf("RevokeMember = %d, %v; want 2", n, err)
	}
	for id, want := range map[string]bool{"gr_1": false, "gr_2": false, "gr_3": true, "gr_4": true} {
		if live(t, s, id) != want {
			t.Errorf("%s live = %v; want %v", id, !want, want)
		}
	}
	if _, err := s.Rotate(ctx, "refresh-gr_1", "next", t0.Add(2*time.Minute)); !errors.Is(err, oauthdb.ErrRevoked) {
		t.Errorf("the removed member's refresh token: %v; want ErrRevoked", err)
	}
}

// Disabling a person revokes their connections in every workspace, and no
// one else's; run again, it finds nothing left to revoke and keeps the
// first revocation's time.
func TestRevokingAPersonRevokesTheirConnectionsInEveryWorkspace(t *testing.T) {
	s, ctx := newDB(t), context.Background()
	redeemAs(t, s, "gr_1", "usr_1", "ws_1", t0)
	redeemAs(t, s, "gr_2", "usr_1", "ws_2", t0.Add(time.Second))
	redeemAs(t, s, "gr_3", "usr_2", "ws_1", t0.Add(2*time.Second))
	redeemAs(t, s, "gr_4", "usr_1", "ws_3", t0.Add(3*time.Second))
	if err := s.RevokeGrant(ctx, "gr_4", t0.Add(30*time.Second)); err != nil {
		t.Fatal(err)
	}
	at := t0.Add(time.Minute)
	got, err := s.RevokePerson(ctx, "usr_1", at)
	if err != nil || fmt.Sprint(ids(got)) != "[gr_2 gr_1]" {
		t.Fatalf("RevokePerson = %v, %v; want gr_2 and gr_1 (gr_4 was revoked already)", ids(got), err)
	}
	for id, want := range map[string]bool{"gr_1": false, "gr_2": false, "gr_3": true, "gr_4": false} {
		if live(t, s, id) != want {
			t.Errorf("%s live = %v; want %v", id, !want, want)
		}
	}
	if _, err := s.Rotate(ctx, "refresh-gr_2", "next", at.Add(time.Minute)); !errors.Is(err, oauthdb.ErrRevoked) {
		t.Errorf("the disabled person's refresh token: %v; want ErrRevoked", err)
	}
	again, err := s.RevokePerson(ctx, "usr_1", at.Add(time.Hour))
	if err != nil || len(again) != 0 {
		t.Errorf("RevokePerson again = %v, %v; want nothing left", ids(again), err)
	}
	if g, err := s.Grant(ctx, "gr_1"); err != nil || g.RevokedAt == nil || !g.RevokedAt.Equal(at) {
		t.Errorf("gr_1 after a second run: %+v, %v; want revoked at %v", g, err, at)
	}
}
