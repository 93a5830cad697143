package imagetype_test

import (
	"testing"

	"genjobs/internal/imagetype"
)

func TestSniff(t *testing.T) {
	cases := []struct {
		name, data, want string
	}{
		{"png", "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", imagetype.PNG},
		{"jpeg", "\xff\xd8\xff\xe0\x00\x10JFIF\x00", imagetype.JPEG},
		{"jpeg exif", "\xff\xd8\xff\xe1\x00\x10Exif\x00", imagetype.JPEG},
		{"webp lossy", "RIFF\x24\x00\x00\x00WEBPVP8 \x18\x00\x00\x00", imagetype.WebP},
		{"webp lossless", "RIFF\x24\x00\x00\x00WEBPVP8L\x18\x00\x00\x00", imagetype.WebP},
		{"webp extended", "RIFF\x24\x00\x00\x00WEBPVP8X\x0a\x00\x00\x00", imagetype.WebP},
		{"empty", "", ""},
		{"truncated png", "\x89PNG\r\n", ""},
		{"jpeg soi only", "\xff\xd8", ""},
		{"gif", "GIF89a\x01\x00\x01\x00", ""},
		{"riff wave", "RIFF\x24\x00\x00\x00WAVEfmt \x10\x00\x00\x00", ""},
		{"webp without a chunk", "RIFF\x24\x00\x00\x00WEBP", ""},
		{"webp truncated chunk name", "RIFF\x24\x00\x00\x00WEBPVP8", ""},
		{"webp odd chunk", "RIFF\x24\x00\x00\x00WEBPVP8Q\x18\x00\x00\x00", ""},
		{"webp other chunk", "RIFF\x24\x00\x00\x00WEBPALPH\x18\x00\x00\x00", ""},
		{"json", `{"image":"x"}`, ""},
		{"svg", `<svg xmlns="http://www.w3.org/2000/svg"/>`, ""},
		{"bmp", "BM\x3e\x00\x00\x00\x00\x00", ""},
	}
	for _, c := range cases {
		got, ok := imagetype.Sniff([]byte(c.data))
		if got != c.want || ok != (c.want != "") {
			t.Errorf("Sniff(%s) = %q, %v; want %q", c.name, got, ok, c.want)
		}
	}
}
