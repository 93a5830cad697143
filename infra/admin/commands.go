package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"genjobs/internal/auth"
	"genjobs/internal/billing"
	"genjobs/internal/store"
	"genjobs/internal/store/accountsdb"
	"genjobs/internal/store/ledgerdb"
	"genjobs/internal/store/slotsdb"
	"genjobs/internal/store/tokensdb"
)

// Bounds of free text the CLI stores; the settings pages would have them too.
const (
	maxNameLen      = 100 // workspace and token names, in characters
	maxPaymentIDLen = 255 // payment ids come from a payment provider
)

func (c *cli) workspaceCreate(ctx context.Context, args []string, stdout io.Writer) error {
	fs := c.flags()
	name := fs.String("name", "", "the workspace's `name` (required)")
	maxConcurrent := fs.Int("max-concurrent", auth.DefaultMaxConcurrent, "non-terminal jobs at once; one more is a 429")
	maxRunning := fs.Int("max-running", auth.DefaultMaxRunning, "jobs past backlogged at once; the rest wait as backlogged")
	if err := c.parse(fs, args, stdout); err != nil {
		return err
	}
	n, err := c.name("--name", *name)
	if err != nil {
		return err
	}
	switch {
	case *maxConcurrent < 1:
		return usagef("%s: --max-concurrent must be a positive integer, not %d", c.cmd.name, *maxConcurrent)
	case *maxRunning < 1:
		return usagef("%s: --max-running must be a positive integer, not %d", c.cmd.name, *maxRunning)
	case *maxRunning > *maxConcurrent:
		return usagef("%s: --max-running (%d) must not exceed --max-concurrent (%d)", c.cmd.name, *maxRunning, *maxConcurrent)
	}
	s, err := c.accounts(ctx)
	if err != nil {
		return err
	}
	id := auth.NewID("ws_")
	// API access starts disabled: an operator turns it on deliberately
	// (docs/api.md, "Authentication and workspaces"), like the settings page's switch.
	err = s.CreateWorkspace(ctx, auth.Workspace{
		ID: id, Name: n, APIEnabled: false,
		MaxConcurrent: *maxConcurrent, MaxRunning: *maxRunning, CreatedAt: c.clock.Now(),
	})
	if err != nil {
		return c.target.explain(err)
	}
	return writeJSON(stdout, struct {
		WorkspaceID string `json:"workspace_id"`
	}{id})
}

func (c *cli) workspaceEnableAPI(ctx context.Context, args []string, stdout io.Writer) error {
	return c.setAPI(ctx, args, stdout, true)
}

func (c *cli) workspaceDisableAPI(ctx context.Context, args []string, stdout io.Writer) error {
	return c.setAPI(ctx, args, stdout, false)
}

func (c *cli) setAPI(ctx context.Context, args []string, stdout io.Writer, enabled bool) error {
	ws, s, err := c.workspaceStore(ctx, args, stdout)
	if err != nil {
		return err
	}
	// Setting the current value again succeeds: the switch is idempotent.
	if err := s.SetAPIEnabled(ctx, ws, enabled); err != nil {
		return c.notFound(err, "workspace %s does not exist", ws)
	}
	return writeJSON(stdout, struct {
		WorkspaceID string `json:"workspace_id"`
		APIEnabled  bool   `json:"api_enabled"`
	}{ws, enabled})
}

func (c *cli) tokenCreate(ctx context.Context, args []string, stdout io.Writer) error {
	fs := c.flags()
	ws := fs.String("workspace", "", "the workspace `id` (required)")
	name := fs.String("name", "", "a `name` to recognise the token by (required)")
	if err := c.parseIDs(fs, args, stdout, "workspace"); err != nil {
		return err
	}
	n, err := c.name("--name", *name)
	if err != nil {
		return err
	}
	s, err := c.tokens(ctx)
	if err != nil {
		return err
	}
	token, hash := auth.NewToken()
	id := auth.NewID("tok_")
	err = s.CreateToken(ctx, auth.Token{ID: id, WorkspaceID: *ws, Name: n, Hash: hash, Prefix: auth.Prefix(token), CreatedAt: c.clock.Now()})
	if err != nil {
		return c.notFound(err, "workspace %s does not exist", *ws)
	}
	// The only time the token exists outside its holder: the table keeps
	// its hash alone.
	return writeJSON(stdout, struct {
		TokenID string `json:"token_id"`
		Token   string `json:"token"`
	}{id, token})
}

func (c *cli) tokenRevoke(ctx context.Context, args []string, stdout io.Writer) error {
	fs := c.flags()
	ws := fs.String("workspace", "", "the workspace `id` the token belongs to (required)")
	tokenID := fs.String("token-id", "", "the token's `id`, tok_... (required)")
	if err := c.parseIDs(fs, args, stdout, "workspace", "token-id"); err != nil {
		return err
	}
	s, err := c.tokens(ctx)
	if err != nil {
		return err
	}
	// Revoking a revoked token succeeds and keeps the first revocation time.
	if err := s.RevokeToken(ctx, *ws, *tokenID, c.clock.Now()); err != nil {
		return c.notFound(err, "token %s not found in workspace %s", *tokenID, *ws)
	}
	return writeJSON(stdout, struct {
		TokenID string `json:"token_id"`
		Revoked bool   `json:"revoked"`
	}{*tokenID, true})
}

func (c *cli) balanceTopUp(ctx context.Context, args []string, stdout io.Writer) error {
	fs := c.flags()
	ws := fs.String("workspace", "", "the workspace `id` (required)")
	usd := fs.String("usd", "", "the `amount` in USD, 5 to 10000, at most six decimals; the application offers 10, 25, 50 and 100 (required)")
	paymentID := fs.String("payment-id", "", "the payment's `id`; the same id credits once (required)")
	if err := c.parseIDs(fs, args, stdout, "workspace"); err != nil {
		return err
	}
	if *usd == "" {
		return usagef("%s: --usd is required", c.cmd.name)
	}
	amount, err := billing.ParseUSD(*usd)
	if err != nil {
		return usagef("%s: --usd: %v", c.cmd.name, err)
	}
	if amount < billing.MinTopUp || amount > billing.MaxTopUp {
		return usagef("%s: --usd must be between %s and %s USD, not %s",
			c.cmd.name, whole(billing.MinTopUp), whole(billing.MaxTopUp), *usd)
	}
	if err := c.id("--payment-id", *paymentID); err != nil {
		return err
	}
	if len(*paymentID) > maxPaymentIDLen {
		return usagef("%s: --payment-id has %d characters; at most %d are allowed", c.cmd.name, len(*paymentID), maxPaymentIDLen)
	}
	s, err := c.accounts(ctx)
	if err != nil {
		return err
	}
	b, err := s.TopUp(ctx, *ws, *paymentID, amount, c.clock.Now())
	if errors.Is(err, accountsdb.ErrPaymentConflict) {
		return fmt.Errorf("payment id %s was already used with another amount; nothing was credited", *paymentID)
	}
	if err != nil {
		return c.notFound(err, "workspace %s does not exist", *ws)
	}
	return writeBalance(stdout, b)
}

func (c *cli) balanceShow(ctx context.Context, args []string, stdout io.Writer) error {
	ws, s, err := c.workspaceStore(ctx, args, stdout)
	if err != nil {
		return err
	}
	b, err := s.Balance(ctx, ws)
	if err != nil {
		return c.notFound(err, "workspace %s does not exist", ws)
	}
	return writeBalance(stdout, b)
}

// balanceJSON is a balance as the CLI prints it: decimal strings, never
// floats, so money is exact micro-USD all the way out. The Net 30 fields
// appear for invoiced workspaces only.
type balanceJSON struct {
	Available   string `json:"available_usd"`
	Reserved    string `json:"reserved_usd"`
	Spent       string `json:"spent_usd"`
	CreditLimit string `json:"credit_limit_usd,omitempty"`
	Owed        string `json:"owed_usd,omitempty"`
}

func toBalanceJSON(b billing.Balance) balanceJSON {
	out := balanceJSON{Available: b.Available.String(), Reserved: b.Reserved.String(), Spent: b.Spent.String()}
	if b.CreditLimit > 0 || b.Owed() > 0 {
		out.CreditLimit, out.Owed = b.CreditLimit.String(), b.Owed().String()
	}
	return out
}

func writeBalance(w io.Writer, b billing.Balance) error { return writeJSON(w, toBalanceJSON(b)) }

func (c *cli) workspaceInvoice(ctx context.Context, args []string, stdout io.Writer) error {
	fs := c.flags()
	ws := fs.String("workspace", "", "the workspace `id` (required)")
	limit := fs.String("credit-limit-usd", "", "the most the workspace may owe, in `USD` (0 back to prepaid; at most 1000000) (required)")
	if err := c.parseIDs(fs, args, stdout, "workspace"); err != nil {
		return err
	}
	if *limit == "" {
		return usagef("%s: --credit-limit-usd is required", c.cmd.name)
	}
	amount, err := billing.ParseUSD(*limit)
	if err != nil {
		return usagef("%s: --credit-limit-usd: %v", c.cmd.name, err)
	}
	if amount < 0 || amount > billing.MaxCreditLimit {
		return usagef("%s: --credit-limit-usd must be between 0 and %s USD, not %s", c.cmd.name, whole(billing.MaxCreditLimit), *limit)
	}
	s, err := c.accounts(ctx)
	if err != nil {
		return err
	}
	b, err := s.SetCreditLimit(ctx, *ws, amount)
	if err != nil {
		return c.notFound(err, "workspace %s does not exist", *ws)
	}
	return writeBalance(stdout, b)
}

func (c *cli) ledgerVerify(ctx context.Context, args []string, stdout io.Writer) error {
	fs := c.flags()
	ws := fs.String("workspace", "", "the workspace `id` to verify")
	all := fs.Bool("all", false, "verify every workspace")
	if err := c.parse(fs, args, stdout); err != nil {
		return err
	}
	if (*ws == "") == !*all {
		return usagef("%s: give --workspace W or --all", c.cmd.name)
	}
	s, err := c.accounts(ctx)
	if err != nil {
		return err
	}
	ids := []string{*ws}
	if *all {
		if ids, err = s.Workspaces(ctx); err != nil {
			return c.target.explain(err)
		}
		sort.Strings(ids)
	}
	type result struct {
		WorkspaceID string      `json:"workspace_id"`
		Stored      balanceJSON `json:"stored"`
		Ledger      balanceJSON `json:"ledger"`
		StoredUnits unitsJSON   `json:"stored_cu"`
		LedgerUnits unitsJSON   `json:"ledger_cu"`
		Differences []string    `json:"differences"`
	}
	results := []result{}
	bad := 0
	for _, id := range ids {
		a, err := ledgerdb.New(s.Store).AuditLedger(ctx, id)
		if err != nil {
			return c.notFound(err, "workspace %s does not exist", id)
		}
		r := result{id, toBalanceJSON(a.Stored), toBalanceJSON(a.Ledger), toUnitsJSON(a.StoredUnits), toUnitsJSON(a.LedgerUnits), a.Differences}
		if r.Differences == nil {
			r.Differences = []string{}
		}
		if len(a.Differences) > 0 {
			bad++
		}
		results = append(results, r)
	}
	if *all {
		err = writeJSON(stdout, struct {
			Workspaces []result `json:"workspaces"`
		}{results})
	} else {
		err = writeJSON(stdout, results[0])
	}
	if err != nil {
		return err
	}
	if bad > 0 {
		return fmt.Errorf("%d of %d workspaces: the balance disagrees with the ledger (see differences)", bad, len(ids))
	}
	return nil
}

func writeJSON(w io.Writer, v any) error {
	return json.NewEncoder(w).Encode(v)
}

// whole writes a whole-dollar bound as "5" rather than "5.000000".
func whole(m billing.Micros) string { return fmt.Sprint(int64(m / billing.USD)) }

// notFound words a missing item (either store's or auth's error), and
// explains the rest.
// accounts is the store with the accounts (package accountsdb).
func (c *cli) accounts(ctx context.Context) (*accountsdb.DB, error) {
	s, err := c.store(ctx)
	if err != nil {
		return nil, err
	}
	return accountsdb.New(s), nil
}

// tokens is the store with the API tokens (package tokensdb).
func (c *cli) tokens(ctx context.Context) (*tokensdb.DB, error) {
	s, err := c.store(ctx)
	if err != nil {
		return nil, err
	}
	return tokensdb.New(s), nil
}

func (c *cli) notFound(err error, format string, a ...any) error {
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, auth.ErrNotFound) {
		return fmt.Errorf(format, a...)
	}
	return c.target.explain(err)
}

// id checks a required identifier flag. Ids are not checked further: the
// seeded demo workspace is ws_demo, not ws_ and hex digits.
func (c *cli) id(flagName, v string) error {
	switch {
	case v == "":
		return usagef("%s: %s is required", c.cmd.name, flagName)
	case strings.IndexFunc(v, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) >= 0:
		return usagef("%s: %s %q has spaces or control characters", c.cmd.name, flagName, v)
	}
	return nil
}

// parseIDs parses a command's flags and checks the identifier flags it
// requires, in the order given (flag names without their dashes).
func (c *cli) parseIDs(fs *flag.FlagSet, args []string, stdout io.Writer, required ...string) error {
	if err := c.parse(fs, args, stdout); err != nil {
		return err
	}
	for _, name := range required {
		if err := c.id("--"+name, fs.Lookup(name).Value.String()); err != nil {
			return err
		}
	}
	return nil
}

// workspaceStore parses a command whose one flag is --workspace and opens
// the store.
func (c *cli) workspaceStore(ctx context.Context, args []string, stdout io.Writer) (string, *accountsdb.DB, error) {
	fs := c.flags()
	ws := fs.String("workspace", "", "the workspace `id` (required)")
	if err := c.parseIDs(fs, args, stdout, "workspace"); err != nil {
		return "", nil, err
	}
	s, err := c.accounts(ctx)
	return *ws, s, err
}

// name checks a required display name and returns it trimmed.
func (c *cli) name(flagName, v string) (string, error) {
	v = strings.TrimSpace(v)
	switch {
	case v == "":
		return "", usagef("%s: %s is required", c.cmd.name, flagName)
	case utf8.RuneCountInString(v) > maxNameLen:
		return "", usagef("%s: %s has %d characters; at most %d are allowed", c.cmd.name, flagName, utf8.RuneCountInString(v), maxNameLen)
	case !utf8.ValidString(v) || strings.IndexFunc(v, unicode.IsControl) >= 0:
		return "", usagef("%s: %s must be printable text", c.cmd.name, flagName)
	}
	return v, nil
}

func (c *cli) workspaceVerify(ctx context.Context, args []string, stdout io.Writer) error {
	ws, s, err := c.workspaceStore(ctx, args, stdout)
	if err != nil {
		return err
	}
	slots := slotsdb.New(s.Store)
	stored, err := slots.StoredSlots(ctx, ws)
	if err != nil {
		return c.notFound(err, "workspace %s does not exist", ws)
	}
	counted, err := slots.CountSlots(ctx, ws)
	if err != nil {
		return c.target.explain(err)
	}
	differences := []string{}
	if stored.Active != counted.Active {
		differences = append(differences, fmt.Sprintf("active: counter %d, jobs %d", stored.Active, counted.Active))
	}
	if stored.Running != counted.Running {
		differences = append(differences, fmt.Sprintf("running: counter %d, jobs %d", stored.Running, counted.Running))
	}
	if err := writeJSON(stdout, struct {
		WorkspaceID string        `json:"workspace_id"`
		Stored      slotsdb.Slots `json:"stored"`
		Counted     slotsdb.Slots `json:"counted"`
		Differences []string      `json:"differences"`
	}{ws, stored, counted, differences}); err != nil {
		return err
	}
	if len(differences) > 0 {
		return fmt.Errorf("workspace %s: slot counters disagree with its jobs (%s)", ws, strings.Join(differences, "; "))
	}
	return nil
}

// unitsJSON is a workspace's compute units as the CLI prints them: whole
// numbers.
type unitsJSON struct {
	Available int64 `json:"available_cu"`
	Reserved  int64 `json:"reserved_cu"`
	Spent     int64 `json:"spent_cu"`
}

func toUnitsJSON(b billing.UnitBalance) unitsJSON {
	return unitsJSON{int64(b.Available), int64(b.Reserved), int64(b.Spent)}
}

func (c *cli) workspacePlan(ctx context.Context, args []string, stdout io.Writer) error {
	fs := c.flags()
	ws := fs.String("workspace", "", "the workspace `id` (required)")
	monthly := fs.String("monthly-units", "", "the compute units the plan tops the workspace up to on the first day of each UTC month, `N` (0 ends the plan) (required)")
	if err := c.parseIDs(fs, args, stdout, "workspace"); err != nil {
		return err
	}
	if *monthly == "" {
		return usagef("%s: --monthly-units is required", c.cmd.name)
	}
	n, err := strconv.ParseInt(*monthly, 10, 64)
	if err != nil || n < 0 || n > billing.MaxMonthlyUnits {
		return usagef("%s: --monthly-units must be a whole number from 0 to %d, not %q", c.cmd.name, billing.MaxMonthlyUnits, *monthly)
	}
	s, err := c.accounts(ctx)
	if err != nil {
		return err
	}
	credited, err := s.SetPlan(ctx, *ws, billing.Units(n), c.clock.Now())
	if err != nil {
		return c.notFound(err, "workspace %s does not exist", *ws)
	}
	b, plan, err := s.Units(ctx, *ws)
	if err != nil {
		return c.notFound(err, "workspace %s does not exist", *ws)
	}
	return writeJSON(stdout, struct {
		WorkspaceID string `json:"workspace_id"`
		Monthly     int64  `json:"monthly_units"`
		ToppedUp    int64  `json:"topped_up_cu"`
		unitsJSON
	}{*ws, int64(plan), int64(credited), toUnitsJSON(b)})
}
