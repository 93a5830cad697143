package enhance

import (
	"bytes"
	"errors"
	"image"
	"image/jpeg"
	"image/png"
	"io"

	"genjobs/internal/engine"
	"genjobs/internal/engine/enhance/stripenc"
)

// MaxSourcePixels bounds the source image: its size is read from the
// header and a larger image (a 16000 x 16000 PNG, say) is refused before a
// byte of it is decoded. The decoded source is the one image the engine
// holds whole: the standard decoders make whole images, single-threaded.
// Both bound it (README, "The enhance engine"): up to 16 bytes a pixel
// while decoding (a progressive 4:4:4 JPEG; 8-bit PNG 4.5, baseline 4:2:0
// JPEG 1.7), 3 GiB here, and up to 118 ns a pixel, 24 s here, which leaves
// the worker's 120 s room for the rest of the job on slower cores.
const MaxSourcePixels = 200_000_000

// jpegQuality trades size for fidelity: at 90 JPEG's artefacts are below
// what a viewer notices at 100% in a photo.
const jpegQuality = 90

const undecodable = "image_url is not a decodable PNG, JPEG or WebP image"

// sniff returns the format of data and its size, refusing what the engine
// cannot or will not decode. contentType, when given, is the type the input
// came with; the content must be of that type.
func sniff(data []byte, contentType string) (*engine.Format, image.Config, error) {
	f, ok := engine.FormatOf(data)
	if !ok {
		return nil, image.Config{}, engine.InvalidInput("%s", undecodable)
	}
	if contentType != "" && contentType != f.ContentType {
		return nil, image.Config{}, engine.InvalidInput("image_url was given as %s but holds %s data", contentType, f.Name)
	}
	cfg, err := engine.Guard(func() (image.Config, error) { return f.DecodeConfig(bytes.NewReader(data)) })
	if err != nil || cfg.Width < 1 || cfg.Height < 1 {
		return nil, cfg, invalid(f, err)
	}
	if int64(cfg.Width)*int64(cfg.Height) > MaxSourcePixels {
		return nil, cfg, engine.InvalidInput("image_url is %d x %d pixels; at most %d megapixels are accepted",
			cfg.Width, cfg.Height, MaxSourcePixels/1_000_000)
	}
	if engine.TooShort(data) { // a lying header: refused before the decoder allocates
		return nil, cfg, engine.InvalidInput("%s: the %s data is too short for the %d x %d image its header claims", undecodable, f.Name, cfg.Width, cfg.Height)
	}
	return f, cfg, nil
}

// read decodes data as f; closing abort makes it give up at its next read.
func read(f *engine.Format, data []byte, abort <-chan struct{}) (image.Image, error) {
	m, err := engine.Guard(func() (image.Image, error) {
		return f.Decode(&abortReader{r: bytes.NewReader(data), abort: abort})
	})
	if errors.Is(err, errAborted) {
		return nil, err
	}
	if err != nil || m.Bounds().Empty() {
		return nil, invalid(f, err)
	}
	return m, nil
}

// invalid describes a decoder's failure to the client without its internals.
func invalid(f *engine.Format, err error) error {
	var pngFeature png.UnsupportedError
	var jpegFeature jpeg.UnsupportedError
	if errors.As(err, &pngFeature) || errors.As(err, &jpegFeature) {
		return engine.InvalidInput("%s: it uses a %s feature this service does not support", undecodable, f.Name)
	}
	return engine.InvalidInput("%s: the %s data is corrupt or truncated", undecodable, f.Name)
}

var errAborted = errors.New("enhance: aborted")

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
