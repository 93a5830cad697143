package client

import (
	"context"
	"iter"
	"net/url"
	"strings"
)

// StylesService lists styles and makes share links.
type StylesService struct{ c *Client }

// Style is one style record.
type Style struct {
	ID        string      `json:"id"`
	Title     string      `json:"title"`
	URLs      []string    `json:"urls"`
	Public    bool        `json:"public"`
	Prompt    string      `json:"prompt"`
	Owner     *StyleOwner `json:"owner"` // nil for the service's own styles
	LikeCount int         `json:"like_count"`
	CreatedAt string      `json:"created_at"`
	CoverURL  string      `json:"cover_url"`
	Models    []string    `json:"models"`
}

// StyleOwner is the user who owns a style.
type StyleOwner struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	AvatarURL string `json:"avatar_url"`
}

// StyleParams narrows a style listing. Filter is one of all (the default),
// user, community, service, shared, unapproved, editor, gallery, public.
type StyleParams struct {
	Filter string
	User   string   // an owner id
	IDs    []string // only these styles
	Model  string   // styles usable with this model
	Liked  bool     // styles the caller liked
	Limit  int      // per page, 1..1000 (default 100)
	Cursor string
}

// StylePage is one page of styles.
type StylePage = Page[*Style]

// ListPage reads one page of styles.
func (s *StylesService) ListPage(ctx context.Context, p StyleParams) (*StylePage, error) {
	q := url.Values{}
	for k, v := range map[string]string{"filter": p.Filter, "user": p.User, "model": p.Model, "ids": strings.Join(p.IDs, ",")} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if p.Liked {
		q.Set("liked", "true")
	}
	return getPage[*Style](ctx, s.c, "/styles", q, p.Limit, p.Cursor)
}

// List walks every page of styles from p.Cursor on; it stops at the first
// error, which it yields.
func (s *StylesService) List(ctx context.Context, p StyleParams) iter.Seq2[*Style, error] {
	return paginate(p.Cursor, func(c string) (*StylePage, error) { p.Cursor = c; return s.ListPage(ctx, p) })
}

// ShareLink is a link that lets others use a style.
type ShareLink struct {
	URL   string `json:"share_link"`
	IsNew bool   `json:"is_new"` // made by this call rather than an earlier one
}

// ShareLink makes, or reads again, the share link of a style the caller
// owns; another's style, or a missing one, is an *APIError with status 404.
func (s *StylesService) ShareLink(ctx context.Context, id string) (*ShareLink, error) {
	var l ShareLink
	if err := s.c.getJSON(ctx, "/styles/"+url.PathEscape(id)+"/share/link", nil, &l); err != nil {
		return nil, err
	}
	return &l, nil
}
