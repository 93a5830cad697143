package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"

	"genjobs/internal/awsclient"
	"genjobs/internal/cognito"
	"genjobs/internal/emulator"
	"genjobs/internal/member"
	"genjobs/internal/store"
	"genjobs/internal/store/accountsdb"
	"genjobs/internal/store/membersdb"
	"genjobs/internal/store/oauthdb"
)

// users is the console's user pool, as the member commands use it
// (cognito.Client).
type users interface {
	EnsureUser(ctx context.Context, email string) (cognito.User, bool, error)
	ResetPassword(ctx context.Context, email string) (cognito.User, error)
	Disable(ctx context.Context, email string) (cognito.User, error)
	Enable(ctx context.Context, email string) (cognito.User, error)
}

// pool returns the user pool of the command's target, resolving it unless
// a test set one: make run's moto pool, or with --aws the stack's
// ConsoleUserPool output.
func (c *cli) pool(ctx context.Context) (users, error) {
	if c.users != nil {
		return c.users, nil
	}
	var cfg aws.Config
	var p cognito.Config
	if !c.g.aws {
		st, err := findStack(c.repoRoot)
		if err != nil || st.UserPool == "" || st.Moto == "" {
			return nil, errors.New("the local stack's user pool is not running; start it with make run")
		}
		cfg = emulator.MotoConfig(st.Moto)
		p = cognito.Config{PoolID: st.UserPool, ClientID: st.UserPoolClient}
	} else {
		if c.g.stack == "" {
			return nil, usagef("%s: with --aws, name the deployment with --stack: the user pool is one of its outputs", c.cmd.name)
		}
		var err error
		if cfg, err = config.LoadDefaultConfig(ctx); err != nil {
			return nil, fmt.Errorf("load the AWS configuration: %w", err)
		}
		outs, err := cloudformation.NewFromConfig(cfg).DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(c.g.stack)})
		if err != nil || len(outs.Stacks) == 0 {
			return nil, fmt.Errorf("describe stack %s: %v", c.g.stack, err)
		}
		for _, o := range outs.Stacks[0].Outputs {
			switch aws.ToString(o.OutputKey) {
			case "ConsoleUserPoolId":
				p.PoolID = aws.ToString(o.OutputValue)
			case "ConsoleUserPoolClientId":
				p.ClientID = aws.ToString(o.OutputValue)
			}
		}
	}
	u, err := cognito.New(cfg, awsclient.Requests.Cognito, p, cognito.VerifierOptions{})
	if err != nil {
		return nil, fmt.Errorf("the deployment's user pool: %w", err)
	}
	c.users = u
	return u, nil
}

func (c *cli) memberAdd(ctx context.Context, args []string, stdout io.Writer) error {
	fs := c.flags()
	ws := fs.String("workspace", "", "the workspace `id` (required)")
	email := fs.String("email", "", "the person's `email`, their user name (required)")
	role := fs.String("role", "", "owner, admin or member (required)")
	if err := c.parseIDs(fs, args, stdout, "workspace"); err != nil {
		return err
	}
	e := member.NormalizeEmail(*email)
	if err := member.ValidEmail(e); err != nil {
		return usagef("%s: --email: %v", c.cmd.name, err)
	}
	r, err := member.ParseRole(*role)
	if err != nil {
		return usagef("%s: --role: %v", c.cmd.name, err)
	}
	s, err := c.store(ctx)
	if err != nil {
		return err
	}
	if _, err := accountsdb.New(s).Workspace(ctx, *ws); err != nil {
		return c.notFound(err, "workspace %s does not exist", *ws)
	}
	pool, err := c.pool(ctx)
	if err != nil {
		return err
	}
	u, _, err := pool.EnsureUser(ctx, e)
	if errors.Is(err, cognito.ErrInvalidEmail) {
		return usagef("%s: --email: the user pool does not accept %s", c.cmd.name, e)
	}
	if err != nil {
		return err
	}
	// A membership of an earlier user of the address (one the pool lost
	// and has made again) moves to this one rather than stay beside it.
	if m, err := memberByEmail(ctx, s, *ws, e); err == nil && m.UserID != u.UserID {
		if _, err := membersdb.New(s).MoveMember(ctx, *ws, m.UserID, u.UserID); err != nil && !errors.Is(err, store.ErrExists) {
			return c.target.explain(err)
		}
	}
	err = membersdb.New(s).AddMember(ctx, member.Membership{WorkspaceID: *ws, UserID: u.UserID, Email: e, Role: r, AddedAt: c.clock.Now()})
	if errors.Is(err, store.ErrExists) {
		return fmt.Errorf("%s is a member of %s already, with another role", e, *ws)
	}
	if err != nil {
		return c.notFound(err, "workspace %s does not exist", *ws)
	}
	// The temporary password is printed only when the pool made the user
	// now, or the user never signed in (an earlier add that failed
	// half-way lost the first one): an existing person signs in with their
	// own.
	return writeJSON(stdout, struct {
		UserID            string `json:"user_id"`
		TemporaryPassword string `json:"temporary_password,omitempty"`
	}{u.UserID, u.TemporaryPassword})
}

// namedMember reads the --workspace and --email of a command about one
// member, and finds the member.
func (c *cli) namedMember(ctx context.Context, args []string, stdout io.Writer) (*store.Store, member.Membership, error) {
	fs := c.flags()
	ws := fs.String("workspace", "", "the workspace `id` (required)")
	email := fs.String("email", "", "the member's `email` (required)")
	if err := c.parseIDs(fs, args, stdout, "workspace"); err != nil {
		return nil, member.Membership{}, err
	}
	e := member.NormalizeEmail(*email)
	if e == "" {
		return nil, member.Membership{}, usagef("%s: --email is required", c.cmd.name)
	}
	s, err := c.store(ctx)
	if err != nil {
		return nil, member.Membership{}, err
	}
	m, err := memberByEmail(ctx, s, *ws, e)
	if errors.Is(err, member.ErrNotMember) {
		return nil, member.Membership{}, fmt.Errorf("%s is not a member of %s", e, *ws)
	}
	if err != nil {
		return nil, member.Membership{}, c.target.explain(err)
	}
	return s, m, nil
}

// memberByEmail finds a workspace's member by email.
func memberByEmail(ctx context.Context, s *store.Store, ws, email string) (member.Membership, error) {
	ms, err := membersdb.New(s).Members(ctx, ws)
	if err != nil {
		return member.Membership{}, err
	}
	for _, m := range ms {
		if m.Email == email {
			return m, nil
		}
	}
	return member.Membership{}, member.ErrNotMember
}

func (c *cli) memberRemove(ctx context.Context, args []string, stdout io.Writer) error {
	s, m, err := c.namedMember(ctx, args, stdout)
	if err != nil {
		return err
	}
	err = membersdb.New(s).RemoveMember(ctx, m.WorkspaceID, m.UserID)
	// The person's MCP connections to the workspace end with the
	// membership (also on a retry that finds it gone already).
	revoked := 0
	if err == nil || errors.Is(err, member.ErrNotMember) {
		var rerr error
		if revoked, rerr = oauthdb.New(s).RevokeMember(ctx, m.WorkspaceID, m.UserID, c.clock.Now()); rerr != nil {
			return c.target.explain(rerr)
		}
	}
	switch {
	case errors.Is(err, member.ErrNotMember):
		return fmt.Errorf("%s is not a member of %s", m.Email, m.WorkspaceID)
	case errors.Is(err, member.ErrLastOwner):
		return fmt.Errorf("%s is the last owner of %s: make another member an owner first", m.Email, m.WorkspaceID)
	case err != nil:
		return c.target.explain(err)
	}
	return writeJSON(stdout, struct {
		UserID             string `json:"user_id"`
		Removed            bool   `json:"removed"`
		ConnectionsRevoked int    `json:"connections_revoked"`
	}{m.UserID, true, revoked})
}

func (c *cli) memberList(ctx context.Context, args []string, stdout io.Writer) error {
	ws, s, err := c.workspaceStore(ctx, args, stdout)
	if err != nil {
		return err
	}
	if _, err := s.Workspace(ctx, ws); err != nil {
		return c.notFound(err, "workspace %s does not exist", ws)
	}
	ms, err := membersdb.New(s.Store).Members(ctx, ws)
	if err != nil {
		return c.target.explain(err)
	}
	type row struct {
		UserID  string `json:"user_id"`
		Email   string `json:"email"`
		Role    string `json:"role"`
		AddedAt string `json:"added_at"`
	}
	out := struct {
		WorkspaceID string `json:"workspace_id"`
		Members     []row  `json:"members"`
	}{ws, []row{}}
	for _, m := range ms {
		out.Members = append(out.Members, row{m.UserID, m.Email, string(m.Role), m.AddedAt.UTC().Format("2006-01-02T15:04:05Z")})
	}
	return writeJSON(stdout, out)
}

// memberResetPassword gives a member a new temporary password, printed
// once: the person chooses their own at their next sign-in. A member whose
// user the pool has lost (an add that failed half-way, a pool made again)
// gets a new user, and the membership moves to it.
func (c *cli) memberResetPassword(ctx context.Context, args []string, stdout io.Writer) error {
	s, m, err := c.namedMember(ctx, args, stdout)
	if err != nil {
		return err
	}
	pool, err := c.pool(ctx)
	if err != nil {
		return err
	}
	u, err := pool.ResetPassword(ctx, m.Email)
	if err != nil {
		return err
	}
	if u.UserID != m.UserID {
		if _, err := membersdb.New(s).MoveMember(ctx, m.WorkspaceID, m.UserID, u.UserID); err != nil {
			return c.target.explain(err)
		}
	}
	return writeJSON(stdout, struct {
		UserID            string `json:"user_id"`
		TemporaryPassword string `json:"temporary_password"`
	}{u.UserID, u.TemporaryPassword})
}

// namedPerson reads the --email of a command about a person (in every
// workspace), and finds the target's user pool.
func (c *cli) namedPerson(ctx context.Context, args []string, stdout io.Writer) (users, string, error) {
	fs := c.flags()
	email := fs.String("email", "", "the person's `email` (required)")
	if err := c.parseIDs(fs, args, stdout); err != nil {
		return nil, "", err
	}
	e := member.NormalizeEmail(*email)
	if e == "" {
		return nil, "", usagef("%s: --email is required", c.cmd.name)
	}
	pool, err := c.pool(ctx)
	return pool, e, err
}

// memberDisable disables a person in the user pool (no more sign-ins, the
// console sessions end at their next re-check) and revokes every MCP
// connection of theirs, in every workspace. Run again it disables nothing
// new and revokes what a failed run left.
func (c *cli) memberDisable(ctx context.Context, args []string, stdout io.Writer) error {
	pool, e, err := c.namedPerson(ctx, args, stdout)
	if err != nil {
		return err
	}
	s, err := c.store(ctx)
	if err != nil {
		return err
	}
	u, err := pool.Disable(ctx, e)
	if errors.Is(err, cognito.ErrNoUser) {
		return fmt.Errorf("the user pool has no user %s", e)
	}
	if err != nil {
		return err
	}
	gs, err := oauthdb.New(s).RevokePerson(ctx, u.UserID, c.clock.Now())
	if err != nil {
		return c.target.explain(err)
	}
	type conn struct {
		GrantID     string `json:"grant_id"`
		WorkspaceID string `json:"workspace_id"`
		ClientName  string `json:"client_name"`
	}
	out := struct {
		UserID             string `json:"user_id"`
		Disabled           bool   `json:"disabled"`
		ConnectionsRevoked int    `json:"connections_revoked"`
		Connections        []conn `json:"connections"`
	}{u.UserID, true, len(gs), []conn{}}
	for _, g := range gs {
		out.Connections = append(out.Connections, conn{g.ID, g.WorkspaceID, g.ClientName})
	}
	return writeJSON(stdout, out)
}

// memberEnable lets a disabled person sign in again. Their connections
// stay revoked: an assistant of theirs asks them to sign in again.
func (c *cli) memberEnable(ctx context.Context, args []string, stdout io.Writer) error {
	pool, e, err := c.namedPerson(ctx, args, stdout)
	if err != nil {
		return err
	}
	u, err := pool.Enable(ctx, e)
	if errors.Is(err, cognito.ErrNoUser) {
		return fmt.Errorf("the user pool has no user %s", e)
	}
	if err != nil {
		return err
	}
	return writeJSON(stdout, struct {
		UserID  string `json:"user_id"`
		Enabled bool   `json:"enabled"`
	}{u.UserID, true})
}
