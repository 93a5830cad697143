package catalog_test

import (
	"strings"
	"testing"
)

func TestImageReferences(t *testing.T) {
	e := endpoint(t, newCatalog(t), "standard-enhance")
	good := []string{
		"https://example.com/a.png",
		"http://example.com",
		"http://127.0.0.1:3000/assets/0194b3a0-0000-7000-8000-000000000000",
		"HTTPS://EXAMPLE.COM/A.PNG",
		"https://[::1]:8443/a.png",
		"https://example.com/a.png?sig=abc%20def&x=1#frag",
		"https://bücher.example/a.png",
		"data:image/png;base64,iVBORw0KGgo=",
		"data:image/jpeg;base64,/9j/4A==",
		"data:image/webp;base64,UklGRg==",
	}
	bad := []string{
		"",
		"example.com/a.png",
		"/assets/abc",
		"ftp://example.com/a.png",
		"file:///etc/passwd",
		"javascript:alert(1)",
		"http:example.com",
		"https://",
		"https:///a.png",
		"https://:443/a.png",
		"https://user:pw@example.com/a.png",
		"https://user@example.com/a.png",
		"https://example.com/a b.png",
		"https://example.com/a\tb.png",
		" https://example.com/a.png",
		"https://example.com/a.png\n",
		"https://example.com/\u00a0",
		"https://exa mple.com/",
		"https://example.com:port/",
		"data:image/gif;base64,R0lGODlh",
		"data:image/svg+xml;base64,PHN2Zz4=",
		"data:image/png;base64,",
		"data:image/png;base64,***",
		"data:image/png;base64,iVBORw0KGgo",
		"data:image/png;base64,iVBO Rw0K",
		"data:image/png,iVBORw0KGgo=",
		"data:image/PNG;base64,iVBORw0KGgo=",
		"data:;base64,iVBORw0KGgo=",
		"DATA:image/png;base64,iVBORw0KGgo=",
	}
	const rule = "image_url must be an http(s) URL or a base64 data URI of a png, jpeg or webp image"
	for _, s := range good {
		accept(t, e, edit(minimal["standard-enhance"], "image_url", s), beforeSunset)
	}
	for _, s := range bad {
		if got := reason(t, e, edit(minimal["standard-enhance"], "image_url", s), beforeSunset); got != rule {
			t.Errorf("%q: got %q", s, got)
		}
	}
	// A data URI counts against the same 1024 characters.
	long := "data:image/png;base64," + strings.Repeat("A", 1000) // 1022 characters
	accept(t, e, edit(minimal["standard-enhance"], "image_url", long), beforeSunset)
	if got := reason(t, e, edit(minimal["standard-enhance"], "image_url", long+"AAAA"), beforeSunset); got != "image_url must be at most 1024 characters" {
		t.Errorf("got %q", got)
	}
}

func TestVideoAndAudioReferences(t *testing.T) {
	e := endpoint(t, newCatalog(t), "model-b-fast")
	base := minimal["model-b-fast"]
	for _, tc := range []struct {
		field string
		good  []string
		bad   []string
		rule  string
	}{
		{
			field: "reference_videos",
			good:  []string{"https://example.com/v.mp4", "data:video/mp4;base64,AAAA", "data:video/webm;base64,GkXf", "data:video/quicktime;base64,AAAA"},
			bad:   []string{"data:image/png;base64,AAAA", "data:audio/mpeg;base64,AAAA", "data:video/avi;base64,AAAA", "rtmp://example.com/live"},
			rule:  "must be an http(s) URL or a base64 data URI of an mp4, webm or quicktime video",
		},
		{
			field: "reference_audios",
			good: []string{"https://example.com/a.mp3", "data:audio/mpeg;base64,SUQz", "data:audio/mp4;base64,AAAA", "data:audio/wav;base64,UklG",
				"data:audio/ogg;base64,T2dn", "data:audio/webm;base64,GkXf", "data:audio/flac;base64,ZkxhQw=="},
			bad:  []string{"data:video/mp4;base64,AAAA", "data:audio/midi;base64,AAAA", "data:audio/mpeg;base64,SUQ"},
			rule: "must be an http(s) URL or a base64 data URI of mpeg, mp4, wav, ogg, webm or flac audio",
		},
	} {
		for _, s := range tc.good {
			accept(t, e, edit(base, tc.field, []any{s}), beforeSunset)
		}
		for _, s := range tc.bad {
			if got := reason(t, e, edit(base, tc.field, []any{s}), beforeSunset); got != tc.field+"[0] "+tc.rule {
				t.Errorf("%s %q: got %q", tc.field, s, got)
			}
		}
	}
}
