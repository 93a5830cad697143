package main

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"genjobs/internal/billing"
	"genjobs/internal/store/topupsdb"
)

// setTopUp changes a top-up by checkout's status (and credited amount)
// behind the store's back, as a bug or a hand edit would.
func (e *env) setTopUp(t *testing.T, ws, id string, status billing.CheckoutStatus, credited billing.Micros) {
	t.Helper()
	_, err := e.db.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName: aws.String(e.table),
		Key: map[string]types.AttributeValue{
			"PK": &types.AttributeValueMemberS{Value: "WS#" + ws}, "SK": &types.AttributeValueMemberS{Value: "TOPUP#" + id},
		},
		UpdateExpression:         aws.String("SET #s = :s, credited_micros = :c, session_id = if_not_exists(session_id, :sid)"),
		ExpressionAttributeNames: map[string]string{"#s": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":s": &types.AttributeValueMemberS{Value: string(status)}, ":c": &types.AttributeValueMemberN{Value: strconv.FormatInt(int64(credited), 10)},
			":sid": &types.AttributeValueMemberS{Value: "cs_" + id},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
}

// `ledger verify` checks each top-up by checkout against the ledger: a
// paid one has its session's credit, of its amount; a pending, failed,
// expired or cancelled one has none. A status that disagrees fails it.
func TestLedgerVerifyChecksTopUpStatusesAgainstTheirCredits(t *testing.T) {
	e, ctx, now := newEnv(t), context.Background(), time.Now()
	ws := e.ok(t, "workspace", "create", "--name", "Top-ups")["workspace_id"].(string)
	db := topupsdb.New(e.store())
	for _, id := range []string{"top_paid", "top_pending", "top_failed", "top_expired", "top_cancelled"} {
		if err := db.CreateCheckout(ctx, billing.Checkout{ID: id, WorkspaceID: ws, Status: billing.CheckoutPending,
			Requested: 10 * billing.USD, CreatedBy: "owner@example.com", CreatedAt: now}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.CreditCheckout(ctx, ws, "top_paid", "cs_top_paid", 10*billing.USD, 0, now); err != nil {
		t.Fatal(err)
	}
	for id, st := range map[string]billing.CheckoutStatus{"top_failed": billing.CheckoutFailed, "top_expired": billing.CheckoutExpired,
		"top_cancelled": billing.CheckoutCancelled} {
		if _, err := db.EndCheckout(ctx, ws, id, st, now); err != nil {
			t.Fatal(err)
		}
	}
	if d := e.ok(t, "ledger", "verify", "--workspace", ws)["differences"].([]any); len(d) != 0 {
		t.Fatalf("differences of top-ups that agree with the ledger: %v", d)
	}

	for _, c := range []struct {
		what     string
		id       string
		status   billing.CheckoutStatus
		credited billing.Micros
		want     string
	}{
		{"a credited top-up marked expired", "top_paid", billing.CheckoutExpired, 10 * billing.USD,
			"top-up top_paid is expired but the ledger credited its checkout session cs_top_paid 10.00 USD"},
		{"a paid top-up of another amount", "top_paid", billing.CheckoutPaid, 12 * billing.USD,
			"top-up top_paid is paid 12.00 USD but the ledger credited 10.00 USD"},
		{"a top-up marked paid without a credit", "top_pending", billing.CheckoutPaid, 10 * billing.USD,
			"top-up top_pending is paid (10.00 USD) but the ledger has no credit of its checkout session cs_top_pending"},
	} {
		e.setTopUp(t, ws, c.id, c.status, c.credited)
		r := e.run("ledger", "verify", "--workspace", ws)
		if r.code != 1 || !strings.Contains(r.stdout, c.want) || !strings.Contains(r.stderr, "disagrees with the ledger") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 1 saying %q", c.what, r.code, r.stdout, r.stderr, c.want)
		}
		// Put it back as it was.
		if c.id == "top_paid" {
			e.setTopUp(t, ws, c.id, billing.CheckoutPaid, 10*billing.USD)
		} else {
			e.setTopUp(t, ws, c.id, billing.CheckoutPending, 0)
		}
	}
}
