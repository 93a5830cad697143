package catalog

import (
	"encoding/base64"
	"net/url"
	"slices"
	"strings"
	"unicode"
)

// refFormat is a gojsonschema format checker for a media reference: an
// absolute http(s) URL, or a base64 data URI of one of its media types. An
// asset URL of the caller's workspace is an http(s) URL here; whether it
// belongs to the caller is the HTTP layer's question. The data URI's bytes are
// only checked to be base64: whether they decode as the media is the worker's
// (a failed job with invalid_input).
type refFormat struct {
	mediaTypes []string // accepted after "data:", in the order messages name them
	noun       string   // what the message calls the media, e.g. "a png, jpeg or webp image"
}

// refFormats are the custom formats the schemas use, by name.
var refFormats = map[string]*refFormat{
	"image-ref": {
		mediaTypes: []string{"image/png", "image/jpeg", "image/webp"},
		noun:       "a png, jpeg or webp image",
	},
	"video-ref": {
		mediaTypes: []string{"video/mp4", "video/webm", "video/quicktime"},
		noun:       "an mp4, webm or quicktime video",
	},
	"audio-ref": {
		mediaTypes: []string{"audio/mpeg", "audio/mp4", "audio/wav", "audio/ogg", "audio/webm", "audio/flac"},
		noun:       "mpeg, mp4, wav, ogg, webm or flac audio",
	},
}

// IsFormat implements gojsonschema.FormatChecker. Values other than strings
// pass: the type keyword speaks for them.
func (f *refFormat) IsFormat(input any) bool {
	s, ok := input.(string)
	return !ok || f.valid(s)
}

func (f *refFormat) valid(s string) bool {
	if strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return false
	}
	if rest, ok := strings.CutPrefix(s, "data:"); ok {
		mediaType, payload, ok := strings.Cut(rest, ";base64,")
		if !ok || payload == "" || !slices.Contains(f.mediaTypes, mediaType) {
			return false
		}
		_, err := base64.StdEncoding.Strict().DecodeString(payload)
		return err == nil
	}
	return validHTTPURL(s)
}

// message is the rule a value of this format broke, after "<field> must be ".
func (f *refFormat) message() string {
	return "an http(s) URL or a base64 data URI of " + f.noun
}

// validHTTPURL reports whether s is an absolute http or https URL with a host
// and no user info (user info in a URL is a phishing device, never needed here).
func validHTTPURL(s string) bool {
	u, err := url.Parse(s)
	if err != nil || u.Opaque != "" || u.User != nil || u.Hostname() == "" {
		return false
	}
	return u.Scheme == "http" || u.Scheme == "https" // url.Parse lowercases the scheme
}
