package engine

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/jpeg"
	"runtime"
	"testing"
)

// lyingPNG is a PNG whose header claims width x height RGBA pixels at 16
// bits and whose data holds a few bytes.
func lyingPNG(width, height uint32) []byte {
	chunk := func(kind string, body []byte) []byte {
		var b bytes.Buffer
		_ = binary.Write(&b, binary.BigEndian, uint32(len(body)))
		b.WriteString(kind)
		b.Write(body)
		_ = binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(append([]byte(kind), body...)))
		return b.Bytes()
	}
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr, width)
	binary.BigEndian.PutUint32(ihdr[4:], height)
	ihdr[8], ihdr[9] = 16, 6 // 16 bits, RGBA
	var z bytes.Buffer
	w := zlib.NewWriter(&z)
	_, _ = w.Write(make([]byte, 16))
	_ = w.Close()
	out := []byte("\x89PNG\r\n\x1a\n")
	out = append(out, chunk("IHDR", ihdr)...)
	out = append(out, chunk("IDAT", z.Bytes())...)
	return append(out, chunk("IEND", nil)...)
}

// lyingJPEG is a real 16 x 16 JPEG whose frame header claims width x height.
func lyingJPEG(t *testing.T, width, height uint16) []byte {
	var b bytes.Buffer
	if err := jpeg.Encode(&b, image.NewYCbCr(image.Rect(0, 0, 16, 16), image.YCbCrSubsampleRatio420), nil); err != nil {
		t.Fatal(err)
	}
	data := b.Bytes()
	sof := bytes.Index(data, []byte{0xff, 0xc0})
	binary.BigEndian.PutUint16(data[sof+5:], height)
	binary.BigEndian.PutUint16(data[sof+7:], width)
	return data
}

// allocated is how many bytes fn allocates on the heap.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

const lieBudget = 64 << 20

// A 114-character data: URI whose PNG claims 14000 x 14000 at 16 bits
// made the decoder allocate ~1.5 GB before failing. A header the data
// cannot back is refused first, for a few bytes of heap.
func TestALyingHeaderCostsLittle(t *testing.T) {
	png14k := lyingPNG(14000, 14000)
	if uri := "data:image/png;base64," + base64.StdEncoding.EncodeToString(png14k); len(uri) > 130 {
		t.Fatalf("the lying PNG is a %d-character data: URI; want about 114", len(uri))
	}
	for name, data := range map[string][]byte{"PNG 14000 x 14000 x 64 bits": png14k, "JPEG 14000 x 14000": lyingJPEG(t, 14000, 14000)} {
		var err error
		n := allocated(func() {
			var f *sourceFormat
			if f, _, err = sniff(data, ""); err == nil {
				_, err = f.read(data, nil)
			}
		})
		if !errors.Is(err, ErrInvalidInput) {
			t.Errorf("enhance, %s: %v; want invalid input", name, err)
		}
		if n > lieBudget {
			t.Errorf("enhance, %s: decoding allocated %d MiB; want under 64 MiB", name, n>>20)
		}
	}
	for name, data := range map[string][]byte{"PNG 9000 x 9000 x 64 bits": lyingPNG(9000, 9000), "JPEG 9000 x 9000": lyingJPEG(t, 9000, 9000)} {
		var err error
		n := allocated(func() {
			_, err = decodeGenInput(context.Background(), Input{Field: "image", Data: data})
		})
		if !errors.Is(err, ErrInvalidInput) {
			t.Errorf("generation input, %s: %v; want invalid input", name, err)
		}
		if n > lieBudget {
			t.Errorf("generation input, %s: decoding allocated %d MiB; want under 64 MiB", name, n>>20)
		}
	}
}

// An honest image passes the check: the bound is the data's, not a guess.
func TestHonestImagesAreNotTooShort(t *testing.T) {
	var b bytes.Buffer
	if err := jpeg.Encode(&b, image.NewGray(image.Rect(0, 0, 2000, 1000)), &jpeg.Options{Quality: 1}); err != nil {
		t.Fatal(err)
	}
	if tooShort(b.Bytes()) {
		t.Errorf("a flat 2000 x 1000 JPEG of %d bytes judged too short", b.Len())
	}
	if p := lyingPNG(4, 4); tooShort(p) {
		t.Error("a 4 x 4 PNG with 16 bytes of data judged too short")
	}
}
