package engine

import (
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"io"

	"golang.org/x/image/webp"

	"genjobs/internal/imagetype"
)

// Format is the decoder of one image type the engines accept.
type Format struct {
	Name         string // as messages name it: PNG, JPEG, WebP
	ContentType  string
	DecodeConfig func(io.Reader) (image.Config, error)
	Decode       func(io.Reader) (image.Image, error)
}

var formats = []Format{
	{"PNG", imagetype.PNG, png.DecodeConfig, png.Decode},
	{"JPEG", imagetype.JPEG, jpeg.DecodeConfig, jpeg.Decode},
	{"WebP", imagetype.WebP, webp.DecodeConfig, webp.Decode},
}

// FormatOf picks data's decoder by its signature (imagetype.Sniff), never
// through image.Decode's registry, so that a format some other package
// registers (image/gif, which the video engine imports) is not accepted by
// accident.
func FormatOf(data []byte) (*Format, bool) {
	ct, ok := imagetype.Sniff(data)
	if !ok {
		return nil, false
	}
	for i := range formats {
		if formats[i].ContentType == ct {
			return &formats[i], true
		}
	}
	return nil, false
}

// Guard turns a codec's panic into an error: decoders of hostile files
// have panicked before (out-of-range slices on truncated data), and a bad
// file must fail its job, never the worker.
func Guard[T any](fn func() (T, error)) (v T, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return fn()
}
