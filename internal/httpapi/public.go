package httpapi

import (
	"net/http"
	"sync"
)

// OpenAPI serves the public OpenAPI document. With a configured base URL the
// document is built once, at init; without one, once per domain the API is
// reached at (the execute-api domain or a custom domain), since the template
// cannot pass the API's own URL to its functions.
func OpenAPI(build func(baseURL string) ([]byte, error), baseURL string) (*http.ServeMux, error) {
	var docs sync.Map // base URL -> []byte
	if baseURL != "" {
		doc, err := build(baseURL)
		if err != nil {
			return nil, err
		}
		docs.Store(baseURL, doc)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /openapi.json", func(w http.ResponseWriter, r *http.Request) {
		base := publicBaseURL(baseURL, r)
		doc, ok := docs.Load(base)
		if !ok {
			b, err := build(base)
			if err != nil {
				internalError(w, r, "build OpenAPI document", err)
				return
			}
			doc, _ = docs.LoadOrStore(base, b)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "public, max-age=300")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(doc.([]byte))
	})
	mux.Handle("/", NotFound())
	return mux, nil
}

// publicBaseURL is the API's public address: the configured one, or else
// https:// and the domain the request reached. The api-proxy builds the
// request's URL, and so its Host, from API Gateway's
// requestContext.domainName: the execute-api domain or a custom domain.
func publicBaseURL(configured string, r *http.Request) string {
	if configured != "" {
		return configured
	}
	return "https://" + r.Host
}

// AppPath is where the web application (the console) is served on the API's
// own domain: template.yaml routes /app and /app/{proxy+} to it.
const AppPath = "/app"

// AppURL is the web application's public address, {app_url}: the configured
// one (APP_URL, the template's AppUrl), or else the API's own domain the
// request reached and AppPath (https://{api domain}/app). Stripe's return
// URLs, share links and avatars are made from it, so that an AppUrl left
// empty sends payers and link holders back to the deployment that serves
// them.
func AppURL(configured string, r *http.Request) string {
	if configured != "" {
		return configured
	}
	return publicBaseURL("", r) + AppPath
}
