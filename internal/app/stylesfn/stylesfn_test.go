package stylesfn_test

import (
	"strings"
	"testing"

	"genjobs/internal/app"
	"genjobs/internal/app/stylesfn"
)

func TestStylesChecksAnAppURLWhenSet(t *testing.T) {
	for appURL, want := range map[string]string{
		"":                               "",
		"app.example.com":                "APP_URL must be an absolute http(s) URL",
		"ftp://app.example.com":          "APP_URL must be an absolute http(s) URL",
		"https://app.example.com/?a=1":   "APP_URL must be an absolute http(s) URL",
		"https://u:p@app.example.com":    "APP_URL must be an absolute http(s) URL",
		"https://app.example.com":        "",
		"http://127.0.0.1:3000/app":      "",
		"https://example.com/genjobs/ui": "",
	} {
		d, err := app.Config(func(k string) string {
			return map[string]string{"TABLE_NAME": "t", "APP_URL": appURL}[k]
		})
		if err != nil {
			t.Fatal(err)
		}
		_, err = app.Function{HTTP: stylesfn.Build}.Handler(d)
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("APP_URL %q: %v; want %q", appURL, err, want)
		}
	}
	d, _ := app.Config(func(k string) string { return map[string]string{"APP_URL": "https://app.example.com/"}[k] })
	if d.API.AppURL != "https://app.example.com" {
		t.Errorf("AppURL %q; a trailing slash is dropped", d.API.AppURL)
	}
}
