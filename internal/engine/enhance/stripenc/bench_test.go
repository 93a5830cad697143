package stripenc

import (
	"compress/flate"
	"fmt"
	"genjobs/internal/engine/enginetest"
	"image"
	"image/jpeg"
	"image/png"
	"io"
	"runtime"
	"sync"
	"testing"

	kflate "github.com/klauspost/compress/flate"
)

// The encoders at 4096 x 4096 on a photo-like image, against the standard
// library's encoders of the whole image. The fills copy rows of an image
// computed beforehand, so that encoding is what is measured. bytes/s counts
// raw RGBA bytes; "out-bytes" is the file's size.
const benchSide = 4096

var benchPhoto = sync.OnceValue(func() *image.NRGBA {
	return wholeNRGBA(benchSide, benchSide, photoNRGBA(benchSide, benchSide, nil))
})

func copyRGBA(src *image.NRGBA) FillRGBA {
	return func(dst *image.RGBA) error {
		copy(dst.Pix, src.Pix[dst.Rect.Min.Y*src.Stride:dst.Rect.Max.Y*src.Stride]) // opaque: NRGBA = RGBA
		return nil
	}
}

func copyNRGBA(src *image.NRGBA) FillNRGBA {
	return func(dst *image.NRGBA) error {
		copy(dst.Pix, src.Pix[dst.Rect.Min.Y*src.Stride:dst.Rect.Max.Y*src.Stride])
		return nil
	}
}

// countWriter counts what it is given and keeps none of it.
type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

func benchEncode(b *testing.B, encode func(io.Writer) error) {
	b.SetBytes(4 * benchSide * benchSide)
	b.ReportAllocs()
	var out countWriter
	for b.Loop() {
		out.n = 0
		if err := encode(&out); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(out.n), "out-bytes")
}

func BenchmarkJPEG4096(b *testing.B) {
	src := benchPhoto()
	rgba := &image.RGBA{Pix: src.Pix, Stride: src.Stride, Rect: src.Rect}
	b.Run("stdlib", func(b *testing.B) {
		benchEncode(b, func(w io.Writer) error { return jpeg.Encode(w, rgba, &jpeg.Options{Quality: 90}) })
	})
	b.Run("strips-1worker", func(b *testing.B) {
		benchEncode(b, func(w io.Writer) error { return JPEG(w, benchSide, benchSide, 90, 1, copyRGBA(src)) })
	})
	b.Run("strips", func(b *testing.B) {
		benchEncode(b, func(w io.Writer) error {
			return JPEG(w, benchSide, benchSide, 90, runtime.GOMAXPROCS(0), copyRGBA(src))
		})
	})
}

func BenchmarkPNG4096(b *testing.B) {
	src := benchPhoto()
	for _, level := range []png.CompressionLevel{png.DefaultCompression, png.BestSpeed} {
		name := map[png.CompressionLevel]string{png.DefaultCompression: "default", png.BestSpeed: "bestspeed"}[level]
		b.Run("stdlib-"+name, func(b *testing.B) {
			enc := png.Encoder{CompressionLevel: level}
			benchEncode(b, func(w io.Writer) error { return enc.Encode(w, src) })
		})
	}
	b.Run("strips-1worker", func(b *testing.B) {
		benchEncode(b, func(w io.Writer) error { return PNG(w, benchSide, benchSide, 1, copyNRGBA(src)) })
	})
	b.Run("strips", func(b *testing.B) {
		benchEncode(b, func(w io.Writer) error {
			return PNG(w, benchSide, benchSide, runtime.GOMAXPROCS(0), copyNRGBA(src))
		})
	})
}

// The heap a 22000 x 22000 output holds at most (the largest the service
// makes; 1.9 GB as RGBA), and its speed with a cheap fill: a gradient with
// grain, in integers.
func BenchmarkPeakHeap22000(b *testing.B) {
	const side = 22000
	gradient := func(pix []byte, y0, stride int) {
		for i := 0; i < len(pix); i += 4 {
			x, y := i%stride/4, y0+i/stride
			h := uint32(x)*0x9e3779b1 ^ uint32(y)*0x85ebca77
			h ^= h >> 15
			h *= 0x2c1b3c6d
			n := int(h>>28) - 8
			pix[i] = uint8(min(max(x*200/side+n+20, 0), 255))
			pix[i+1] = uint8(min(max(y*200/side+n+20, 0), 255))
			pix[i+2] = uint8(min(max((x+y)*100/side+n+20, 0), 255))
			pix[i+3] = 255
		}
	}
	encoders := map[string]func(io.Writer) error{
		"jpeg": func(w io.Writer) error {
			return JPEG(w, side, side, 90, runtime.GOMAXPROCS(0), func(dst *image.RGBA) error {
				gradient(dst.Pix, dst.Rect.Min.Y, dst.Stride)
				return nil
			})
		},
		"png": func(w io.Writer) error {
			return PNG(w, side, side, runtime.GOMAXPROCS(0), func(dst *image.NRGBA) error {
				gradient(dst.Pix, dst.Rect.Min.Y, dst.Stride)
				return nil
			})
		},
	}
	for _, format := range []string{"jpeg", "png"} {
		b.Run(format, func(b *testing.B) {
			b.SetBytes(4 * side * side)
			var out countWriter
			var peak uint64
			for b.Loop() {
				out.n = 0
				peak = max(peak, enginetest.PeakHeap(func() {
					if err := encoders[format](&out); err != nil {
						b.Fatal(err)
					}
				}))
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
			b.ReportMetric(float64(out.n), "out-bytes")
		})
	}
}

// The deflaters on the filtered rows of the 4096 x 4096 photo, one stream
// per strip as PNG makes them: what chose klauspost/compress and pngLevel.
func BenchmarkDeflate(b *testing.B) {
	src := benchPhoto()
	f := newRowFilter(src.Stride)
	var filtered []byte
	prev := make([]byte, src.Stride)
	for y := range benchSide {
		cur := src.Pix[y*src.Stride:][:src.Stride]
		filtered = append(filtered, f.filter(cur, prev)...)
		prev = cur
	}
	type deflater interface {
		io.Writer
		Flush() error
		Reset(io.Writer)
	}
	strip := (1 + src.Stride) * StripHeight
	for _, lib := range []string{"compress-flate", "klauspost"} {
		for _, level := range []int{1, 4, 6} {
			b.Run(fmt.Sprintf("%s-%d", lib, level), func(b *testing.B) {
				var z deflater
				if lib == "klauspost" {
					z, _ = kflate.NewWriter(nil, level)
				} else {
					z, _ = flate.NewWriter(nil, level)
				}
				b.SetBytes(int64(len(filtered)))
				var out countWriter
				for b.Loop() {
					out.n = 0
					for off := 0; off < len(filtered); off += strip {
						z.Reset(&out)
						z.Write(filtered[off:min(off+strip, len(filtered))])
						z.Flush()
					}
				}
				b.ReportMetric(float64(out.n), "out-bytes")
			})
		}
	}
}
