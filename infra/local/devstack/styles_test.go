package devstack_test

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"genjobs/infra/local/devstack"
)

// The demo's styles through the API routed from template.yaml, as
// `make run` serves them: every filter shows something, the application
// user's private style shows nowhere, and share links point at the local
// application address.
func TestSeededStylesThroughTheLocalAPI(t *testing.T) {
	_, srv, _, token := servedStack(t, false)
	get := func(path string) (int, []byte) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	list := func(query string) []string {
		t.Helper()
		status, body := get("/styles?" + query)
		var p struct {
			Items []struct {
				ID string `json:"id"`
			} `json:"items"`
		}
		if err := json.Unmarshal(body, &p); status != http.StatusOK || err != nil {
			t.Fatalf("GET /styles?%s: %d %s", query, status, body)
		}
		var ids []string
		for _, it := range p.Items {
			ids = append(ids, it.ID)
		}
		return ids
	}
	for query, want := range map[string][]string{
		"filter=all": {"sty_demo_app_shared", "sty_demo_api_sketch", "sty_community_pastel", "sty_community_neon",
			"sty_service_blueprint", "sty_service_noir", "sty_service_watercolor"},
		"filter=user":       {"sty_demo_api_sketch"},
		"filter=community":  {"sty_community_pastel", "sty_community_neon"},
		"filter=service":    {"sty_service_blueprint", "sty_service_noir", "sty_service_watercolor"},
		"filter=shared":     {"sty_demo_app_shared"},
		"filter=unapproved": {"sty_demo_api_sketch"},
		"filter=editor":     {"sty_community_pastel", "sty_service_noir", "sty_service_watercolor"},
		"filter=gallery":    {"sty_community_neon", "sty_service_watercolor"},
		"filter=public":     {"sty_community_pastel", "sty_community_neon", "sty_service_noir", "sty_service_watercolor"},
		"liked=true":        {"sty_community_neon", "sty_service_watercolor"},
	} {
		if got := list(query); !slices.Equal(got, want) {
			t.Errorf("%s: %v\nwant %v", query, got, want)
		}
	}
	status, body := get("/styles/sty_demo_api_sketch/share/link")
	var link struct {
		ShareLink string `json:"share_link"`
		IsNew     bool   `json:"is_new"`
	}
	if err := json.Unmarshal(body, &link); status != http.StatusCreated || err != nil || !link.IsNew ||
		!strings.HasPrefix(link.ShareLink, "http://127.0.0.1:3000"+devstack.AppPath+"/styles/shared/") {
		t.Errorf("share link: %d %s; want 201 and a link under the local application address", status, body)
	}
	if status, body := get("/styles/sty_demo_app_shared/share/link"); status != http.StatusNotFound {
		t.Errorf("an application user's style: %d %s; want 404", status, body)
	}
}
