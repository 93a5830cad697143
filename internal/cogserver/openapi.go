package cogserver

import (
	"encoding/json"
	"net/http"
)

// openAPI is Cog's GET /openapi.json for one model: the prediction
// envelope, with the endpoint's request schema as Input and a data: URI
// (or a list of them) as Output.
func (s *Server) openAPI(w http.ResponseWriter, r *http.Request, m *model) {
	p := "/" + m.base
	ref := func(name string) map[string]any { return map[string]any{"$ref": "#/components/schemas/" + name} }
	jsonBody := func(schema any) map[string]any {
		return map[string]any{"content": map[string]any{"application/json": map[string]any{"schema": schema}}}
	}
	id := map[string]any{"name": "prediction_id", "in": "path", "required": true, "schema": map[string]any{"type": "string"}}
	prefer := map[string]any{"name": "prefer", "in": "header", "required": false, "schema": map[string]any{"type": "string"}}
	predict := func(op string, params ...any) map[string]any {
		return map[string]any{
			"summary":     op,
			"operationId": op,
			"parameters":  params,
			"requestBody": jsonBody(ref("PredictionRequest")),
			"responses": map[string]any{
				"200": map[string]any{"description": "The finished prediction", "content": jsonBody(ref("PredictionResponse"))["content"]},
				"202": map[string]any{"description": "Started (Prefer: respond-async)"},
				"409": map[string]any{"description": "Every prediction slot is busy"},
				"422": map[string]any{"description": "The input is invalid"},
			},
		}
	}
	output := map[string]any{"type": "string", "format": "uri", "description": "The output file as a data: URI"}
	doc := map[string]any{
		"openapi": "3.0.2",
		"info":    map[string]any{"title": "Cog", "version": "0.1.0", "description": m.ep.Summary + " (" + m.ep.Path() + "), reference engine"},
		"paths": map[string]any{
			p + "/health-check":                       map[string]any{"get": map[string]any{"summary": "Healthcheck", "operationId": "healthcheck", "responses": map[string]any{"200": map[string]any{"description": "READY or BUSY"}}}},
			p + "/predictions":                        map[string]any{"post": predict("predict", prefer)},
			p + "/predictions/{prediction_id}":        map[string]any{"put": predict("predict_idempotent", id, prefer)},
			p + "/predictions/{prediction_id}/cancel": map[string]any{"post": map[string]any{"summary": "Cancel", "operationId": "cancel", "parameters": []any{id}, "responses": map[string]any{"200": map[string]any{"description": "Cancelled"}, "404": map[string]any{"description": "No such running prediction"}}}},
		},
		"components": map[string]any{"schemas": map[string]any{
			"Input":        openAPI30Input(m.ep.Schema()),
			"Output":       map[string]any{"anyOf": []any{output, map[string]any{"type": "array", "items": output}}},
			"Status":       map[string]any{"type": "string", "enum": []string{statusStarting, statusProcessing, statusSucceeded, statusCanceled, statusFailed}},
			"WebhookEvent": map[string]any{"type": "string", "enum": []string{eventStart, eventOutput, eventLogs, eventCompleted}},
			"PredictionRequest": map[string]any{"type": "object", "properties": map[string]any{
				"id":                    map[string]any{"type": "string"},
				"input":                 ref("Input"),
				"webhook":               map[string]any{"type": "string", "format": "uri"},
				"webhook_events_filter": map[string]any{"type": "array", "items": ref("WebhookEvent")},
			}},
			"PredictionResponse": map[string]any{"type": "object", "properties": map[string]any{
				"id":           map[string]any{"type": "string"},
				"status":       ref("Status"),
				"input":        ref("Input"),
				"output":       ref("Output"),
				"error":        map[string]any{"type": "string"},
				"logs":         map[string]any{"type": "string"},
				"metrics":      map[string]any{"type": "object"},
				"created_at":   map[string]any{"type": "string", "format": "date-time"},
				"started_at":   map[string]any{"type": "string", "format": "date-time"},
				"completed_at": map[string]any{"type": "string", "format": "date-time"},
			}},
		}},
	}
	writeJSON(w, http.StatusOK, doc)
}

// openAPI30Input is an endpoint's request schema as Cog's OpenAPI 3.0
// document can carry it: without the root allOf of if/then conditions
// across fields, keywords 3.0's Schema Object does not have (the fields'
// descriptions say the same rules, and the server checks them).
func openAPI30Input(schema json.RawMessage) json.RawMessage {
	var root map[string]json.RawMessage
	if json.Unmarshal(schema, &root) != nil {
		return schema
	}
	delete(root, "allOf")
	out, err := json.Marshal(root)
	if err != nil {
		return schema
	}
	return out
}
