// Package openapi builds the API's OpenAPI 3.1 document (served at
// GET /openapi.json) from the same schemas that validate requests: each
// generation endpoint's request schema comes from the catalog, and the
// response schemas are embedded files here. It imports no AWS package.
//
// The asset endpoints' rules live in their handler (package httpapi) and
// in package asset; the schemas here describe them, and the tests hold the
// two together.
package openapi

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"genjobs/internal/asset"
	"genjobs/internal/catalog"
	"genjobs/internal/job"
)

//go:embed schemas/*.json
var componentFiles embed.FS

// componentNames lists the component schemas in the order the document shows them.
var componentNames = []string{"Job", "JobError", "JobList", "Error", "OutOfCredits", "Asset", "AssetUploadRequest", "AssetUpload",
	"Usage", "DeliveryList", "JobDetails", "JWKS", "Style", "StyleList", "ShareLink"}

const refPrefix = "#/components/schemas/"

// ComponentSchema returns a component schema (Job, JobError, JobList, Error,
// OutOfCredits, Asset, AssetUploadRequest, AssetUpload, Usage, DeliveryList, JobDetails,
// JWKS, Style, StyleList, ShareLink) as a standalone
// draft-07 JSON Schema: references to other components are inlined, so
// gojsonschema can validate a real response with it.
func ComponentSchema(name string) (json.RawMessage, bool) {
	s, err := inlined(name, nil)
	if err != nil {
		return nil, false
	}
	m := s.(map[string]any)
	m["$schema"] = "http://json-schema.org/draft-07/schema#"
	b, err := json.Marshal(m)
	return b, err == nil
}

// inlined reads a component and replaces each {"$ref": "#/components/schemas/X"}
// in it with X, recursively. seen guards against a component holding itself.
func inlined(name string, seen []string) (any, error) {
	for _, s := range seen {
		if s == name {
			return nil, fmt.Errorf("openapi: component %s refers to itself", name)
		}
	}
	raw, err := componentFiles.ReadFile("schemas/" + name + ".json")
	if err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	return resolve(v, append(seen, name))
}

func resolve(v any, seen []string) (any, error) {
	switch v := v.(type) {
	case map[string]any:
		if ref, ok := v["$ref"].(string); ok && len(v) == 1 && strings.HasPrefix(ref, refPrefix) {
			return inlined(strings.TrimPrefix(ref, refPrefix), seen)
		}
		for k, x := range v {
			r, err := resolve(x, seen)
			if err != nil {
				return nil, err
			}
			v[k] = r
		}
	case []any:
		for i, x := range v {
			r, err := resolve(x, seen)
			if err != nil {
				return nil, err
			}
			v[i] = r
		}
	}
	return v, nil
}

// Build returns the OpenAPI 3.1 document of the API served at baseURL,
// indented JSON.
func Build(c *catalog.Catalog, baseURL string) ([]byte, error) {
	schemas := object{}
	for _, name := range componentNames {
		raw, err := componentFiles.ReadFile("schemas/" + name + ".json")
		if err != nil {
			return nil, err
		}
		schemas = append(schemas, member{name, json.RawMessage(raw)})
	}

	paths := object{}
	var tags []any
	seenTags := map[string]bool{}
	addTag := func(name, description string) {
		if !seenTags[name] {
			seenTags[name] = true
			tags = append(tags, object{{"name", name}, {"description", description}})
		}
	}
	for _, e := range c.Endpoints() {
		addTag(e.Tag, tagDescriptions[e.Tag])
		paths = append(paths, member{e.Path(), object{{"post", generateOperation(e)}}})
	}
	addTag("General", tagDescriptions["General"])
	addTag("Assets", tagDescriptions["Assets"])
	addTag("Styles", stylesTagDescription)
	addTag("Utilities", tagDescriptions["Utilities"])
	addTag("MCP", tagDescriptions["MCP"])
	paths = append(paths,
		member{"/jobs", object{{"get", listJobs()}}},
		member{"/jobs/{id}", object{{"get", getJob()}, {"delete", cancelJob()}}},
		member{"/jobs/{id}/deliveries", object{{"get", listDeliveries()}}},
		member{"/jobs/{id}/details", object{{"get", getJobDetails()}}},
		member{"/assets", object{{"post", uploadAsset(baseURL)}}},
		member{"/assets/uploads", object{{"post", startAssetUpload(baseURL)}}},
		member{"/assets/{id}", object{{"get", getAsset()}}},
		member{"/usage", object{{"get", getUsage()}}},
		member{"/styles", object{{"get", listStyles()}}},
		member{"/styles/{id}/share/link", object{{"get", getStyleShareLink()}}},
		member{"/.well-known/jwks.json", object{{"get", getJWKS()}}},
		member{"/openapi.json", object{{"get", getDocument()}}},
		member{"/mcp", object{{"post", postMCP()}}},
	)

	doc := object{
		{"openapi", "3.1.0"},
		{"info", object{
			{"title", "Generation Job Service"},
			{"version", "1"},
			{"description", description},
			// The API contract names no license; this states that the API is not open source.
			{"license", object{{"name", "Proprietary"}, {"identifier", "LicenseRef-Proprietary"}}},
		}},
		{"servers", []any{object{{"url", baseURL}}}},
		{"security", []any{object{{"bearerAuth", []string{}}}}},
		{"tags", tags},
		{"paths", paths},
		{"components", object{
			{"schemas", schemas},
			{"responses", append(responses(), styleResponses()...)},
			{"parameters", object{{"WebhookURL", webhookParameter}, {"IdempotencyKey", idempotencyKeyParameter}}},
			{"securitySchemes", object{{"bearerAuth", object{
				{"type", "http"},
				{"scheme", "bearer"},
				{"description", "An API token of the workspace (gjs_ followed by 43 characters), created in the application's API token settings by a workspace owner or admin. The workspace must have API access enabled."},
			}}}},
		}},
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	return buf.Bytes(), nil
}

const description = "Asynchronous media generation: image enhancement, image, video and 3D generation. " +
	"A generation request answers at once with a pending job; fetch the result with GET /jobs/{id}, " +
	"or pass X-Webhook-URL to have the finished job POSTed to you (signed with ES256; keys at /.well-known/jwks.json). " +
	"An input image is an http(s) URL, a base64 data: URI, or an asset URL of the workspace: upload the image with POST /assets, or POST /assets/uploads when it is larger. " +
	"Usage is billed from the workspace's API balance; only completed jobs are billed."

var tagDescriptions = map[string]string{
	"Image Enhance": "Upscaling and enhancement of existing images.",
	"Image":         "Image generation.",
	"Video":         "Video generation.",
	"3D":            "3D model generation.",
	"General":       "Job management.",
	"Assets":        "Input images stored by the service. Uploading one answers its asset URL, which a generation request of the same workspace takes wherever it takes an image URL; only that workspace can read it.",
	"Utilities":     "Documents about the API itself.",
	"MCP":           "The API as Model Context Protocol tools, for AI assistants: the generation endpoints, jobs, usage and styles, with the same token, rules and billing.",
}

func ref(name string) object { return object{{"$ref", name}} }

func jsonContent(schema any) object {
	return object{{"application/json", object{{"schema", schema}}}}
}

func generateOperation(e *catalog.Endpoint) object {
	desc := e.Description
	headers := object{}
	if deps := e.Deprecations(); len(deps) > 0 {
		var notes []string
		for _, d := range deps {
			if d.Replacement != "" {
				notes = append(notes, fmt.Sprintf("%s (use %s) until %s", d.Field, d.Replacement, d.Sunset.Format(time.DateOnly)))
			} else {
				notes = append(notes, fmt.Sprintf("%s (ignored; omit it) until %s", d.Field, d.Sunset.Format(time.DateOnly)))
			}
		}
		desc += "\n\nDeprecated fields, still accepted but absent from the schema, and refused with 400 from the date given: " +
			strings.Join(notes, "; ") + "."
		headers = object{
			{"Deprecation", object{
				{"description", "Present when the request used a deprecated field: when it was deprecated (RFC 9745), e.g. @1766102400."},
				{"schema", object{{"type", "string"}}},
			}},
			{"Sunset", object{
				{"description", "Present when the request used a deprecated field: from when it is refused (RFC 8594), an HTTP date."},
				{"schema", object{{"type", "string"}}},
			}},
		}
	}
	headers = append(headers, member{"Idempotent-Replayed", object{
		{"description", "true when the answer replays an earlier request with the same Idempotency-Key: the job is that request's, as it stands now, and nothing new was created or charged."},
		{"schema", object{{"type", "string"}, {"enum", []string{"true"}}}},
	}})
	ok := object{{"description", "The job, pending: queued, or backlogged while the workspace's running slots are all taken. Its price is reserved from the API balance and charged only if it completes."},
		{"headers", headers}}
	ok = append(ok, member{"content", object{{"application/json", object{
		{"schema", ref(refPrefix + "Job")},
		{"examples", object{
			{"queued", object{{"summary", "A running slot was free"}, {"value", pendingJob(job.Queued)}}},
			{"backlogged", object{{"summary", "Every running slot of the workspace was taken"}, {"value", pendingJob(job.Backlogged)}}},
		}},
	}}}})
	return object{
		{"tags", []string{e.Tag}},
		{"summary", e.Summary},
		{"description", desc},
		{"operationId", e.OperationID},
		{"parameters", []any{ref("#/components/parameters/WebhookURL"), ref("#/components/parameters/IdempotencyKey")}},
		{"requestBody", object{
			{"required", true},
			{"content", jsonContent(json.RawMessage(e.Schema()))},
		}},
		{"responses", object{
			{"200", ok},
			{"400", ref("#/components/responses/BadRequest")},
			{"401", ref("#/components/responses/Unauthorized")},
			{"402", ref("#/components/responses/OutOfCredits")},
			{"409", ref("#/components/responses/KeyInFlight")},
			{"422", ref("#/components/responses/KeyReused")},
			{"429", ref("#/components/responses/TooManyJobs")},
			{"503", ref("#/components/responses/Unavailable")},
		}},
	}
}

var idempotencyKeyParameter = object{
	{"name", "Idempotency-Key"},
	{"in", "header"},
	{"required", false},
	{"description", "Makes the request safe to retry: 1 to 255 printable ASCII characters (a UUID is a good key), scoped to the workspace and kept 24 hours. A retry with the same key and the same endpoint, body and X-Webhook-URL answers the first request's job with Idempotent-Replayed: true and is not charged again; the same key with another request is a 422. A request refused with 400, 402 or 429 keeps nothing: its retry is judged afresh."},
	{"schema", object{{"type", "string"}, {"minLength", 1}, {"maxLength", 255}, {"pattern", "^[ -~]+$"}}},
}

// exampleUsage is GET /usage's example answer.
var exampleUsage = object{
	{"from", "2026-11-19T00:00:00.000Z"},
	{"to", "2026-11-21T20:33:00.120Z"},
	{"total_usd", "1.309500"},
	{"by_day", []any{
		object{{"date", "2026-11-19"}, {"usd", "1.209500"}, {"jobs", 1}},
		object{{"date", "2026-11-20"}, {"usd", "0.000000"}, {"jobs", 0}},
		object{{"date", "2026-11-21"}, {"usd", "0.100000"}, {"jobs", 1}},
	}},
	{"by_model", []any{
		object{{"path", "/generate/3d/vendor-g/model-g-3.1-rapid"}, {"usd", "0.100000"}, {"jobs", 1}},
		object{{"path", "/generate/video/vendor-b/model-b-fast"}, {"usd", "1.209500"}, {"jobs", 1}},
	}},
}

func getUsage() object {
	return object{
		{"tags", []string{"General"}},
		{"summary", "Get usage"},
		{"description", "What the workspace was billed over the last days (UTC calendar days, today included), by day and by model. Only completed jobs are billed; a job counts on the day it completed."},
		{"operationId", "getUsage"},
		{"parameters", []any{object{
			{"name", "days"},
			{"in", "query"},
			{"required", false},
			{"description", "How many days, today included."},
			{"schema", object{{"type", "integer"}, {"minimum", 1}, {"maximum", 90}, {"default", 7}}},
		}}},
		{"responses", object{
			{"200", object{{"description", "The workspace's usage."}, {"content", object{{"application/json", object{
				{"schema", ref(refPrefix + "Usage")},
				{"example", exampleUsage},
			}}}}}},
			{"400", ref("#/components/responses/BadRequest")},
			{"401", ref("#/components/responses/Unauthorized")},
			{"503", ref("#/components/responses/Unavailable")},
		}},
	}
}

// exampleCreatedAt is the instant the examples' jobs and uploads are created.
var exampleCreatedAt = time.Date(2026, time.November, 21, 20, 33, 0, 120e6, time.UTC)

// pendingJob is a creation answer in status st, as package job writes it.
func pendingJob(st job.Status) job.Record {
	return job.Record{ID: "0194b3a0-5c6e-7d2f-9a01-23456789abcd", Status: st, CreatedAt: job.TimeOf(exampleCreatedAt)}
}

var webhookParameter = object{
	{"name", "X-Webhook-URL"},
	{"in", "header"},
	{"required", false},
	{"description", "Where to POST the job once it reaches a terminal status (completed, failed or cancelled). An absolute https URL of at most 2048 characters without user info; http only where the deployment allows private destinations. Anything else is a 400."},
	{"schema", object{{"type", "string"}, {"format", "uri"}, {"maxLength", 2048}}},
}

func jobIDParameter() object {
	return object{
		{"name", "id"},
		{"in", "path"},
		{"required", true},
		{"description", "The job_id a generation request answered with."},
		{"schema", object{{"type", "string"}, {"format", "uuid"}}},
	}
}

func getJob() object {
	return object{
		{"tags", []string{"General"}},
		{"summary", "Get a job"},
		{"description", "The job's current record. A job of another workspace is not found."},
		{"operationId", "getJob"},
		{"parameters", []any{jobIDParameter()}},
		{"responses", object{
			{"200", object{{"description", "The job."}, {"content", jsonContent(ref(refPrefix + "Job"))}}},
			{"401", ref("#/components/responses/Unauthorized")},
			{"404", ref("#/components/responses/NotFound")},
			{"503", ref("#/components/responses/Unavailable")},
		}},
	}
}

func getJobDetails() object {
	return object{
		{"tags", []string{"General"}},
		{"summary", "Get a job's details"},
		{"description", "What the job was asked (its input as accepted), its source and creator, its price and charge in the currency it is billed in, when it started and ended, and where it ran. A job of another workspace is not found."},
		{"operationId", "getJobDetails"},
		{"parameters", []any{jobIDParameter()}},
		{"responses", object{
			{"200", object{{"description", "The job's details."}, {"content", jsonContent(ref(refPrefix + "JobDetails"))}}},
			{"401", ref("#/components/responses/Unauthorized")},
			{"404", ref("#/components/responses/NotFound")},
			{"503", ref("#/components/responses/Unavailable")},
		}},
	}
}

func listDeliveries() object {
	return object{
		{"tags", []string{"General"}},
		{"summary", "List a job's webhook deliveries"},
		{"description", "The attempts to POST the job's record to its X-Webhook-URL, oldest first. An attempt is made when the job ends, then retried after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h and 24 h until a 2xx answers (later when the receiver's Retry-After asks for it); a 410 or a destination the network policy refuses ends it. Every attempt carries the same X-Service-Webhook-Id."},
		{"operationId", "listDeliveries"},
		{"parameters", []any{jobIDParameter()}},
		{"responses", object{
			{"200", object{{"description", "The attempts."}, {"content", jsonContent(ref(refPrefix + "DeliveryList"))}}},
			{"401", ref("#/components/responses/Unauthorized")},
			{"404", ref("#/components/responses/NotFound")},
			{"503", ref("#/components/responses/Unavailable")},
		}},
	}
}

func cancelJob() object {
	return object{
		{"tags", []string{"General"}},
		{"summary", "Cancel a job"},
		{"description", "Cancels a job that has not ended: it is not billed, a running engine stops within a second, and the workspace's oldest backlogged job takes its slot."},
		{"operationId", "cancelJob"},
		{"parameters", []any{jobIDParameter()}},
		{"responses", object{
			{"200", object{{"description", "The cancelled job."}, {"content", jsonContent(ref(refPrefix + "Job"))}}},
			{"401", ref("#/components/responses/Unauthorized")},
			{"404", ref("#/components/responses/NotFound")},
			{"409", ref("#/components/responses/AlreadyEnded")},
			{"503", ref("#/components/responses/Unavailable")},
		}},
	}
}

func listJobs() object {
	statuses := make([]string, len(job.Statuses))
	for i, s := range job.Statuses {
		statuses[i] = string(s)
	}
	return object{
		{"tags", []string{"General"}},
		{"summary", "List jobs"},
		{"description", "The workspace's jobs, newest first, one page at a time. With status, one request reads at most 2000 of the workspace's jobs: a page may then hold fewer than limit jobs, even none, and still have a next_cursor."},
		{"operationId", "listJobs"},
		{"parameters", []any{
			object{
				{"name", "limit"},
				{"in", "query"},
				{"required", false},
				{"description", "Jobs per page."},
				{"schema", object{{"type", "integer"}, {"minimum", 1}, {"maximum", 1000}, {"default", 100}}},
			},
			object{
				{"name", "cursor"},
				{"in", "query"},
				{"required", false},
				{"description", "next_cursor of the previous page. Opaque, and valid only with the same workspace and query."},
				{"schema", object{{"type", "string"}}},
			},
			object{
				{"name", "status"},
				{"in", "query"},
				{"required", false},
				{"description", "Only jobs in this status."},
				{"schema", object{{"type", "string"}, {"enum", statuses}}},
			},
		}},
		{"responses", object{
			{"200", object{{"description", "One page of jobs."}, {"content", jsonContent(ref(refPrefix + "JobList"))}}},
			{"400", ref("#/components/responses/BadRequest")},
			{"401", ref("#/components/responses/Unauthorized")},
			{"503", ref("#/components/responses/Unavailable")},
		}},
	}
}

// exampleAssetID is the asset id the examples show.
const exampleAssetID = "ast_5n4aqmz2v7hxq3lbd6k2jy4r3e"

// assetIDPattern is asset.ValidID as a regular expression: "ast_" and 26
// lower-case base32 characters, the last of which carries 3 bits of the id
// and 2 zero bits.
const assetIDPattern = "^ast_[a-z2-7]{25}[aeimquy4]$"

// mib writes a byte count that is a whole number of MiB, e.g. "4 MiB (4194304 bytes)".
func mib(n int) string { return fmt.Sprintf("%d MiB (%d bytes)", n>>20, n) }

func assetLocation() object {
	return object{
		{"description", "The asset URL, as in the body."},
		{"schema", object{{"type", "string"}, {"format", "uri"}}},
	}
}

func uploadAsset(baseURL string) object {
	// OpenAPI 3.1 describes a raw binary body by its media type alone, with
	// no schema (the format registry's entry for "binary").
	media := object{}
	for _, ct := range asset.ContentTypes {
		media = append(media, member{ct, object{}})
	}
	return object{
		{"tags", []string{"Assets"}},
		{"summary", "Upload an image"},
		{"description", "Stores an image of at most " + mib(asset.MaxDirectBytes) + ", sent as the raw request body " +
			"(not base64, not multipart), and answers its asset URL. The Content-Type must be " + strings.Join(asset.ContentTypes, ", ") +
			" (letter case and parameters aside) and the bytes must begin with that type's signature; otherwise nothing is stored. " +
			"Larger images, up to " + mib(asset.MaxUploadBytes) + ": POST /assets/uploads. " +
			"Bodies over 10 MB are refused by the API gateway itself, with 413 and a body of its own."},
		{"operationId", "uploadAsset"},
		{"requestBody", object{
			{"required", true},
			{"description", "The image's bytes, as they are."},
			{"content", media},
		}},
		{"responses", object{
			{"201", object{
				{"description", "The image is stored."},
				{"headers", object{{"Location", assetLocation()}}},
				{"content", object{{"application/json", object{
					{"schema", ref(refPrefix + "Asset")},
					{"example", object{{"asset_url", asset.URL(baseURL, exampleAssetID)}}},
				}}}},
			}},
			{"400", ref("#/components/responses/NotAnImage")},
			{"401", ref("#/components/responses/Unauthorized")},
			{"413", ref("#/components/responses/PayloadTooLarge")},
			{"503", ref("#/components/responses/Unavailable")},
		}},
	}
}

func startAssetUpload(baseURL string) object {
	minutes := int(asset.UploadLifetime.Minutes())
	return object{
		{"tags", []string{"Assets"}},
		{"summary", "Start a presigned upload"},
		{"description", fmt.Sprintf("For an image of up to %s: declare its type and size, then PUT its bytes to upload_url, "+
			"directly to storage, within %d minutes. The PUT must send the declared type as Content-Type and exactly the declared size; "+
			"storage refuses any other upload. The asset URL is answered at once and GET /assets/{id} redirects at once, "+
			"but the image is there only once the PUT has succeeded: until then the redirect's target answers 404. "+
			"Use the asset URL in a generation request after the upload.", mib(asset.MaxUploadBytes), minutes)},
		{"operationId", "startAssetUpload"},
		{"requestBody", object{
			{"required", true},
			{"content", object{{"application/json", object{
				{"schema", ref(refPrefix + "AssetUploadRequest")},
				{"example", object{{"content_type", asset.JPEG}, {"size", 6 << 20}}},
			}}}},
		}},
		{"responses", object{
			{"201", object{
				{"description", "Where to upload the image, and the asset it will be."},
				{"headers", object{{"Location", assetLocation()}}},
				{"content", object{{"application/json", object{
					{"schema", ref(refPrefix + "AssetUpload")},
					{"example", object{
						{"upload_url", "https://genjobs-assets.s3.us-east-1.amazonaws.com/assets/ws_demo/" + exampleAssetID +
							"?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=ASIAEXAMPLE%2F20261121%2Fus-east-1%2Fs3%2Faws4_request" +
							"&X-Amz-Date=20261121T203300Z&X-Amz-Expires=" + fmt.Sprint(int(asset.UploadLifetime.Seconds())) +
							"&X-Amz-SignedHeaders=content-length%3Bcontent-type%3Bhost&X-Amz-Signature=" + strings.Repeat("0f", 32)},
						{"asset_url", asset.URL(baseURL, exampleAssetID)},
						{"expires_at", job.TimeOf(exampleCreatedAt.Add(asset.UploadLifetime))},
					}},
				}}}},
			}},
			{"400", ref("#/components/responses/BadRequest")},
			{"401", ref("#/components/responses/Unauthorized")},
			{"503", ref("#/components/responses/Unavailable")},
		}},
	}
}

func getAsset() object {
	return object{
		{"tags", []string{"Assets"}},
		{"summary", "Download an asset"},
		{"description", "Redirects a caller of the asset's own workspace to a presigned download of the image, valid for 5 minutes. " +
			"The download carries its own signature: fetch it without an Authorization header (most HTTP clients drop it on a redirect to another host). " +
			"Another workspace's asset is not found, exactly like an unknown or malformed id. " +
			"The answer comes from the asset's record: the asset of a presigned upload that has not happened yet redirects too, and its download answers 404."},
		{"operationId", "getAsset"},
		{"parameters", []any{object{
			{"name", "id"},
			{"in", "path"},
			{"required", true},
			{"description", "The asset's id, the last segment of its asset URL."},
			{"schema", object{{"type", "string"}, {"pattern", assetIDPattern}}},
			{"example", exampleAssetID},
		}}},
		{"responses", object{
			{"302", object{
				{"description", "To the image."},
				{"headers", object{
					{"Location", object{
						{"description", "A presigned GET of the image, valid for 5 minutes."},
						{"schema", object{{"type", "string"}, {"format", "uri"}}},
					}},
					{"Cache-Control", object{
						{"description", "no-store: the target expires within minutes, so no cache may keep the redirect."},
						{"schema", object{{"type", "string"}, {"enum", []string{"no-store"}}}},
					}},
				}},
			}},
			{"401", ref("#/components/responses/Unauthorized")},
			{"404", ref("#/components/responses/AssetNotFound")},
			{"503", ref("#/components/responses/Unavailable")},
			// Lint (operation-2xx-response) wants a 2XX or default response
			// in every operation; this one answers 302, and default states
			// the service's true answer to a failure.
			{"default", ref("#/components/responses/InternalError")},
		}},
	}
}

func getJWKS() object {
	return object{
		{"tags", []string{"Utilities"}},
		{"summary", "Get the webhook verification keys"},
		{"description", "Public: no token needed. A webhook's X-Service-Webhook-Signature is a JWT (ES256) whose header kid names one of these keys. Cache the document up to 5 minutes; fetch it again when a kid is unknown (a key rotation)."},
		{"operationId", "getWebhookKeys"},
		{"security", []any{}},
		{"responses", object{
			{"200", object{
				{"description", "The keys."},
				{"headers", object{{"Cache-Control", object{{"schema", object{{"type", "string"}, {"example", "public, max-age=300"}}}}}}},
				{"content", jsonContent(ref(refPrefix + "JWKS"))},
			}},
			{"503", ref("#/components/responses/Unavailable")},
		}},
	}
}

func getDocument() object {
	return object{
		{"tags", []string{"Utilities"}},
		{"summary", "Get this document"},
		{"description", "The OpenAPI 3.1 document of the API. Public: no token needed."},
		{"operationId", "getOpenAPIDocument"},
		{"security", []any{}},
		{"responses", object{
			{"200", object{{"description", "The document."}, {"content", jsonContent(object{{"type", "object"}})}}},
			// API Gateway's own throttling, which no route of ours can reshape.
			{"429", object{
				{"description", "Throttled by the API gateway."},
				{"content", object{{"application/json", object{
					{"schema", object{
						{"type", "object"},
						{"required", []string{"message"}},
						{"properties", object{{"message", object{{"type", "string"}}}}},
					}},
					{"example", object{{"message", "Too Many Requests"}}},
				}}}},
			}},
		}},
	}
}

// postMCP is the MCP server's route. It speaks MCP (JSON-RPC 2.0 over
// Streamable HTTP), not a REST body: the document names the protocol and
// the answers of its own, the tools are listed by tools/list.
func postMCP() object {
	message := object{{"type", "object"}, {"required", []string{"jsonrpc"}}, {"properties", object{
		{"jsonrpc", object{{"const", "2.0"}}},
		{"id", object{{"type", []string{"string", "integer", "null"}}}},
		{"method", object{{"type", "string"}}},
		{"params", object{{"type", "object"}}},
		{"result", object{{"type", "object"}}},
		{"error", object{{"type", "object"}}},
	}}, {"additionalProperties", false}}
	return object{
		{"tags", []string{"MCP"}},
		{"summary", "Model Context Protocol server"},
		{"description", "Speaks MCP (Model Context Protocol): its Streamable HTTP transport, stateless, one JSON-RPC 2.0 message per POST, answered with application/json. " +
			"The tools (tools/list) are one per generation endpoint, taking that endpoint's request schema plus idempotency_key, webhook_url and wait_seconds, " +
			"and get_job, wait_job, list_jobs, cancel_job, get_usage, list_styles, list_models. Jobs it creates are ordinary jobs of the token's workspace. " +
			"An API refusal (any answer of the route but a 2xx, an outage's 503 included) is a tool result with isError and the API's message; a job_id that is not a job id is Job not found. " +
			"Send Accept: application/json, text/event-stream. GET and DELETE answer 405."},
		{"operationId", "mcp"},
		{"x-protocol", "mcp"},
		{"requestBody", object{{"required", true}, {"content", object{{"application/json", object{
			{"schema", message},
			{"example", object{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "tools/list"}}},
		}}}}}},
		{"responses", object{
			{"200", object{{"description", "The JSON-RPC answer: a result, or an error with the request's id such as an unknown tool (-32602) or a method the server does not have (-32601)."}, {"content", object{{"application/json", object{
				{"schema", message},
			}}}}}},
			{"400", object{{"description", "Not one JSON-RPC 2.0 message: not a JSON object (-32700), a batch (-32600), a notification of a method the server does not have (-32601), or not JSON-RPC. Nothing was done."}, {"content", object{{"application/json", object{
				{"schema", object{{"type", "object"}}},
				{"example", object{{"jsonrpc", "2.0"}, {"id", nil}, {"error", object{{"code", -32600}, {"message", "Invalid request: JSON-RPC batches are not supported; send one message per request."}}}}},
			}}}}}},
			{"401", ref("#/components/responses/Unauthorized")},
			{"413", object{{"description", "The body is over 73728 bytes. Nothing was done."}, {"content", object{{"application/json", object{
				{"schema", ref(refPrefix + "Error")},
				{"example", object{{"error", "The request body is too large: at most 73728 bytes."}}},
			}}}}}},
			{"503", ref("#/components/responses/Unavailable")},
		}},
	}
}

func responses() object {
	errorResponse := func(description, example string) object {
		return object{
			{"description", description},
			{"content", object{{"application/json", object{
				{"schema", ref(refPrefix + "Error")},
				{"example", object{{"error", example}}},
			}}}},
		}
	}
	return object{
		{"BadRequest", errorResponse("The request is invalid: its body, a query parameter, its Content-Type or its X-Webhook-URL. The message names one broken rule, the same one on every call.",
			"The request body is invalid: width must be between 1 and 32000")},
		{"Unauthorized", errorResponse("No valid API token, or API access is not enabled for the workspace.",
			"You are not authenticated.")},
		{"OutOfCredits", object{
			{"description", "The workspace's API balance cannot pay for the request. Jobs already running finish."},
			{"content", object{{"application/json", object{
				{"schema", ref(refPrefix + "OutOfCredits")},
				{"example", object{
					{"error", "You have run out of credits."},
					{"message", "The API balance is separate from the workspace compute balance; top it up in the application's billing settings."},
				}},
			}}}},
		}},
		{"TooManyJobs", errorResponse("The workspace has its maximum number of unfinished jobs.",
			"You have reached the maximum number of concurrent jobs.")},
		{"NotFound", errorResponse("No such job in the workspace.", "Job not found.")},
		{"AssetNotFound", errorResponse("No such asset in the workspace: the id is unknown or malformed, or the asset belongs to another workspace.",
			"Asset not found.")},
		{"NotAnImage", errorResponse("The Content-Type is not one of "+strings.Join(asset.ContentTypes, ", ")+
			", or the body is not an image of that type (judged by its first bytes). Nothing was stored.",
			"The request body is not a PNG, JPEG or WebP image.")},
		{"PayloadTooLarge", errorResponse("The image is over "+mib(asset.MaxDirectBytes)+": upload it with POST /assets/uploads. Nothing was stored.",
			"The image is larger than 4 MiB; use POST /assets/uploads.")},
		{"InternalError", errorResponse("A fault of the service (500). The message never says more; retry later.",
			"Internal server error.")},
		{"Unavailable", unavailable(errorResponse)},
		{"KeyInFlight", errorResponse("The first request with this Idempotency-Key is still being processed; retry shortly.",
			"A request with this Idempotency-Key is in progress; retry shortly.")},
		{"KeyReused", errorResponse("This Idempotency-Key was first used with another endpoint, body or X-Webhook-URL. Nothing was created.",
			"This Idempotency-Key was used with a different request.")},
		{"AlreadyEnded", errorResponse("The job has already ended (completed, failed or cancelled).",
			"The job has already ended; its status is completed.")},
	}
}

// unavailable is the 503 of every operation that reads or writes a
// dependency: it was throttled, timed out, unreachable or failing, and the
// service's own retries did not get through before the request's deadline.
func unavailable(errorResponse func(description, example string) object) object {
	r := errorResponse("A dependency of the service (its database, queue, storage or key service) is throttled, slow or down, "+
		"and the service's own retries did not get through in time. Retry after the Retry-After delay; "+
		"a creation is safe to retry with an Idempotency-Key.",
		"The service is temporarily unavailable; retry shortly.")
	return slices.Insert(r, 1, member{"headers", object{{"Retry-After", object{
		{"description", "Seconds to wait before retrying."},
		{"schema", object{{"type", "integer"}, {"minimum", 1}, {"example", 2}}},
	}}}})
}

// object is a JSON object that keeps its members in order, so the document
// reads top-down as written here (encoding/json sorts map keys).
type object []member

type member struct {
	key   string
	value any
}

func (o object) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			buf.WriteByte(',')
		}
		k, err := marshal(m.key)
		if err != nil {
			return nil, err
		}
		v, err := marshal(m.value)
		if err != nil {
			return nil, err
		}
		buf.Write(k)
		buf.WriteByte(':')
		buf.Write(v)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
