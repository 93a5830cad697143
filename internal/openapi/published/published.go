// Package published serves the OpenAPI document as it was built before
// deploy. It stands apart from package openapi, which builds the document
// from the catalog, so that the openapi function links neither the catalog
// nor the schema validator.
package published

import (
	"bytes"
	_ "embed"
	"encoding/json"
)

// The document GET /openapi.json serves is built before deploy, not at the
// function's init: `go generate ./internal/openapi/...` writes published.json
// with openapi.Build, and the openapi function only puts its base URL in.
// Building it at init made that function's cold start 2.5x a bare
// function's. openapi's TestPublishedDocumentIsCurrent fails when
// published.json is stale.
//
//go:generate go run ../gen
//go:embed published.json
var published []byte

// BaseURL is the base URL published.json is built with; Document puts the
// real one in its place.
const BaseURL = "https://base-url.invalid"

// Document is the OpenAPI document of the API served at baseURL: exactly
// what openapi.Build makes for it.
func Document(baseURL string) []byte {
	return bytes.ReplaceAll(published, jsonText(BaseURL), jsonText(baseURL))
}

// jsonText is s as Build's encoder writes it inside a JSON string.
func jsonText(s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	return b[1 : len(b)-1]
}
