package catalog

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// The rules across fields that a JSON Schema cannot say. Each runs after the
// schema has passed and numbers are canonical, and returns a reason or "".

// maxOutputPixels is 4.1's "output up to 22K": at most 22000 x 22000 pixels
// (API-DECISIONS 5), whatever the shape.
const maxOutputPixels = 22000 * 22000

func checkOutputPixels(p map[string]any, name namer) string {
	w, h := integer(p["width"]), integer(p["height"])
	if w*h <= maxOutputPixels {
		return ""
	}
	return fmt.Sprintf("%s x %s is %d pixels; at most %d (22000 x 22000) are allowed",
		name.name("width"), name.name("height"), w*h, maxOutputPixels)
}

// checkAspectRatio holds 4.6's width:height to aspect_ratio within 2%, when the
// body gives aspect_ratio.
func checkAspectRatio(p map[string]any, name namer) string {
	ratio, ok := p["aspect_ratio"].(string)
	if !ok {
		return ""
	}
	rw, rh, _ := strings.Cut(ratio, ":")
	tw, _ := strconv.ParseInt(rw, 10, 64)
	th, _ := strconv.ParseInt(rh, 10, 64)
	w, h := integer(p["width"]), integer(p["height"])
	// |w/h - tw/th| <= 2% of tw/th, in integers: |w*th - h*tw| * 50 <= h*tw.
	diff := w*th - h*tw
	if diff < 0 {
		diff = -diff
	}
	if diff*50 <= h*tw {
		return ""
	}
	return fmt.Sprintf("%s:%s %d:%d does not match %s %s within 2%%",
		name.name("width"), name.name("height"), w, h, name.name("aspect_ratio"), ratio)
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
