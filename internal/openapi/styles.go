package openapi

import "genjobs/internal/style"

// The styles endpoints (docs/api.md, "Styles"). Their rules live in package style
// and the handler (package httpapi); the tests hold these to them.

const stylesTagDescription = "Styles the workspace's API user may see, and shareable links to the styles it owns. " +
	"The API is its own user in the workspace: styles of the web application's users are not seen through the API, " +
	"and the API's are not seen in the application, unless shared with the workspace."

// exampleAppURL is the web application's address in the examples.
const exampleAppURL = "https://app.example.com"

func filterNames() []string {
	out := make([]string, len(style.Filters))
	for i, f := range style.Filters {
		out[i] = string(f)
	}
	return out
}

func queryParameter(name, description string, schema object) object {
	return object{
		{"name", name},
		{"in", "query"},
		{"required", false},
		{"description", description},
		{"schema", schema},
	}
}

func listStyles() object {
	return object{
		{"tags", []string{"Styles"}},
		{"summary", "List styles"},
		{"description", "Styles the caller may see, newest first (by created_at, then id), one page at a time. " +
			"A walk of the pages neither repeats nor skips a style while styles are added: new styles sort before the walk's position, and show on a new walk. " +
			"Every parameter narrows the list; each filter keeps to what the caller may see. " +
			"Unknown or repeated parameters are refused, and when several are wrong the first by name is reported. " +
			"When the list's sets hold many styles the caller may not see (editor, gallery, user, model), one request passes over at most 2000 of them: " +
			"a page may then hold fewer than limit styles, even none, and still have a next_cursor."},
		{"operationId", "listStyles"},
		{"parameters", []any{
			queryParameter("cursor", "next_cursor of the previous page. Opaque, and valid only with the same workspace and query (any limit).",
				object{{"type", "string"}}),
			queryParameter("filter", "all: everything the caller may see (its own, shared with its workspace, the service's, the public listing); "+
				"user: its own; community: the public listing's styles of other users; service: the service's (owner null); "+
				"shared: shared with its workspace; unapproved: its own, not approved for the public listing; "+
				"editor: editor's picks; gallery: the public gallery; public: public=true.",
				object{{"type", "string"}, {"enum", filterNames()}, {"default", string(style.All)}}),
			queryParameter("ids", "Only these styles: style ids separated by commas, at most 100. Ids that are unknown or not visible match nothing.",
				object{{"type", "string"}}),
			queryParameter("liked", "true: only styles the caller liked.",
				object{{"type", "boolean"}, {"default", false}}),
			queryParameter("limit", "Styles per page.",
				object{{"type", "integer"}, {"minimum", 1}, {"maximum", style.MaxLimit}, {"default", style.DefaultLimit}}),
			queryParameter("model", "Only styles whose models hold this one.",
				object{{"type", "string"}, {"enum", style.Models}}),
			queryParameter("user", "Only styles of this owner: an owner.id (a UUID), or api:{workspace_id} for a workspace's API user.",
				object{{"type", "string"}}),
		}},
		{"responses", object{
			{"200", ref("#/components/responses/StyleList")},
			{"400", ref("#/components/responses/BadRequest")},
			{"401", ref("#/components/responses/Unauthorized")},
			{"503", ref("#/components/responses/Unavailable")},
		}},
	}
}

func getStyleShareLink() object {
	return object{
		{"tags", []string{"Styles"}},
		{"summary", "Get a style's share link"},
		{"description", "Creates the share link of a style the caller (the workspace's API user) owns, or answers the one it has: " +
			"a style has one link, also when two first requests come at once. Anyone with the link can open the style in the web application."},
		{"operationId", "getStyleShareLink"},
		{"parameters", []any{object{
			{"name", "id"},
			{"in", "path"},
			{"required", true},
			{"description", "The style's id. An id over 128 characters, or with characters other than letters, digits, _ and -, is not found."},
			{"schema", object{{"type", "string"}}},
			{"example", "sty_5f0c2a9e41d7b3c86a10e4f2"},
		}}},
		{"responses", object{
			{"200", ref("#/components/responses/ShareLinkExisting")},
			{"201", ref("#/components/responses/ShareLinkCreated")},
			{"401", ref("#/components/responses/Unauthorized")},
			{"404", ref("#/components/responses/StyleNotFound")},
			{"503", ref("#/components/responses/Unavailable")},
		}},
	}
}

// exampleStyles are a page's records as the handler writes them.
func exampleStyles() []style.Record {
	own := style.Style{
		ID: "sty_5f0c2a9e41d7b3c86a10e4f2", WorkspaceID: "ws_3f9a0c1d2e4b5a6978c0d1e2", Owner: style.APIOwner("ws_3f9a0c1d2e4b5a6978c0d1e2"),
		Title: "Ink sketch", Prompt: "loose ink lines, cross-hatching, sketchbook",
		URLs: []string{"https://images.example.com/styles/sketch-1.jpg"}, Models: []string{"model-e-4"},
		LikeCount: 2, CreatedAt: exampleCreatedAt,
	}
	service := style.Style{
		ID: "sty_service_watercolor", Owner: style.Owner{Kind: style.OwnerService}, Title: "Watercolor", Public: true,
		Prompt: "soft watercolor washes, paper texture, bleeding edges",
		URLs:   []string{"https://images.example.com/styles/watercolor-1.jpg", "https://images.example.com/styles/watercolor-2.jpg"},
		Models: []string{"model-e-4", "model-f-2.2"}, LikeCount: 41, CreatedAt: exampleCreatedAt.AddDate(0, 0, -20),
	}
	return []style.Record{own.Record(exampleAppURL), service.Record(exampleAppURL)}
}

func styleResponses() object {
	shareLink := func(description string, isNew bool) object {
		return object{
			{"description", description},
			{"content", object{{"application/json", object{
				{"schema", ref(refPrefix + "ShareLink")},
				{"example", object{
					{"share_link", style.ShareLink(exampleAppURL, "Vx3q0e2kJ6pQd8YtZrB1mN4sLc7aHf9uWgE5oTiKjXw")},
					{"is_new", isNew},
				}},
			}}}},
		}
	}
	return object{
		{"StyleList", object{
			{"description", "One page of styles."},
			{"content", object{{"application/json", object{
				{"schema", ref(refPrefix + "StyleList")},
				{"example", object{{"items", exampleStyles()}, {"next_cursor", "eyJhIjoiMjAyNi0xMS0wMVQyMDozMzowMC4xMjBaI3N0eV9zZXJ2aWNlX3dhdGVyY29sb3IiLCJxIjoiOWQ0YzFmIn0"}}},
			}}}},
		}},
		{"ShareLinkCreated", shareLink("The link was created by this request.", true)},
		{"ShareLinkExisting", shareLink("The style already had this link.", false)},
		{"StyleNotFound", object{
			{"description", "No such style, or the caller does not own it (another workspace's style, an application user's or the service's)."},
			{"content", object{{"application/json", object{
				{"schema", ref(refPrefix + "Error")},
				{"example", object{{"error", "Style not found or you are not the owner."}}},
			}}}},
		}},
	}
}
