package stripenc

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"image"
	"image/jpeg"
	"io"
	"sync"
	"testing"
)

// The strips joined by restart markers decode to exactly the pixels of
// image/jpeg's encoding of the whole image, at every size that exercises an
// edge: one pixel, sides not a multiple of 16, a last strip of a few rows,
// narrow images whose strips are tall, and rows of many MCUs.
func TestJPEGDecodesAsTheWholeImageEncoding(t *testing.T) {
	for _, tc := range []struct{ width, height, quality, workers int }{
		{1, 1, 90, 0},   // workers below 1 count as 1
		{17, 33, 90, 8}, // more workers than strips
		{16, 64, 75, 2},
		{40, 5000, 90, 3},   // strips of 1648 rows, the last one partial
		{1031, 300, 90, 2},  // 65 MCUs a row, a last strip of 44 rows
		{4100, 70, 50, 3},   // 257 MCUs a row, a last strip of 6 rows
		{200, 1000, 100, 1}, // one worker, quality 100
	} {
		t.Run(fmt.Sprintf("%dx%d_q%d_w%d", tc.width, tc.height, tc.quality, tc.workers), func(t *testing.T) {
			fill := photoRGBA(tc.width, tc.height)
			var got bytes.Buffer
			if err := JPEG(&got, tc.width, tc.height, tc.quality, tc.workers, fill); err != nil {
				t.Fatal(err)
			}
			var want bytes.Buffer
			if err := jpeg.Encode(&want, wholeRGBA(tc.width, tc.height, fill), &jpeg.Options{Quality: tc.quality}); err != nil {
				t.Fatal(err)
			}
			gotImg, err := jpeg.Decode(bytes.NewReader(got.Bytes()))
			if err != nil {
				t.Fatalf("image/jpeg cannot decode the joined strips: %v", err)
			}
			wantImg, err := jpeg.Decode(bytes.NewReader(want.Bytes()))
			if err != nil {
				t.Fatal(err)
			}
			g, w := gotImg.(*image.YCbCr), wantImg.(*image.YCbCr)
			if g.Rect != w.Rect || g.SubsampleRatio != w.SubsampleRatio {
				t.Fatalf("decoded as %v %v, want %v %v", g.Rect, g.SubsampleRatio, w.Rect, w.SubsampleRatio)
			}
			for _, p := range []struct {
				name      string
				got, want []byte
			}{{"Y", g.Y, w.Y}, {"Cb", g.Cb, w.Cb}, {"Cr", g.Cr, w.Cr}} {
				if !bytes.Equal(p.got, p.want) {
					t.Errorf("the %s plane differs from the whole-image encoding's", p.name)
				}
			}
			gotSeg, wantSeg := headerSegments(t, got.Bytes()), headerSegments(t, want.Bytes())
			for _, m := range []byte{markerDQT, markerDHT, markerSOF0, markerSOS} {
				if !bytes.Equal(gotSeg[m], wantSeg[m]) {
					t.Errorf("segment 0xff%x differs from the whole-image encoding's", m)
				}
			}
		})
	}
}

// headerSegments maps each marker before the scan to its payload.
func headerSegments(t *testing.T, b []byte) map[byte][]byte {
	t.Helper()
	seg := map[byte][]byte{}
	for pos := 2; ; {
		if pos+4 > len(b) || b[pos] != 0xff {
			t.Fatalf("no marker segment at byte %d", pos)
		}
		n := int(binary.BigEndian.Uint16(b[pos+2:]))
		seg[b[pos+1]] = b[pos+4 : pos+2+n]
		if b[pos+1] == markerSOS {
			return seg
		}
		pos += 2 + n
	}
}

// A strip whose data holds a marker image/jpeg never writes is refused,
// not joined into a file that decodes wrongly; stuffed 0xFF bytes are data.
func TestJPEGStripParseRefusesForeignMarkers(t *testing.T) {
	var s jpegParts
	if err := jpeg.Encode(&s.buf, wholeRGBA(64, 64, photoRGBA(64, 64)), nil); err != nil {
		t.Fatal(err)
	}
	if err := s.parse(); err != nil {
		t.Fatalf("image/jpeg's own output: %v", err)
	}
	if !bytes.Contains(s.scan, []byte{0xff, 0x00}) {
		t.Fatal("the test image's scan has no stuffed 0xFF byte; pick another")
	}
	clean := bytes.Clone(s.buf.Bytes())
	scanAt := len(clean) - 2 - len(s.scan)
	for name, corrupt := range map[string]func([]byte) []byte{
		"a restart marker in the data": func(b []byte) []byte {
			return append(append(bytes.Clone(b[:scanAt+10]), 0xff, 0xd0), b[scanAt+10:]...)
		},
		"no EOI": func(b []byte) []byte { return b[:len(b)-2] },
		"a 0xFF as the last data byte": func(b []byte) []byte {
			return append(bytes.Clone(b[:len(b)-2]), 0xff, 0xff, 0xd9)
		},
		"an APP0 segment": func(b []byte) []byte {
			return append([]byte{0xff, 0xd8, 0xff, 0xe0, 0x00, 0x02}, b[2:]...)
		},
	} {
		s.buf.Reset()
		s.buf.Write(corrupt(clean))
		if err := s.parse(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// A strip codes to the very bytes image/jpeg writes for it: the same DCT,
// colour conversion, rounding and bit packing. (If a Go release changes
// image/jpeg's DCT, this fails: copy the new one into jpegdct.go.)
func TestJPEGCoderMatchesImageJPEG(t *testing.T) {
	for _, tc := range []struct {
		rect    image.Rectangle
		quality int
	}{
		{image.Rect(0, 0, 1, 1), 90},
		{image.Rect(0, 0, 17, 33), 1},
		{image.Rect(0, 64, 333, 128), 90}, // a strip below the first
		{image.Rect(0, 128, 100, 141), 100},
		{image.Rect(0, 0, 256, 48), 50},
	} {
		t.Run(fmt.Sprintf("%v_q%d", tc.rect, tc.quality), func(t *testing.T) {
			m := image.NewRGBA(tc.rect)
			if err := photoRGBA(tc.rect.Max.X, tc.rect.Max.Y)(m); err != nil {
				t.Fatal(err)
			}
			var want jpegParts
			if err := jpeg.Encode(&want.buf, m, &jpeg.Options{Quality: tc.quality}); err != nil {
				t.Fatal(err)
			}
			if err := want.parse(); err != nil {
				t.Fatal(err)
			}
			c, err := newJPEGCoder(tc.quality)
			if err != nil {
				t.Fatal(err)
			}
			if got := c.encode(nil, m); !bytes.Equal(got, want.scan) {
				t.Errorf("%d bytes of scan, image/jpeg wrote %d; they differ", len(got), len(want.scan))
			}
		})
	}
}

// Quantizing by reciprocal rounds exactly as image/jpeg's division, for
// every quantizer and every DCT output (they are under 2^14 in size), and
// zeroes tells the zero quotients.
func TestReciprocalDivision(t *testing.T) {
	for q := int32(1); q <= 255; q++ {
		d := 8 * q
		r := newReciprocal(d)
		for a := int32(-1 << 15); a < 1<<15; a++ {
			want := (a + d>>1) / d
			if a < 0 {
				want = -((-a + d>>1) / d)
			}
			if got := r.div(a); got != want {
				t.Fatalf("%d / %d: %d, want %d", a, d, got, want)
			}
			if r.zeroes(a) != (want == 0) {
				t.Fatalf("%d / %d: zeroes says %v, the quotient is %d", a, d, r.zeroes(a), want)
			}
		}
	}
}

// A worker holds a band of a strip's rows, not the strip: at 16000 pixels
// wide a strip of 64 rows is 4 MiB of 8-bit pixels a worker. The fill gets
// whole MCU rows, and the bands of a strip in order, each following the
// last (what a fill that keeps the rows around its last one counts on).
func TestJPEGFillsAStripInBands(t *testing.T) {
	const width, height = 4096, 200 // strips of 64 rows, bands of 16
	var mu sync.Mutex
	next := map[int]int{} // strip -> the row its next band must start at
	err := JPEG(io.Discard, width, height, 90, 2, func(dst *image.RGBA) error {
		r := dst.Rect
		if r.Dy() > 16 || cap(dst.Pix) > 4*width*16 {
			return fmt.Errorf("rows %d..%d in a buffer of %d rows", r.Min.Y, r.Max.Y, cap(dst.Pix)/(4*width))
		}
		strip := r.Min.Y / StripHeight
		mu.Lock()
		defer mu.Unlock()
		if want := max(next[strip], strip*StripHeight); r.Min.Y != want {
			return fmt.Errorf("strip %d: a band at row %d, want %d", strip, r.Min.Y, want)
		}
		next[strip] = r.Max.Y
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
