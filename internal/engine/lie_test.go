package engine_test

import (
	"bytes"
	"image"
	"image/jpeg"
	"testing"

	"genjobs/internal/engine"
	"genjobs/internal/engine/enginetest"
)

// An honest image passes the check: the bound is the data's, not a guess.
func TestHonestImagesAreNotTooShort(t *testing.T) {
	var b bytes.Buffer
	if err := jpeg.Encode(&b, image.NewGray(image.Rect(0, 0, 2000, 1000)), &jpeg.Options{Quality: 1}); err != nil {
		t.Fatal(err)
	}
	if engine.TooShort(b.Bytes()) {
		t.Errorf("a flat 2000 x 1000 JPEG of %d bytes judged too short", b.Len())
	}
	if p := enginetest.LyingPNG(4, 4); engine.TooShort(p) {
		t.Error("a 4 x 4 PNG with 16 bytes of data judged too short")
	}
}
