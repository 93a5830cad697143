package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"genjobs/internal/store"
	"genjobs/internal/store/accountsdb"
	"genjobs/internal/store/stylesdb"
	"genjobs/internal/style"
)

// Bounds of a style's fields (the application's style editor would have them).
const (
	maxStylePromptLen = 2000 // characters
	maxStyleURLs      = 10
	maxStyleURLLen    = 1024 // as every image-valued field of the API
)

// The style commands join the command table of main.go here, after its
// own: a file of their own keeps the table's other entries apart.
func init() { commands = append(commands, styleCommands...) }

// styles is the store with the styles (package stylesdb).
func (c *cli) styles(ctx context.Context) (*stylesdb.DB, error) {
	s, err := c.store(ctx)
	if err != nil {
		return nil, err
	}
	return stylesdb.New(s), nil
}

// styleCommands are the style commands (docs/operations.md, "The operator CLI").
var styleCommands = []command{
	{"style create", "(--workspace W [--app-user U] | --service) --title T --prompt P --models m1,m2 [--public] [--urls u1,u2]",
		"create a style of the workspace's API user, of an application user of the workspace, or of the service; prints {style_id}", (*cli).styleCreate},
	{"style like", "--workspace W [--app-user U] --style S",
		"like a style as the workspace's API user (or an application user), once; prints {style_id, like_count, is_new}", (*cli).styleLike},
	{"style share-with-workspace", "--workspace W --style S",
		"share a style with a workspace: its API user and application users see it; prints {style_id, shared_with}", (*cli).styleShare},
	{"style approve", "--style S",
		"approve a style for the public listing (a public style then shows to everyone); prints {style_id, approved}", (*cli).styleApprove},
	{"style feature", "--style S (--editor | --gallery)",
		"make a style an editor's pick, or put it in the public gallery; prints {style_id, editors_pick, gallery}", (*cli).styleFeature},
}

// styleCaller reads --workspace, --app-user and --service into the caller
// they name (the owner or liker).
func (c *cli) styleCaller(ws, appUser string) (style.Caller, error) {
	if err := c.id("--workspace", ws); err != nil {
		return style.Caller{}, err
	}
	if appUser == "" {
		return style.APICaller(ws), nil
	}
	if !style.ValidUUID(appUser) {
		return style.Caller{}, usagef("%s: --app-user must be the application user's id, a UUID, not %q", c.cmd.name, appUser)
	}
	return style.Caller{WorkspaceID: ws, UserID: strings.ToLower(appUser)}, nil
}

// styleID checks --style.
func (c *cli) styleID(v string) error {
	if err := c.id("--style", v); err != nil {
		return err
	}
	if !style.ValidID(v) {
		return usagef("%s: --style %q is not a style id (letters, digits, _ and -, at most %d)", c.cmd.name, v, style.MaxIDLength)
	}
	return nil
}

// styleNotFound words a missing style, and explains the rest.
func (c *cli) styleNotFound(err error, format string, a ...any) error {
	if errors.Is(err, style.ErrNotFound) {
		return fmt.Errorf(format, a...)
	}
	return c.target.explain(err)
}

// list splits a comma-separated flag value; empty entries are an error.
func (c *cli) list(flagName, v string) ([]string, error) {
	parts := strings.Split(v, ",")
	for i, p := range parts {
		parts[i] = strings.TrimSpace(p)
		if parts[i] == "" {
			return nil, usagef("%s: %s has an empty entry", c.cmd.name, flagName)
		}
	}
	return parts, nil
}

func (c *cli) styleCreate(ctx context.Context, args []string, stdout io.Writer) error {
	fs := c.flags()
	ws := fs.String("workspace", "", "the workspace `id` of the owner")
	appUser := fs.String("app-user", "", "the owner is this user of the web application (its `UUID`) in the workspace; without it, the workspace's API user")
	ownerName := fs.String("owner-name", "", "with --app-user: the user's display `name` (default: User and the id's first 8 digits)")
	service := fs.Bool("service", false, "the service owns the style (owner null): every workspace sees it")
	title := fs.String("title", "", "the style's `title` (required)")
	prompt := fs.String("prompt", "", "the style's `prompt` (required)")
	models := fs.String("models", "", "the `models` it is for, separated by commas: "+strings.Join(style.Models, ", ")+" (required)")
	public := fs.Bool("public", false, "ask for the public listing: everyone sees it once approved (style approve)")
	urls := fs.String("urls", "", "image `URLs` of the style, separated by commas; the first is its cover")
	if err := c.parse(fs, args, stdout); err != nil {
		return err
	}
	st := style.Style{ID: style.NewID(), Public: *public, CreatedAt: c.clock.Now()}
	switch {
	case *service && (*ws != "" || *appUser != ""):
		return usagef("%s: give --workspace (and --app-user) or --service, not both", c.cmd.name)
	case *service:
		if *ownerName != "" {
			return usagef("%s: --owner-name names an application user; the service's styles have no owner", c.cmd.name)
		}
		st.Owner = style.Owner{Kind: style.OwnerService}
	case *ws == "":
		return usagef("%s: give --workspace W (the API user's, or with --app-user an application user's style) or --service", c.cmd.name)
	default:
		caller, err := c.styleCaller(*ws, *appUser)
		if err != nil {
			return err
		}
		st.WorkspaceID, st.Owner = *ws, style.APIOwner(*ws)
		if *appUser != "" {
			name := *ownerName
			if name == "" {
				name = "User " + caller.UserID[:8]
			}
			if name, err = c.name("--owner-name", name); err != nil {
				return err
			}
			st.Owner = style.Owner{Kind: style.OwnerApp, ID: caller.UserID, Name: name}
		} else if *ownerName != "" {
			return usagef("%s: --owner-name needs --app-user (the API user is named %s)", c.cmd.name, style.APIUserName)
		}
	}
	var err error
	if st.Title, err = c.name("--title", *title); err != nil {
		return err
	}
	if st.Prompt, err = c.text("--prompt", *prompt, maxStylePromptLen); err != nil {
		return err
	}
	if *models == "" {
		return usagef("%s: --models is required (%s)", c.cmd.name, strings.Join(style.Models, ", "))
	}
	if st.Models, err = c.list("--models", *models); err != nil {
		return err
	}
	for i, m := range st.Models {
		if !style.KnownModel(m) {
			return usagef("%s: --models: %q is not one of %s", c.cmd.name, m, strings.Join(style.Models, ", "))
		}
		if slices.Contains(st.Models[:i], m) {
			return usagef("%s: --models names %s twice", c.cmd.name, m)
		}
	}
	if *urls != "" {
		if st.URLs, err = c.list("--urls", *urls); err != nil {
			return err
		}
		if len(st.URLs) > maxStyleURLs {
			return usagef("%s: --urls has %d URLs; at most %d are allowed", c.cmd.name, len(st.URLs), maxStyleURLs)
		}
		for _, u := range st.URLs {
			p, err := url.Parse(u)
			if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" || len(u) > maxStyleURLLen {
				return usagef("%s: --urls: %q is not an http(s) URL of at most %d characters", c.cmd.name, u, maxStyleURLLen)
			}
		}
	}
	s, err := c.styles(ctx)
	if err != nil {
		return err
	}
	if err := s.CreateStyle(ctx, st); err != nil {
		return c.notFound(err, "workspace %s does not exist", *ws)
	}
	return writeJSON(stdout, struct {
		StyleID string `json:"style_id"`
	}{st.ID})
}

// text checks a required free text of at most max characters; unlike a
// name it may hold line breaks.
func (c *cli) text(flagName, v string, max int) (string, error) {
	v = strings.TrimSpace(v)
	switch {
	case v == "":
		return "", usagef("%s: %s is required", c.cmd.name, flagName)
	case utf8.RuneCountInString(v) > max:
		return "", usagef("%s: %s has %d characters; at most %d are allowed", c.cmd.name, flagName, utf8.RuneCountInString(v), max)
	case !utf8.ValidString(v) || strings.IndexFunc(v, func(r rune) bool { return unicode.IsControl(r) && r != '\n' }) >= 0:
		return "", usagef("%s: %s must be printable text", c.cmd.name, flagName)
	}
	return v, nil
}

func (c *cli) styleLike(ctx context.Context, args []string, stdout io.Writer) error {
	fs := c.flags()
	ws := fs.String("workspace", "", "the workspace `id` of the user who likes it (required)")
	appUser := fs.String("app-user", "", "the user is this user of the web application (its `UUID`); without it, the workspace's API user")
	id := fs.String("style", "", "the style's `id` (required)")
	if err := c.parse(fs, args, stdout); err != nil {
		return err
	}
	caller, err := c.styleCaller(*ws, *appUser)
	if err != nil {
		return err
	}
	if err := c.styleID(*id); err != nil {
		return err
	}
	s, err := c.styles(ctx)
	if err != nil {
		return err
	}
	if _, err := accountsdb.New(s.Store).Workspace(ctx, *ws); err != nil {
		return c.notFound(err, "workspace %s does not exist", *ws)
	}
	// Liking again is not an error: the like stands, counted once.
	st, isNew, err := s.LikeStyle(ctx, caller, *id, c.clock.Now())
	if err != nil {
		return c.styleNotFound(err, "style %s does not exist, or the user may not see it", *id)
	}
	return writeJSON(stdout, struct {
		StyleID   string `json:"style_id"`
		LikeCount int    `json:"like_count"`
		IsNew     bool   `json:"is_new"`
	}{st.ID, st.LikeCount, isNew})
}

func (c *cli) styleShare(ctx context.Context, args []string, stdout io.Writer) error {
	fs := c.flags()
	ws := fs.String("workspace", "", "the workspace `id` to share it with (required)")
	id := fs.String("style", "", "the style's `id` (required)")
	if err := c.parseIDs(fs, args, stdout, "workspace"); err != nil {
		return err
	}
	if err := c.styleID(*id); err != nil {
		return err
	}
	s, err := c.styles(ctx)
	if err != nil {
		return err
	}
	st, err := s.ShareStyle(ctx, *id, *ws)
	switch {
	case errors.Is(err, style.ErrNotFound):
		return fmt.Errorf("style %s does not exist", *id)
	case errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("workspace %s does not exist", *ws)
	case err != nil:
		return c.target.explain(err)
	}
	return writeJSON(stdout, struct {
		StyleID    string   `json:"style_id"`
		SharedWith []string `json:"shared_with"`
	}{st.ID, st.SharedWith})
}

func (c *cli) styleApprove(ctx context.Context, args []string, stdout io.Writer) error {
	fs := c.flags()
	id := fs.String("style", "", "the style's `id` (required)")
	if err := c.parse(fs, args, stdout); err != nil {
		return err
	}
	if err := c.styleID(*id); err != nil {
		return err
	}
	s, err := c.styles(ctx)
	if err != nil {
		return err
	}
	st, err := s.ApproveStyle(ctx, *id)
	if err != nil {
		return c.styleNotFound(err, "style %s does not exist", *id)
	}
	return writeJSON(stdout, struct {
		StyleID  string `json:"style_id"`
		Approved bool   `json:"approved"`
	}{st.ID, st.Approved})
}

func (c *cli) styleFeature(ctx context.Context, args []string, stdout io.Writer) error {
	fs := c.flags()
	id := fs.String("style", "", "the style's `id` (required)")
	editor := fs.Bool("editor", false, "make it an editor's pick")
	gallery := fs.Bool("gallery", false, "put it in the public gallery")
	if err := c.parse(fs, args, stdout); err != nil {
		return err
	}
	if err := c.styleID(*id); err != nil {
		return err
	}
	switch {
	case *editor && *gallery:
		return usagef("%s: give --editor or --gallery, not both", c.cmd.name)
	case !*editor && !*gallery:
		return usagef("%s: give --editor or --gallery", c.cmd.name)
	}
	s, err := c.styles(ctx)
	if err != nil {
		return err
	}
	st, err := s.FeatureStyle(ctx, *id, *editor, *gallery)
	if err != nil {
		return c.styleNotFound(err, "style %s does not exist", *id)
	}
	return writeJSON(stdout, struct {
		StyleID     string `json:"style_id"`
		EditorsPick bool   `json:"editors_pick"`
		Gallery     bool   `json:"gallery"`
	}{st.ID, st.EditorsPick, st.Gallery})
}
