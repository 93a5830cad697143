package engine

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"io"

	"golang.org/x/image/webp"

	"genjobs/internal/engine/stripenc"
)

// MaxSourcePixels bounds the source image: its size is read from the
// header and a larger image (a 16000 x 16000 PNG, say) is refused before a
// byte of it is decoded. The decoded source is the one image the engine
// holds whole: the standard decoders make whole images, single-threaded.
// Both bound it (docs/performance.md, "Limits"): up to 16 bytes a pixel
// while decoding (a progressive 4:4:4 JPEG; 8-bit PNG 4.5, baseline 4:2:0
// JPEG 1.7), 3 GiB here, and up to 118 ns a pixel, 24 s here, which leaves
// the worker's 120 s room for the rest of the job on slower cores.
const MaxSourcePixels = 200_000_000

// MaxOutputPixels is the largest output, 22000 x 22000 (docs/performance.md, "Limits";
// catalog.MaxOutputPixels, which a test keeps equal, refuses more at
// creation).
const MaxOutputPixels = 22000 * 22000

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
	name, contentType string
	magic             func([]byte) bool
	config            func(io.Reader) (image.Config, error)
	decode            func(io.Reader) (image.Image, error)
}

var sourceFormats = []sourceFormat{
	{"PNG", "image/png", func(b []byte) bool { return bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) }, png.DecodeConfig, png.Decode},
	{"JPEG", "image/jpeg", func(b []byte) bool { return bytes.HasPrefix(b, []byte("\xff\xd8\xff")) }, jpeg.DecodeConfig, jpeg.Decode},
	{"WebP", "image/webp", func(b []byte) bool {
		return len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP"
	}, webp.DecodeConfig, webp.Decode},
}

const undecodable = "image_url is not a decodable PNG, JPEG or WebP image"

// sniff returns the format of data and its size, refusing what the engine
// cannot or will not decode. contentType, when given, is the type the input
// came with; the content must be of that type.
func sniff(data []byte, contentType string) (*sourceFormat, image.Config, error) {
	for i := range sourceFormats {
		f := &sourceFormats[i]
		if !f.magic(data) {
			continue
		}
		if contentType != "" && contentType != f.contentType {
			return nil, image.Config{}, InvalidInput("image_url was given as %s but holds %s data", contentType, f.name)
		}
		cfg, err := guard(func() (image.Config, error) { return f.config(bytes.NewReader(data)) })
		if err != nil || cfg.Width < 1 || cfg.Height < 1 {
			return nil, cfg, f.invalid(err)
		}
		if int64(cfg.Width)*int64(cfg.Height) > MaxSourcePixels {
			return nil, cfg, InvalidInput("image_url is %d x %d pixels; at most %d megapixels are accepted",
				cfg.Width, cfg.Height, MaxSourcePixels/1_000_000)
		}
		if tooShort(data) {
			return nil, cfg, InvalidInput("%s: the %s data is too short for the %d x %d image its header claims", undecodable, f.name, cfg.Width, cfg.Height)
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

// outputFormat is one value of output_format.
type outputFormat struct {
	contentType, ext string
	hasAlpha         bool
	// streams: the encoder takes rows as they come (JPEG, PNG); else it
	// holds the whole image and does its work after the last row (WebP).
	streams bool
	// nsPerPixel is roughly what encoding costs, for the progress estimate.
	nsPerPixel float64
	encode     func(w io.Writer, width, height, workers int, e *enhanceJob) error
}

var outputFormats = map[string]outputFormat{
	"png": {"image/png", "png", true, true, 35, func(w io.Writer, width, height, workers int, e *enhanceJob) error {
		return stripenc.PNG(w, width, height, workers, e.fillNRGBA)
	}},
	"jpg": {"image/jpeg", "jpg", false, true, 18, func(w io.Writer, width, height, workers int, e *enhanceJob) error {
		return stripenc.JPEG(w, width, height, jpegQuality, workers, e.fillRGBA)
	}},
	// Lossless VP8L only: no lossy WebP encoder can be had without cgo.
	"webp": {"image/webp", "webp", true, false, 200, func(w io.Writer, width, height, workers int, e *enhanceJob) error {
		return stripenc.WebP(w, width, height, workers, e.fillNRGBA)
	}},
}
