package catalog

import (
	"time"
)

// The camelCase aliases (docs/api.md, "Body rules") are accepted, renamed and reported (Deprecation
// and Sunset headers) until aliasSunset, and refused from that instant on. The
// spec gives no date of announcement; we date the deprecation six months before
// the sunset, the notice we give for every removal, so the Deprecation header
// always carries a date already past by launch.
var (
	aliasDeprecated = time.Date(2025, time.December, 19, 0, 0, 0, 0, time.UTC)
	aliasSunset     = time.Date(2026, time.June, 19, 0, 0, 0, 0, time.UTC)
)

// aliasReplacements maps each alias to the field that replaces it.
var aliasReplacements = map[string]string{
	"imageUrl":        "image_url",
	"startImage":      "start_image",
	"aspectRatio":     "aspect_ratio",
	"endImage":        "end_image",
	"referenceImages": "reference_images",
	"referenceVideos": "reference_videos",
	"referenceAudios": "reference_audios",
	"styleImages":     "style_images",
}

// generateAudio is the deprecated, ignored field of model-b-fast (docs/api.md,
// "Body rules"): a boolean
// accepted and dropped until its sunset, refused from then on. Deprecated six
// months before, as for the aliases.
var generateAudio = Deprecation{
	Field:      "generate_audio",
	Deprecated: time.Date(2026, time.April, 30, 0, 0, 0, 0, time.UTC),
	Sunset:     time.Date(2026, time.October, 30, 0, 0, 0, 0, time.UTC),
}

func aliases(names ...string) []Deprecation {
	out := make([]Deprecation, len(names))
	for i, name := range names {
		repl, ok := aliasReplacements[name]
		if !ok {
			panic("catalog: unknown alias " + name)
		}
		out[i] = Deprecation{Field: name, Replacement: repl, Deprecated: aliasDeprecated, Sunset: aliasSunset}
	}
	return out
}

// applyDeprecations renames the aliases params holds and drops ignored fields,
// as of now. It returns the deprecations used and, for each renamed field, the
// name the client wrote, so later messages speak the client's words; or the
// refusal of the first refused field by name.
func (e *Endpoint) applyDeprecations(params map[string]any, now time.Time) ([]Deprecation, map[string]string, string) {
	var used []Deprecation
	written := map[string]string{}
	for _, d := range e.deprecated { // sorted by Field: the first refusal is the one to report
		v, ok := params[d.Field]
		if !ok {
			continue
		}
		day := d.Sunset.Format(time.DateOnly)
		switch {
		case d.Replacement == "" && !now.Before(d.Sunset):
			return nil, nil, d.Field + " is no longer accepted since " + day + "; remove it"
		case !now.Before(d.Sunset):
			return nil, nil, d.Field + " was removed on " + day + "; use " + d.Replacement
		case d.Replacement == "":
			if _, ok := v.(bool); !ok {
				return nil, nil, d.Field + " must be a boolean"
			}
			delete(params, d.Field)
		default:
			if _, both := params[d.Replacement]; both {
				return nil, nil, d.Field + " and " + d.Replacement + " were both given; use " + d.Replacement
			}
			delete(params, d.Field)
			params[d.Replacement] = v
			written[d.Replacement] = d.Field
		}
		used = append(used, d)
	}
	return used, written, ""
}
