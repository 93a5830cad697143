// Package generate holds the reference engines of the generation models that
// make pictures: model-e-4's Image and the video models' Video. Its toolkit
// (a seeded generator, palettes, progress while a step runs, input decoding)
// serves the mesh engine too. Every output is deterministic for a request.
package generate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/png"

	"genjobs/internal/engine"
)

// Image is the reference engine of model-e-4: one PNG of exactly width x
// height, a procedural picture (genScene) drawn from a generator seeded by
// the prompt and seed, so the same request gives the same bytes. Style
// images, when given, supply its palette.
type Image struct{}

type genImageRequest struct {
	Prompt string `json:"prompt"`
	Width  int    `json:"width"`
	Height int    `json:"height"`
	Seed   *int64 `json:"seed"`
}

// Run implements Engine. It calls report from its own goroutine only.
func (Image) Run(ctx context.Context, j engine.Job, report engine.Report) (files []engine.File, err error) {
	defer Recover(j.Model, &files, &err)
	var req genImageRequest
	if err := json.Unmarshal(j.Request, &req); err != nil {
		return nil, fmt.Errorf("engine: %s request: %w", j.Model, err)
	}
	// The catalog has checked the bounds; they are checked again because a
	// wrong size here would be an allocation of any size.
	if req.Width < 64 || req.Width > 4096 || req.Height < 64 || req.Height > 4096 {
		return nil, fmt.Errorf("engine: %s size %d x %d is outside 64..4096", j.Model, req.Width, req.Height)
	}
	seed := int64(DefaultSeed)
	if req.Seed != nil {
		seed = *req.Seed
	}
	p := &Progress{ctx: ctx, report: report}
	if err := p.To(0.01, nil); err != nil {
		return nil, err
	}

	var hist genHistogram
	err = p.DecodeInputs(j.Inputs, 0.1, func(_ context.Context, _ engine.Input, img image.Image) error {
		hist.add(img)
		return nil
	})
	if err != nil {
		return nil, err
	}
	rng := NewRNG(j.Model, req.Prompt, seed)
	scene := newGenScene(rng, hist.palette(rng), req.Width, req.Height)

	// Up to 64 MiB, zeroed: where fresh pages are slow to touch (about 3 ms
	// a megabyte on the 2-core development machines) that alone can take
	// longer than a report may wait.
	var img *image.RGBA
	err = p.wait(p.last+0.02, func(context.Context) error {
		img = image.NewRGBA(image.Rect(0, 0, req.Width, req.Height))
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := scene.paint(p, img, 0.7); err != nil {
		return nil, err
	}

	var out bytes.Buffer
	err = p.wait(0.98, func(ctx context.Context) error {
		return png.Encode(&genCtxWriter{ctx: ctx, w: &out}, img)
	})
	if err != nil {
		return nil, err
	}
	return []engine.File{{ContentType: "image/png", Ext: "png", Data: out.Bytes()}}, nil
}
