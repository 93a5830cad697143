package console_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"genjobs/infra/local/devstack"
	"genjobs/internal/member"
	"genjobs/internal/store/accountsdb"
	"genjobs/internal/store/topupsdb"
)

// The billing page shows the workspace's compute units beside its USD
// balance, and the plan's monthly units; an owner buys a pack there (a
// Checkout Session, credited by the verified webhook), while an admin or
// a member sees the units but no packs, and a pack form they post anyway
// is refused with nothing written. A pack that is none is refused beside
// the packs, with nothing written.
func TestOwnersBuyPacksOfComputeUnitsOthersSeeTheUnitsOnly(t *testing.T) {
	s, b := signedIn(t, member.Owner)
	ctx := context.Background()
	before := balance(t, s)
	if _, err := accountsdb.New(s.Store).SetPlan(ctx, devstack.DemoWorkspace, 2000, time.Now()); err != nil {
		t.Fatal(err)
	}
	p := b.get("/app/settings/billing")
	for id, want := range map[string]string{"cu-available": "2,000 CU", "cu-plan": "2,000 CU", "cu-spent": "0 CU"} {
		if got := between(p.body, `id="`+id+`">`, "<"); got != want {
			t.Errorf("billing page %s: %q; want %q", id, got, want)
		}
	}
	for _, pack := range []string{`id="pack-1000"><span class="units">1,000 CU</span><span class="price">$10.00</span>`,
		`id="pack-5000"><span class="units">5,000 CU</span><span class="price">$50.00</span>`,
		`id="pack-20000"><span class="units">20,000 CU</span><span class="price">$200.00</span>`,
		`id="pack-100000"><span class="units">100,000 CU</span><span class="price">$1,000.00</span>`} {
		if !strings.Contains(p.body, pack) {
			t.Errorf("the owner's billing page has no %s", pack)
		}
	}

	for _, bad := range []string{"3000", "", "abc", "-1000", "1000000", "1e3"} {
		p := b.post("/app/settings/billing/top-up", b.form(devstack.DemoWorkspace, "pack", bad))
		if p.status != http.StatusBadRequest || !strings.Contains(between(p.body, `id="pack-error">`, "<"), "There is no such pack") {
			t.Errorf("pack %q: %d %q; want 400 saying there is no such pack", bad, p.status, between(p.body, `id="pack-error">`, "<"))
		}
	}
	if cos, _ := topupsdb.New(s.Store).Checkouts(ctx, devstack.DemoWorkspace); len(cos) != 0 || s.Stripe.Created() != 0 {
		t.Fatalf("refused packs left %d top-ups and %d checkout sessions", len(cos), s.Stripe.Created())
	}

	bought := b.post("/app/settings/billing/top-up", b.form(devstack.DemoWorkspace, "pack", "1000"))
	if bought.status != http.StatusSeeOther || !strings.Contains(bought.location, "/pay/cs_test_") {
		t.Fatalf("the 1,000 pack: %d %q", bought.status, bought.location)
	}
	cs, _ := s.Stripe.Session(bought.location[strings.LastIndex(bought.location, "/")+1:])
	if cs.ProductName != "Compute units" || cs.AmountTotal != 1000 || cs.Metadata["pack_units"] != "1000" {
		t.Errorf("the pack's session: %q, %d cents, %v", cs.ProductName, cs.AmountTotal, cs.Metadata)
	}
	if got := between(b.get("/app/settings/billing").body, `id="cu-available">`, "<"); got != "2,000 CU" {
		t.Errorf("units before the payment: %q; want 2,000 CU", got)
	}
	cs.Status, cs.PaymentStatus = "complete", "paid"
	if err := s.Stripe.Send(ctx, "checkout.session.completed", cs); err != nil {
		t.Fatal(err)
	}
	after := b.get("/app/settings/billing?checkout=" + cs.ID).body
	if got := between(after, `id="cu-available">`, "<"); got != "3,000 CU" {
		t.Errorf("units after the payment: %q; want 3,000 CU", got)
	}
	if !strings.Contains(between(after, `id="checkout-result">`, "<"), "1,000 compute units were added") || !strings.Contains(after, `data-label="Bought">1,000 CU`) {
		t.Errorf("the return page does not say the pack arrived, or its row does not name it")
	}
	if got := balance(t, s); got != before {
		t.Errorf("the pack moved the API balance: %s -> %s", before, got)
	}
	audit(t, s)

	for _, role := range []member.Role{member.Admin, member.Member} {
		email := string(role) + "@example.com"
		person(t, s, email, devstack.DemoWorkspace, role)
		other := newBrowser(t, s)
		other.signIn(email, password)
		page := other.get("/app/settings/billing")
		if got := between(page.body, `id="cu-available">`, "<"); page.status != http.StatusOK || got != "3,000 CU" {
			t.Errorf("%s's billing page: %d, units %q; want 3,000 CU", role, page.status, got)
		}
		if strings.Contains(page.body, `id="packs"`) || strings.Contains(page.body, `name="pack"`) {
			t.Errorf("%s's billing page offers packs", role)
		}
		refused := other.post("/app/settings/billing/top-up", other.form(devstack.DemoWorkspace, "pack", "5000"))
		if refused.status != http.StatusForbidden || !strings.Contains(refused.body, "does not allow this") {
			t.Errorf("%s posting a pack: %d; want 403 saying the role does not allow it", role, refused.status)
		}
	}
	if cos, _ := topupsdb.New(s.Store).Checkouts(ctx, devstack.DemoWorkspace); len(cos) != 1 || s.Stripe.Created() != 1 {
		t.Errorf("after the refused forms: %d top-ups, %d sessions; want the owner's one", len(cos), s.Stripe.Created())
	}
	if u, _, _ := accountsdb.New(s.Store).Units(ctx, devstack.DemoWorkspace); u.Available != 3000 {
		t.Errorf("units: %+v; want 3000", u)
	}
}
