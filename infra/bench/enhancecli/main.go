// Command enhancecli runs the standard-enhance engine on one image file, as
// the worker would, and writes its output to a file: the subject `make bench`
// times against libvips, one whole process per run.
//
//	enhancecli [-filters default|off] [-crop] [-upscale FACTOR] [-cpuprofile FILE] IN OUT WIDTH HEIGHT
//
// OUT's extension (.jpg, .png, .webp) is the output_format. The request is
// validated by the catalog, so its defaults are the API's; -filters off sets
// sharpen, denoise and fix_compression to 0, leaving the plain resample that
// `vips resize` does.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"genjobs/internal/catalog"
	"genjobs/internal/engine"
	"genjobs/internal/engine/enhance"
	"genjobs/internal/imagetype"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "enhancecli:", err)
		os.Exit(1)
	}
}

func run() error {
	filters := flag.String("filters", "default", "default (the schema's 0.5 each) or off (all three at 0)")
	crop := flag.Bool("crop", false, "crop_to_fill")
	upscale := flag.Float64("upscale", 0, "upscaling_activated with this image_scaling_factor (0: off)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile (go tool pprof) of the run to this file")
	flag.Parse()
	if flag.NArg() != 4 {
		return errors.New("usage: enhancecli [-filters default|off] [-crop] [-upscale FACTOR] IN OUT WIDTH HEIGHT")
	}
	in, out := flag.Arg(0), flag.Arg(1)
	width, err1 := strconv.Atoi(flag.Arg(2))
	height, err2 := strconv.Atoi(flag.Arg(3))
	if err := errors.Join(err1, err2); err != nil {
		return fmt.Errorf("WIDTH and HEIGHT: %w", err)
	}
	format := strings.TrimPrefix(filepath.Ext(out), ".")
	body := map[string]any{
		"width": width, "height": height, "image_url": "https://example.com/in", "model": "Standard V2",
		"output_format": format, "crop_to_fill": *crop,
	}
	if *upscale > 0 {
		body["upscaling_activated"], body["image_scaling_factor"] = true, *upscale
	}
	switch *filters {
	case "default":
	case "off":
		body["sharpen"], body["denoise"], body["fix_compression"] = 0, 0, 0
	default:
		return fmt.Errorf("-filters %q: want default or off", *filters)
	}
	src, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	cat, err := catalog.New()
	if err != nil {
		return err
	}
	ep, ok := cat.Lookup("enhance", "vendor-a", "standard-enhance")
	if !ok {
		return errors.New("the catalog has no standard-enhance endpoint")
	}
	raw, _ := json.Marshal(body)
	req, err := ep.Decode(raw, time.Now())
	if err != nil {
		return fmt.Errorf("request: %w", err)
	}
	sink := &fileSink{path: out}
	ct, _ := imagetype.Sniff(src) // as the worker's fetcher tells it; the engine refuses what it is not
	j := engine.Job{
		Model:   "standard-enhance",
		Request: req.JSON(),
		Inputs:  []engine.Input{{Field: "image_url", ContentType: ct, Data: src}},
		Outputs: sink,
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	files, err := enhance.Engine{}.Run(context.Background(), j, func(engine.Update) error { return nil })
	if err != nil {
		return err
	}
	for _, f := range files { // an engine that ignores Outputs
		if err := os.WriteFile(out, f.Data, 0o644); err != nil {
			return err
		}
	}
	if len(files) == 0 && !sink.closed {
		return errors.New("the engine wrote no output")
	}
	return nil
}

// fileSink writes the one output file to path.
type fileSink struct {
	path   string
	closed bool
}

func (s *fileSink) Create(contentType, ext string) (io.WriteCloser, error) {
	f, err := os.Create(s.path)
	if err != nil {
		return nil, err
	}
	return &bufferedFile{Writer: bufio.NewWriterSize(f, 1<<20), f: f, sink: s}, nil
}

type bufferedFile struct {
	*bufio.Writer
	f    *os.File
	sink *fileSink
}

func (b *bufferedFile) Close() error {
	err := errors.Join(b.Flush(), b.f.Close())
	b.sink.closed = err == nil
	return err
}
