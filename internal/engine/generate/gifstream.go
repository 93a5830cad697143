package generate

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"image"
	"image/color"
	"image/gif"
	"image/png"
	"sync"
	"time"

	"genjobs/internal/engine"
)

// genAnimation is what genEncodeGIF encodes: frames of w x h in one palette,
// frame i shown for delays[i] hundredths of a second.
type genAnimation struct {
	w, h   int
	pal    color.Palette
	delays []int
	// newPainter returns a function that paints frame i into dst. Each
	// worker goroutine calls it once, so scratch buffers are not shared.
	newPainter func() func(i int, dst *image.Paletted)
}

type genFrameResult struct {
	header  []byte // frame 0: image/gif's header, global colour table included
	block   []byte // image descriptor and LZW data
	preview []byte // frame 0: the frame as a PNG
	err     error
}

// genEncodeGIF paints and encodes the frames of a on several goroutines and
// assembles them, in order, into one looping GIF. Each frame goes through
// image/gif's own encoder as a one-frame GIF, whose image block is spliced
// into the animation: frames encode in parallel and only a few are held
// unencoded at once, where gif.EncodeAll would take every frame in memory
// on one core. It reports after each frame, progress rising from p's
// toward limit, with frame 0 as the preview, and while it joins the
// encoded frames into the file.
func genEncodeGIF(p *Progress, a genAnimation, limit float64) ([]byte, error) {
	n := len(a.delays)
	if n == 0 {
		return nil, errors.New("engine: an animation needs a frame")
	}
	ctx, cancel := context.WithCancel(p.ctx)
	workers := genWorkers()
	results := make([]chan genFrameResult, n)
	for i := range results {
		results[i] = make(chan genFrameResult, 1)
	}
	jobs := make(chan int, n)
	var wg sync.WaitGroup
	// Cancel before waiting: on an early return the workers then skip the
	// frames still queued instead of painting them, and return is at once.
	defer func() {
		cancel()
		close(jobs)
		wg.Wait()
	}()
	for range workers {
		wg.Go(func() {
			paint := a.newPainter()
			dst := image.NewPaletted(image.Rect(0, 0, a.w, a.h), a.pal)
			var buf bytes.Buffer
			for i := range jobs {
				if err := ctx.Err(); err != nil {
					results[i] <- genFrameResult{err: err}
					continue
				}
				paint(i, dst)
				results[i] <- genEncodeFrame(dst, &buf, i == 0)
			}
		})
	}
	// Frames are handed out a few ahead of the one being written, so a
	// cancelled job stops within a frame or two of work.
	next := 0
	for ; next < min(n, 2*workers); next++ {
		jobs <- next
	}
	// The frames take progress to mid; joining them into one file reports
	// on its way from there to limit.
	start := p.last
	mid := start + (limit-start)*0.95
	parts := make([][]byte, 0, 2*n+3)
	tick := time.NewTicker(genTick)
	defer tick.Stop()
	for i := range n {
		target := start + (mid-start)*float64(i+1)/float64(n)
		var r genFrameResult
		// A large frame (and the first, with its preview) can take longer
		// than a tick: keep reporting while it is made.
		for waiting := true; waiting; {
			select {
			case r = <-results[i]:
				waiting = false
			case <-tick.C:
				if err := p.To(p.last+(target-p.last)*0.2, nil); err != nil {
					return nil, err
				}
			case <-p.ctx.Done():
				return nil, p.ctx.Err()
			}
		}
		if r.err != nil {
			return nil, r.err
		}
		if next < n {
			jobs <- next
			next++
		}
		var preview *engine.File
		if i == 0 {
			// The NETSCAPE2.0 application extension after the header: loop
			// forever, as browsers play GIF animations.
			parts = append(parts, r.header, []byte("\x21\xff\x0bNETSCAPE2.0\x03\x01\x00\x00\x00"))
			preview = &engine.File{ContentType: "image/png", Ext: "png", Data: r.preview}
		}
		// Graphic control extension: no transparency, the frame's delay.
		gce := []byte{0x21, 0xf9, 0x04, 0x00, 0, 0, 0x00, 0x00}
		binary.LittleEndian.PutUint16(gce[4:6], uint16(a.delays[i]))
		parts = append(parts, gce, r.block)
		if err := p.To(target, preview); err != nil {
			return nil, err
		}
	}
	parts = append(parts, []byte{0x3b}) // trailer
	return genJoin(p, parts, limit)
}

// genJoinChunk is how many bytes genJoin copies between two reports.
const genJoinChunk = 4 << 20

// genJoin concatenates parts into one new slice, reporting after every
// genJoinChunk bytes, progress rising to limit. Copying tens of megabytes
// into fresh memory is slow where first touching a page is (about 3 ms a
// megabyte on the 2-core development machines); a growing bytes.Buffer
// did it all at once on its last doubling, for most of a second without a
// report.
func genJoin(p *Progress, parts [][]byte, limit float64) ([]byte, error) {
	total := 0
	for _, b := range parts {
		total += len(b)
	}
	start := p.last
	out := make([]byte, 0, total)
	since := 0
	for _, b := range parts {
		out = append(out, b...)
		if since += len(b); since >= genJoinChunk {
			since = 0
			if err := p.To(start+(limit-start)*float64(len(out))/float64(total), nil); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// genEncodeFrame encodes dst as a one-frame GIF and cuts it into header and
// image block. With an opaque palette and no delay, image/gif writes: header
// and logical screen descriptor (13 bytes), the global colour table, the
// image descriptor (0x2c) without a local table, the LZW data, the trailer
// (0x3b). Anything else is refused rather than spliced wrongly.
func genEncodeFrame(dst *image.Paletted, buf *bytes.Buffer, first bool) genFrameResult {
	buf.Reset()
	if err := gif.Encode(buf, dst, nil); err != nil {
		return genFrameResult{err: err}
	}
	b := buf.Bytes()
	unexpected := genFrameResult{err: errors.New("engine: image/gif wrote a frame in an unexpected layout")}
	if len(b) < 14 || b[10]&0x80 == 0 {
		return unexpected
	}
	hdr := 13 + 3<<(b[10]&0x07+1)
	if len(b) < hdr+11 || b[hdr] != 0x2c || b[hdr+9]&0x80 != 0 || b[len(b)-1] != 0x3b {
		return unexpected
	}
	r := genFrameResult{block: bytes.Clone(b[hdr : len(b)-1])}
	if first {
		r.header = bytes.Clone(b[:hdr])
		var p bytes.Buffer
		if err := png.Encode(&p, dst); err != nil {
			return genFrameResult{err: err}
		}
		r.preview = p.Bytes()
	}
	return r
}
