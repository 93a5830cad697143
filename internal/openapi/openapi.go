// Package openapi builds the API's OpenAPI 3.1 document (served at
// GET /openapi.json) from the same schemas that validate requests: each
// generation endpoint's request schema comes from the catalog, and the
// response schemas are embedded files here. It imports no AWS package.
package openapi

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"genjobs/internal/catalog"
	"genjobs/internal/job"
)

//go:embed schemas/*.json
var componentFiles embed.FS

// componentNames lists the component schemas in the order the document shows them.
var componentNames = []string{"Job", "JobError", "JobList", "Error", "OutOfCredits"}

const refPrefix = "#/components/schemas/"

// ComponentSchema returns a component schema (Job, JobError, JobList, Error,
// OutOfCredits) as a standalone draft-07 JSON Schema: references to other
// components are inlined, so gojsonschema can validate a real response with it.
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
	addTag("Utilities", tagDescriptions["Utilities"])
	paths = append(paths,
		member{"/jobs", object{{"get", listJobs()}}},
		member{"/jobs/{id}", object{{"get", getJob()}, {"delete", cancelJob()}}},
		member{"/openapi.json", object{{"get", getDocument()}}},
	)

	doc := object{
		{"openapi", "3.1.0"},
		{"info", object{
			{"title", "Generation Job Service"},
			{"version", "1"},
			{"description", description},
			// The spec names no license; this states that the API is not open source.
			{"license", object{{"name", "Proprietary"}, {"identifier", "LicenseRef-Proprietary"}}},
		}},
		{"servers", []any{object{{"url", baseURL}}}},
		{"security", []any{object{{"bearerAuth", []string{}}}}},
		{"tags", tags},
		{"paths", paths},
		{"components", object{
			{"schemas", schemas},
			{"responses", responses()},
			{"parameters", object{{"WebhookURL", webhookParameter}}},
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
	"Usage is billed from the workspace's API balance; only completed jobs are billed."

var tagDescriptions = map[string]string{
	"Image Enhance": "Upscaling and enhancement of existing images.",
	"Image":         "Image generation.",
	"Video":         "Video generation.",
	"3D":            "3D model generation.",
	"General":       "Job management.",
	"Utilities":     "Documents about the API itself.",
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
	ok := object{{"description", "The job, pending: queued, or backlogged while the workspace's running slots are all taken."}}
	if len(headers) > 0 {
		ok = append(ok, member{"headers", headers})
	}
	ok = append(ok, member{"content", jsonContent(ref(refPrefix + "Job"))})
	return object{
		{"tags", []string{e.Tag}},
		{"summary", e.Summary},
		{"description", desc},
		{"operationId", e.OperationID},
		{"parameters", []any{ref("#/components/parameters/WebhookURL")}},
		{"requestBody", object{
			{"required", true},
			{"content", jsonContent(json.RawMessage(e.Schema()))},
		}},
		{"responses", object{
			{"200", ok},
			{"400", ref("#/components/responses/BadRequest")},
			{"401", ref("#/components/responses/Unauthorized")},
			{"402", ref("#/components/responses/OutOfCredits")},
			{"429", ref("#/components/responses/TooManyJobs")},
		}},
	}
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
		{"description", "The workspace's jobs, newest first, one page at a time."},
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
		{"AlreadyEnded", errorResponse("The job has already ended (completed, failed or cancelled).",
			"The job has already ended; its status is completed.")},
	}
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
