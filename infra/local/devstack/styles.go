package devstack

import (
	"context"
	"errors"
	"fmt"
	"time"

	"genjobs/internal/auth"
	"genjobs/internal/store"
	"genjobs/internal/store/accountsdb"
	"genjobs/internal/store/stylesdb"
	"genjobs/internal/style"
)

// AppPath is where the web application lives locally, under the API's
// address: APP_URL (template parameter AppUrl) is BaseURL + AppPath, so
// share links read http://127.0.0.1:3000/app/styles/shared/{token}. No
// application answers there; the link is what a client stores and shows.
const AppPath = "/app"

// CommunityWorkspace holds the demo's community: users of the application
// whose public styles the demo workspace sees in filter=community.
const CommunityWorkspace = "ws_community"

// Demo users of the application (their ids are the application's UUIDs).
var (
	demoAppUser = style.Owner{Kind: style.OwnerApp, ID: "5d1f0c7e-8a2b-4c3d-9e4f-0a1b2c3d4e01", Name: "Dana (demo workspace)"}
	minaUser    = style.Owner{Kind: style.OwnerApp, ID: "5d1f0c7e-8a2b-4c3d-9e4f-0a1b2c3d4e02", Name: "Mina"}
	theoUser    = style.Owner{Kind: style.OwnerApp, ID: "5d1f0c7e-8a2b-4c3d-9e4f-0a1b2c3d4e03", Name: "Theo"}
)

// demoStyle is a seeded style and what is done to it after creation.
type demoStyle struct {
	style.Style
	approve, editor, gallery bool
	shareWith                string
	likedBy                  []style.Caller
}

func demoStyles() []demoStyle {
	service := style.Owner{Kind: style.OwnerService}
	demoAPI := style.APIOwner(DemoWorkspace)
	at := func(day, hour int) time.Time { return time.Date(2026, 11, day, hour, 0, 0, 0, time.UTC) }
	img := func(name string) []string {
		return []string{"https://images.example.com/styles/" + name + "-1.jpg", "https://images.example.com/styles/" + name + "-2.jpg"}
	}
	api := style.APICaller(DemoWorkspace)
	dana := style.Caller{WorkspaceID: DemoWorkspace, UserID: demoAppUser.ID}
	return []demoStyle{
		{Style: style.Style{ID: "sty_service_watercolor", Owner: service, Title: "Watercolor", Public: true,
			Prompt: "soft watercolor washes, paper texture, bleeding edges", Models: []string{"model-e-4", "model-f-2.2"},
			URLs: img("watercolor"), CreatedAt: at(1, 9)}, editor: true, gallery: true, likedBy: []style.Caller{api, dana}},
		{Style: style.Style{ID: "sty_service_noir", Owner: service, Title: "Film noir", Public: true,
			Prompt: "high-contrast black and white, hard shadows, 1940s cinema", Models: []string{"model-b-fast", "model-c", "model-e-4"},
			URLs: img("noir"), CreatedAt: at(2, 9)}, editor: true},
		{Style: style.Style{ID: "sty_service_blueprint", Owner: service, Title: "Blueprint",
			Prompt: "technical blueprint, white lines on deep blue, annotations", Models: []string{"model-e-4", "model-g-3.1-rapid"},
			URLs: img("blueprint"), CreatedAt: at(3, 9)}},
		{Style: style.Style{ID: "sty_community_neon", WorkspaceID: CommunityWorkspace, Owner: minaUser, Title: "Neon city", Public: true,
			Prompt: "rain-soaked streets, neon signs, reflections", Models: []string{"model-e-4", "model-d-flash-1.1"},
			URLs: img("neon"), CreatedAt: at(4, 12)}, approve: true, gallery: true, likedBy: []style.Caller{api}},
		{Style: style.Style{ID: "sty_community_pastel", WorkspaceID: CommunityWorkspace, Owner: theoUser, Title: "Pastel claymation", Public: true,
			Prompt: "clay figures, pastel palette, soft studio light", Models: []string{"model-b-fast", "model-e-4"},
			URLs: img("pastel"), CreatedAt: at(5, 12)}, approve: true, editor: true},
		// Public but not approved yet: its owner alone sees it.
		{Style: style.Style{ID: "sty_community_pending", WorkspaceID: CommunityWorkspace, Owner: theoUser, Title: "Glitch (pending review)", Public: true,
			Prompt: "datamosh, RGB split, scan lines", Models: []string{"model-e-4"}, URLs: img("glitch"), CreatedAt: at(6, 12)}},
		// The demo workspace's own: the API's (share links work on it) and an
		// application user's, one shared with the workspace, one not (docs/api.md, "Styles").
		{Style: style.Style{ID: "sty_demo_api_sketch", WorkspaceID: DemoWorkspace, Owner: demoAPI, Title: "Ink sketch",
			Prompt: "loose ink lines, cross-hatching, sketchbook", Models: []string{"model-e-4"}, URLs: img("sketch"), CreatedAt: at(7, 15)}},
		{Style: style.Style{ID: "sty_demo_app_shared", WorkspaceID: DemoWorkspace, Owner: demoAppUser, Title: "Brand palette (shared)",
			Prompt: "flat shapes in the brand's teal and coral", Models: []string{"model-e-4", "model-f-2.2"}, URLs: img("brand"), CreatedAt: at(8, 15)},
			shareWith: DemoWorkspace},
		{Style: style.Style{ID: "sty_demo_app_private", WorkspaceID: DemoWorkspace, Owner: demoAppUser, Title: "Moodboard (private to the application)",
			Prompt: "muted film grain, warm highlights", Models: []string{"model-e-4"}, URLs: img("mood"), CreatedAt: at(9, 15)}},
	}
}

// seedStyles stores the demo's styles unless they exist, so that
// GET /styles shows something on a fresh `make run`: the service's,
// the community's and the demo workspace's. It is idempotent.
func seedStyles(ctx context.Context, s *store.Store, now time.Time) error {
	err := accountsdb.New(s).CreateWorkspace(ctx, auth.Workspace{ID: CommunityWorkspace, Name: "Community", CreatedAt: now})
	if err != nil && !errors.Is(err, store.ErrExists) {
		return err
	}
	styles := stylesdb.New(s)
	for _, d := range demoStyles() {
		if err := styles.CreateStyle(ctx, d.Style); err != nil && !errors.Is(err, store.ErrExists) {
			return fmt.Errorf("seed style %s: %w", d.ID, err)
		}
		if d.approve {
			if _, err := styles.ApproveStyle(ctx, d.ID); err != nil {
				return fmt.Errorf("seed style %s: %w", d.ID, err)
			}
		}
		if d.editor || d.gallery {
			if _, err := styles.FeatureStyle(ctx, d.ID, d.editor, d.gallery); err != nil {
				return fmt.Errorf("seed style %s: %w", d.ID, err)
			}
		}
		if d.shareWith != "" {
			if _, err := styles.ShareStyle(ctx, d.ID, d.shareWith); err != nil {
				return fmt.Errorf("seed style %s: %w", d.ID, err)
			}
		}
		for _, c := range d.likedBy {
			if _, _, err := styles.LikeStyle(ctx, c, d.ID, d.CreatedAt); err != nil {
				return fmt.Errorf("seed style %s: %w", d.ID, err)
			}
		}
	}
	return nil
}
