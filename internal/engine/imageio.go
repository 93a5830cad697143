package engine

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"io"

	"github.com/HugoSmits86/nativewebp"
	"golang.org/x/image/webp"
)

// MaxSourcePixels bounds the source image: its size is read from the header
// and a larger image is refused before a byte of it is decoded. 100
// megapixels is a medium-format photo; the float working copy of one is
// 1.6 GB.
const MaxSourcePixels = 100_000_000

// MaxWebPSide is the largest width or height a WebP file can hold (the
// format stores 14-bit sizes; libwebp refuses 16384).
const MaxWebPSide = 16383

// MaxWebPPixels bounds a WebP output's area: the pure-Go encoder holds
// about 50 bytes a pixel while it works (835 MiB at 4096 x 4096), so this
// bound, 8192 x 8192, needs about 3.3 GB.
const MaxWebPPixels = 8192 * 8192

// jpegQuality trades size for fidelity: at 90 JPEG's artefacts are below
// what a viewer notices at 100% in a photo.
const jpegQuality = 90

// sourceFormat is a decoder the engine accepts. Decoders are picked by the
// file's signature, never through image.Decode, so a format some other
// package registers (GIF, BMP) is not accepted by accident.
type sourceFormat struct {
	name   string
	magic  func([]byte) bool
	config func(io.Reader) (image.Config, error)
	decode func(io.Reader) (image.Image, error)
}

var sourceFormats = []sourceFormat{
	{"PNG", func(b []byte) bool { return bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) }, png.DecodeConfig, png.Decode},
	{"JPEG", func(b []byte) bool { return bytes.HasPrefix(b, []byte("\xff\xd8\xff")) }, jpeg.DecodeConfig, jpeg.Decode},
	{"WebP", func(b []byte) bool {
		return len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP"
	}, webp.DecodeConfig, webp.Decode},
}

const undecodable = "image_url is not a decodable PNG, JPEG or WebP image"

// sniff returns the format of data and its size, refusing what the engine
// cannot or will not decode.
func sniff(data []byte) (*sourceFormat, image.Config, error) {
	for i := range sourceFormats {
		f := &sourceFormats[i]
		if !f.magic(data) {
			continue
		}
		cfg, err := guard(func() (image.Config, error) { return f.config(bytes.NewReader(data)) })
		if err != nil || cfg.Width < 1 || cfg.Height < 1 {
			return nil, cfg, f.invalid(err)
		}
		if int64(cfg.Width)*int64(cfg.Height) > MaxSourcePixels {
			return nil, cfg, InvalidInput("image_url is %d x %d pixels; at most %d megapixels are accepted",
				cfg.Width, cfg.Height, MaxSourcePixels/1_000_000)
		}
		return f, cfg, nil
	}
	return nil, image.Config{}, InvalidInput("%s", undecodable)
}

// read decodes data; closing abort makes it give up at its next read.
func (f *sourceFormat) read(data []byte, abort <-chan struct{}) (image.Image, error) {
	m, err := guard(func() (image.Image, error) {
		return f.decode(&abortReader{r: bytes.NewReader(data), abort: abort})
	})
	if errors.Is(err, errAborted) {
		return nil, err
	}
	if err != nil || m.Bounds().Empty() {
		return nil, f.invalid(err)
	}
	return m, nil
}

// invalid describes a decoder's failure to the client without its internals.
func (f *sourceFormat) invalid(err error) error {
	var pngFeature png.UnsupportedError
	var jpegFeature jpeg.UnsupportedError
	if errors.As(err, &pngFeature) || errors.As(err, &jpegFeature) {
		return InvalidInput("%s: it uses a %s feature this service does not support", undecodable, f.name)
	}
	return InvalidInput("%s: the %s data is corrupt or truncated", undecodable, f.name)
}

// guard turns a codec's panic into an error: a hostile file must fail the
// job, never the worker.
func guard[T any](fn func() (T, error)) (v T, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return fn()
}

var errAborted = errors.New("engine: aborted")

type abortReader struct {
	r     io.Reader
	abort <-chan struct{}
}

func (a *abortReader) Read(p []byte) (int, error) {
	select {
	case <-a.abort:
		return 0, errAborted
	default:
		return a.r.Read(p)
	}
}

type abortWriter struct {
	w     io.Writer
	abort <-chan struct{}
}

func (a *abortWriter) Write(p []byte) (int, error) {
	select {
	case <-a.abort:
		return 0, errAborted
	default:
		return a.w.Write(p)
	}
}

// outputFormat is one value of output_format.
type outputFormat struct {
	contentType, ext string
	hasAlpha         bool
	// nsPerPixel is roughly what encoding costs, for the progress estimate.
	nsPerPixel float64
	encode     func(io.Writer, image.Image) error
}

var outputFormats = map[string]outputFormat{
	"png": {"image/png", "png", true, 35, func(w io.Writer, m image.Image) error {
		// The default level took seven times as long for a file a fifth
		// smaller (a 4096 x 4096 photo-like image: 5.8 s against 0.8 s); a
		// 22K output must fit the worker's time limit.
		enc := png.Encoder{CompressionLevel: png.BestSpeed}
		return enc.Encode(w, m)
	}},
	"jpg": {"image/jpeg", "jpg", false, 18, func(w io.Writer, m image.Image) error {
		return jpeg.Encode(w, m, &jpeg.Options{Quality: jpegQuality})
	}},
	// nativewebp is pure Go (Lambda builds have no cgo, so no libwebp) and
	// writes lossless VP8L only.
	"webp": {"image/webp", "webp", true, 200, func(w io.Writer, m image.Image) error {
		return nativewebp.Encode(w, m, nil)
	}},
}
