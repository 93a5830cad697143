package stripenc

import (
	"bytes"
	"fmt"
	"hash/adler32"
	"image"
	"image/png"
	"testing"
)

// image/png (which checks every CRC and the zlib checksum) decodes the
// joined strips to exactly the pixels filled, alpha included.
func TestPNGDecodesToThePixelsFilled(t *testing.T) {
	alphas := map[string]func(x, y int) uint8{
		"opaque":      nil,
		"transparent": func(x, y int) uint8 { return 0 },
		"gradient":    func(x, y int) uint8 { return uint8(x*7 + y*3) },
	}
	for _, tc := range []struct {
		width, height, workers int
		alpha                  string
	}{
		{1, 1, 0, "opaque"}, // workers below 1 count as 1
		{17, 33, 8, "gradient"},
		{40, 5000, 3, "gradient"},    // strips of 1648 rows, the last one partial
		{1024, 276, 1, "opaque"},     // 5 strips, the last of 20 rows; the ring of last rows (3 slots) wraps
		{300, 700, 1, "transparent"}, // colour kept under zero alpha
	} {
		t.Run(fmt.Sprintf("%dx%d_%s_w%d", tc.width, tc.height, tc.alpha, tc.workers), func(t *testing.T) {
			fill := photoNRGBA(tc.width, tc.height, alphas[tc.alpha])
			var got bytes.Buffer
			if err := PNG(&got, tc.width, tc.height, tc.workers, fill); err != nil {
				t.Fatal(err)
			}
			m, err := png.Decode(bytes.NewReader(got.Bytes()))
			if err != nil {
				t.Fatalf("image/png cannot decode it: %v", err)
			}
			nrgba, ok := m.(*image.NRGBA)
			if !ok {
				t.Fatalf("decoded as %T, want *image.NRGBA (8-bit RGBA)", m)
			}
			want := wholeNRGBA(tc.width, tc.height, fill)
			if nrgba.Rect != want.Rect {
				t.Fatalf("decoded %v, want %v", nrgba.Rect, want.Rect)
			}
			if !bytes.Equal(nrgba.Pix, want.Pix) {
				t.Error("the decoded pixels differ from the ones filled")
			}
		})
	}
}

func TestAdler32Combine(t *testing.T) {
	data := make([]byte, 200_000)
	for i := range data {
		data[i] = byte(i*i>>3) | 0x80
	}
	for _, cut := range []int{0, 1, 5552, 65521, 65522, 150_000, len(data)} {
		a, b := adler32.Checksum(data[:cut]), adler32.Checksum(data[cut:])
		if got, want := adler32Combine(a, b, int64(len(data)-cut)), adler32.Checksum(data); got != want {
			t.Errorf("cut at %d: %08x, want %08x", cut, got, want)
		}
	}
}

// Strips deflated apart cost little: on a photo-like image the file is
// within 10% of image/png's at its default level (which, for an opaque
// image, even drops the alpha channel that this encoder always writes).
func TestPNGSizeNearTheStandardLibrarys(t *testing.T) {
	const side = 256
	fill := photoNRGBA(side, side, nil)
	var got, want bytes.Buffer
	if err := PNG(&got, side, side, 2, fill); err != nil {
		t.Fatal(err)
	}
	if err := png.Encode(&want, wholeNRGBA(side, side, fill)); err != nil {
		t.Fatal(err)
	}
	if got.Len() > want.Len()*11/10 {
		t.Errorf("%d bytes, over 110%% of image/png's %d", got.Len(), want.Len())
	}
}

// Every candidate filtering the row filter computes undoes, by RFC 2083's
// own definitions, to the row; and the one it returns has the least sum.
func TestRowFilterCandidatesUndoToTheRow(t *testing.T) {
	const rowBytes = 4 * 37
	src := wholeNRGBA(37, 3, photoNRGBA(37, 3, func(x, y int) uint8 { return uint8(x * y * 40) }))
	zeros := make([]byte, rowBytes)
	for y, prev := range [][]byte{zeros, src.Pix[:rowBytes], src.Pix[rowBytes : 2*rowBytes]} {
		cur := src.Pix[(y)*rowBytes:][:rowBytes]
		f := newRowFilter(rowBytes)
		best := f.filter(cur, prev)
		copy(f.cand[filterNone][1:], cur) // filled only when chosen
		least := -1
		for k, cand := range f.cand {
			if int(cand[0]) != k {
				t.Fatalf("candidate %d has type byte %d", k, cand[0])
			}
			if got := unfilter(cand, prev); !bytes.Equal(got, cur) {
				t.Errorf("row %d: filter %d does not undo to the row", y, k)
			}
			s := 0
			for _, v := range cand[1:] {
				s += absSigned(v)
			}
			if least < 0 || s < least {
				least = s
			}
		}
		s := 0
		for _, v := range best[1:] {
			s += absSigned(v)
		}
		if s != least {
			t.Errorf("row %d: chose filter %d with sum %d, the least is %d", y, best[0], s, least)
		}
	}
}

// unfilter is RFC 2083 section 6's reconstruction, byte by byte.
func unfilter(filtered, prev []byte) []byte {
	out := make([]byte, len(filtered)-1)
	for i, x := range filtered[1:] {
		var a, b, c int
		if i >= bpp {
			a, c = int(out[i-bpp]), int(prev[i-bpp])
		}
		b = int(prev[i])
		switch filtered[0] {
		case filterNone:
			out[i] = x
		case filterSub:
			out[i] = x + byte(a)
		case filterUp:
			out[i] = x + byte(b)
		case filterAverage:
			out[i] = x + byte((a+b)/2)
		case filterPaeth:
			p := a + b - c
			pa, pb, pc := abs(p-a), abs(p-b), abs(p-c)
			switch {
			case pa <= pb && pa <= pc:
				out[i] = x + byte(a)
			case pb <= pc:
				out[i] = x + byte(b)
			default:
				out[i] = x + byte(c)
			}
		}
	}
	return out
}
