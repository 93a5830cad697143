package catalog

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// The rules across fields that a JSON Schema cannot say. Each runs after the
// schema has passed and numbers are canonical, and returns a reason or "".

// MaxOutputPixels is 4.1's "output up to 22K": at most 22000 x 22000 pixels
// (docs/api.md, "Choices per model"), whatever the shape. The enhance engine streams, so the
// worker's memory does not bound it; engine.MaxOutputPixels is the same
// (a test keeps the two in step).
const MaxOutputPixels = 22000 * 22000

// WebP's own format caps a side at 16383 pixels, and the pure-Go encoder
// holds about 50 bytes per pixel while it works: WebP output is capped at
// 8192 x 8192 pixels (engine.MaxWebPSide and engine.MaxWebPPixels; a test
// keeps the two in step).
const (
	MaxWebPSide   = 16383
	MaxWebPPixels = 8192 * 8192
)

func checkOutputPixels(p map[string]any, name namer) string {
	w, h := integer(p["width"]), integer(p["height"])
	if w*h > MaxOutputPixels {
		return fmt.Sprintf("%s x %s is %d pixels; at most %d (22000 x 22000) are allowed",
			name.name("width"), name.name("height"), w*h, MaxOutputPixels)
	}
	if p["output_format"] == "webp" && (w > MaxWebPSide || h > MaxWebPSide || w*h > MaxWebPPixels) {
		return fmt.Sprintf("output_format webp allows at most %d pixels a side and %d (8192 x 8192) in all; use png or jpg for %d x %d",
			MaxWebPSide, MaxWebPPixels, w, h)
	}
	return ""
}

// checkAspectRatio holds 4.6's width:height to aspect_ratio within 2%, when the
// body gives aspect_ratio.
func checkAspectRatio(p map[string]any, name namer) string {
	ratio, ok := p["aspect_ratio"].(string)
	if !ok || matchesRatio(p, ratio) {
		return ""
	}
	return fmt.Sprintf("%s:%s %d:%d does not match %s %s within 2%%",
		name.name("width"), name.name("height"), integer(p["width"]), integer(p["height"]), name.name("aspect_ratio"), ratio)
}

// deriveAspectRatio gives 4.6's aspect_ratio its default: 16:9 (docs/api.md,
// "Choices per model") when width:height matches it, 9:16 when that matches, and none otherwise.
// A fixed 16:9 would store a request the rule above refuses (a square frame),
// so the stored parameters would contradict themselves.
func deriveAspectRatio(p map[string]any) {
	if _, ok := p["aspect_ratio"]; ok {
		return
	}
	for _, ratio := range []string{"16:9", "9:16"} {
		if matchesRatio(p, ratio) {
			p["aspect_ratio"] = ratio
			return
		}
	}
}

// matchesRatio reports whether width:height is within 2% of ratio ("16:9").
func matchesRatio(p map[string]any, ratio string) bool {
	rw, rh, _ := strings.Cut(ratio, ":")
	tw, _ := strconv.ParseInt(rw, 10, 64)
	th, _ := strconv.ParseInt(rh, 10, 64)
	w, h := integer(p["width"]), integer(p["height"])
	// |w/h - tw/th| <= 2% of tw/th, in integers: |w*th - h*tw| * 50 <= h*tw.
	diff := w*th - h*tw
	if diff < 0 {
		diff = -diff
	}
	return diff*50 <= h*tw
}

// deriveMode gives 4.7's mode its default, which depends on image_urls.
func deriveMode(p map[string]any) {
	if _, ok := p["mode"]; ok {
		return
	}
	if images, _ := p["image_urls"].([]any); len(images) > 0 {
		p["mode"] = "image"
	} else {
		p["mode"] = "text"
	}
}

// checkMode refuses a mode that contradicts image_urls (4.7).
func checkMode(p map[string]any, name namer) string {
	images, _ := p["image_urls"].([]any)
	switch p["mode"] {
	case "image":
		if len(images) == 0 {
			return name.name("mode") + " image needs at least one entry in " + name.name("image_urls")
		}
	case "text":
		if len(images) > 0 {
			return name.name("mode") + " text takes no " + name.name("image_urls") + "; omit it or pass an empty array"
		}
	}
	return ""
}

// integer reads a canonical integer; the schema has made sure it is one.
func integer(v any) int64 {
	n, _ := v.(json.Number).Int64()
	return n
}
