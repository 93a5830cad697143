package generate

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"io"

	"genjobs/internal/engine"
)

// genMaxInputPixels bounds a decoded input image of the generation engines:
// a small file may declare a huge canvas, and decoding allocates 4 bytes a
// pixel before a single row is read.
const genMaxInputPixels = 100_000_000

// genArrayFields are the request fields whose inputs are named with an index.
var genArrayFields = map[string]bool{
	"style_images":     true,
	"reference_images": true,
	"image_urls":       true,
}

// genInputName is how a client's error message names in.
func genInputName(in engine.Input) string {
	if genArrayFields[in.Field] {
		return fmt.Sprintf("%s[%d]", in.Field, in.Index)
	}
	return in.Field
}

// decodeGenInput decodes one image input. A file that is not a whole PNG,
// JPEG or WebP image, or that is too large, gives an error satisfying
// errors.Is(err, ErrInvalidInput) that names the field; ctx ending stops the
// decoder at its next read and gives ctx's error.
func decodeGenInput(ctx context.Context, in engine.Input) (img image.Image, err error) {
	name := genInputName(in)
	notImage := engine.InvalidInput("%s is not a decodable PNG, JPEG or WebP image", name)
	format, ok := engine.FormatOf(in.Data)
	if !ok {
		return nil, notImage
	}
	// Decoders of hostile files have panicked before (out-of-range slices on
	// truncated data); a bad input must fail its job, not the worker.
	defer func() {
		if r := recover(); r != nil {
			img, err = nil, notImage
		}
	}()
	cfg, err := format.DecodeConfig(bytes.NewReader(in.Data))
	if err != nil {
		return nil, notImage
	}
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return nil, notImage
	}
	if int64(cfg.Width)*int64(cfg.Height) > genMaxInputPixels {
		return nil, engine.InvalidInput("%s is %d x %d pixels; at most %d megapixels are accepted",
			name, cfg.Width, cfg.Height, genMaxInputPixels/1_000_000)
	}
	if engine.TooShort(in.Data) { // a lying header: refused before the decoder allocates
		return nil, notImage
	}
	img, err = format.Decode(&genCtxReader{ctx: ctx, r: bytes.NewReader(in.Data)})
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		return nil, notImage
	}
	if b := img.Bounds(); b.Dx() != cfg.Width || b.Dy() != cfg.Height {
		return nil, notImage
	}
	return img, nil
}

// genCtxReader fails its reads once ctx ends, which is how a decoder that
// takes seconds on a large file is stopped.
type genCtxReader struct {
	ctx context.Context
	r   io.Reader
}

func (g *genCtxReader) Read(p []byte) (int, error) {
	if err := g.ctx.Err(); err != nil {
		return 0, err
	}
	return g.r.Read(p)
}

// genCtxWriter fails its writes once ctx ends, to stop an encoder.
type genCtxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (g *genCtxWriter) Write(p []byte) (int, error) {
	if err := g.ctx.Err(); err != nil {
		return 0, err
	}
	return g.w.Write(p)
}

// decodeInputs decodes inputs one after the other, each handed to use as
// soon as it is decoded, so at most one full-size image is held at a time.
// Decoding and use run under p.wait (use must watch its ctx in long loops);
// progress rises to limit.
func (p *Progress) DecodeInputs(inputs []engine.Input, limit float64, use func(ctx context.Context, in engine.Input, img image.Image) error) error {
	start := p.last
	for i, in := range inputs {
		frac := start + (limit-start)*float64(i+1)/float64(len(inputs))
		err := p.wait(frac, func(ctx context.Context) error {
			img, err := decodeGenInput(ctx, in)
			if err != nil {
				return err
			}
			return use(ctx, in, img)
		})
		if err != nil {
			return err
		}
		if err := p.To(frac, nil); err != nil {
			return err
		}
	}
	return nil
}
