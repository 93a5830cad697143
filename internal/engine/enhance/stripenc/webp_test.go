package stripenc

import (
	"bytes"
	"image"
	"runtime/debug"
	"testing"

	"golang.org/x/image/webp"
)

// The lossless WebP decodes to exactly the pixels filled, in several strips.
func TestWebPDecodesToThePixelsFilled(t *testing.T) {
	const width, height = 300, 700 // strips of 224 rows, the last of 28
	fill := photoNRGBA(width, height, func(x, y int) uint8 { return uint8(x + 2*y) })
	var got bytes.Buffer
	if err := WebP(&got, width, height, 3, fill); err != nil {
		t.Fatal(err)
	}
	m, err := webp.Decode(bytes.NewReader(got.Bytes()))
	if err != nil {
		t.Fatalf("golang.org/x/image/webp cannot decode it: %v", err)
	}
	nrgba, ok := m.(*image.NRGBA)
	if !ok {
		t.Fatalf("decoded as %T, want *image.NRGBA", m)
	}
	want := wholeNRGBA(width, height, fill)
	if nrgba.Rect != want.Rect || !bytes.Equal(nrgba.Pix, want.Pix) {
		t.Errorf("decoded %v, not the %v pixels filled", nrgba.Rect, want.Rect)
	}
}

func TestSizesOutOfRangeAreRefused(t *testing.T) {
	fill := func(*image.NRGBA) error { t.Error("filled"); return nil }
	fillRGBA := func(*image.RGBA) error { t.Error("filled"); return nil }
	for name, err := range map[string]error{
		"jpeg 0 wide":     JPEG(&bytes.Buffer{}, 0, 10, 90, 1, fillRGBA),
		"jpeg 65536 tall": JPEG(&bytes.Buffer{}, 10, 65536, 90, 1, fillRGBA),
		"png 0 tall":      PNG(&bytes.Buffer{}, 10, 0, 1, fill),
		"webp 16384 wide": WebP(&bytes.Buffer{}, 16384, 1, 1, fill),
		"webp -1 tall":    WebP(&bytes.Buffer{}, 1, -1, 1, fill),
	} {
		if err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// Overlapping encodes lower the process's memory limit while any runs and
// put back exactly the limit from before when the last ends, whatever the
// order they end in; a limit the process already had is never raised.
func TestWebPEncodesPutTheMemoryLimitBack(t *testing.T) {
	const before = 1 << 40
	old := debug.SetMemoryLimit(before)
	defer debug.SetMemoryLimit(old)

	first := limitMemory(64 << 20)
	during := debug.SetMemoryLimit(-1)
	if during <= 0 || during >= before {
		t.Fatalf("limit during an encode = %d, want one below %d", during, before)
	}
	second := limitMemory(64 << 20)
	first() // the first to start ends first
	if got := debug.SetMemoryLimit(-1); got >= before {
		t.Errorf("limit with one encode left = %d, want one below %d", got, before)
	}
	second()
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("limit after both = %d, want %d back", got, before)
	}

	debug.SetMemoryLimit(1 << 20) // a limit set by the operator (GOMEMLIMIT)
	limitMemory(1 << 30)()
	if got := debug.SetMemoryLimit(-1); got != 1<<20 {
		t.Errorf("limit after an encode under GOMEMLIMIT = %d, want %d", got, 1<<20)
	}
}
