// Package imagetype tells which image type a file holds from its first
// bytes. It is the one place that says which bytes count as a PNG, a JPEG or
// a WebP image: uploads, fetched inputs and the engines all ask it, so a
// file one of them accepts is never refused by another for its type.
package imagetype

import "bytes"

// The image types the service accepts, as media types.
const (
	PNG  = "image/png"
	JPEG = "image/jpeg"
	WebP = "image/webp"
)

// Sniff tells the image type of data from its signature: PNG, JPEG or WebP,
// or ok false for anything else. It reads signatures only; whether the rest
// decodes is the decoder's concern.
//
// A WebP file is a RIFF container of form WEBP whose first chunk is "VP8 "
// (lossy), "VP8L" (lossless) or "VP8X" (extended): the only three a WebP
// decoder reads, so "RIFF....WEBP" alone, or with another chunk, is not one.
func Sniff(data []byte) (contentType string, ok bool) {
	switch {
	case bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")):
		return PNG, true
	case bytes.HasPrefix(data, []byte("\xff\xd8\xff")): // SOI, then a marker
		return JPEG, true
	case len(data) >= 16 && string(data[:4]) == "RIFF" && string(data[8:15]) == "WEBPVP8":
		if c := data[15]; c == ' ' || c == 'L' || c == 'X' {
			return WebP, true
		}
	}
	return "", false
}
