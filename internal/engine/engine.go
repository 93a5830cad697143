// Package engine is what every engine shares: the job an engine works on,
// the files it makes, how it reports progress, and the decoders of the
// input images. The engines live beneath it, one package each: enhance
// (standard-enhance), generate (the image and video models) and mesh (the
// 3D model); reference maps each model to its engine. None imports an AWS
// package: the worker fetches the inputs and stores the outputs.
package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Input is one fetched image-valued field of the request.
type Input struct {
	Field       string // the request field, e.g. "image_url" or "reference_images"
	Index       int    // position in an array field; 0 for a single value
	ContentType string // sniffed: image/png, image/jpeg or image/webp
	Data        []byte
}

// Job is what an engine works on.
type Job struct {
	Model   string          // the endpoint's model, e.g. "standard-enhance"
	Request json.RawMessage // the validated request, defaults filled (catalog.Request.JSON)
	Inputs  []Input         // the fetched images, in field order
	// Outputs, when set, takes the output files as they are produced. An
	// engine that streams (Enhance) then writes every file through it and
	// returns none; the others ignore it and return their files whole.
	Outputs Sink
}

// Sink opens output files for an engine that writes them as it produces
// them, so that a large output never exists whole in memory.
type Sink interface {
	// Create starts the next output file. The engine writes it whole and
	// closes it; Close's error is the file's. A file that is not closed
	// when Run returns (an error, a cancellation) is discarded by the
	// sink's owner, never kept in part.
	Create(contentType, ext string) (io.WriteCloser, error)
}

// File is one output (or preview) file.
type File struct {
	ContentType string // e.g. image/png, image/gif, model/gltf-binary
	Ext         string // file extension without the dot: png, jpg, webp, gif, glb
	Data        []byte
}

// Update is what an engine reports while it works.
type Update struct {
	Progress float64 // 0..1, never decreasing
	// Preview, when set, is an intermediate result the client may see at
	// intermediate-complete. At most one per job.
	Preview *File
}

// Report receives updates. It returns an error when the job must stop (it
// was cancelled, or another worker took it over); the engine then returns
// that error at once.
type Report func(Update) error

// Engine produces a job's outputs.
type Engine interface {
	// Run works on j until done, ctx ends or report returns an error. It
	// calls report often (at least every few hundred milliseconds of work),
	// so that a cancellation is noticed within a second.
	Run(ctx context.Context, j Job, report Report) ([]File, error)
}

// ErrInvalidInput marks an input the engine cannot use (a corrupt or
// truncated image, say): the job fails with invalid_input, never a crash.
var ErrInvalidInput = errors.New("invalid input")

// InvalidInput returns an error wrapping ErrInvalidInput with a message the
// client may read.
func InvalidInput(format string, args ...any) error {
	return &inputError{msg: fmt.Sprintf(format, args...)}
}

type inputError struct{ msg string }

func (e *inputError) Error() string        { return e.msg }
func (e *inputError) Is(target error) bool { return target == ErrInvalidInput }

// Registry maps a model name to its engine.
type Registry map[string]Engine

// For returns the engine of model.
func (r Registry) For(model string) (Engine, bool) {
	e, ok := r[model]
	return e, ok
}
