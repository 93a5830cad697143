package stripenc

import (
	"fmt"
	"image"
	"io"
	"runtime/debug"
	"runtime/metrics"
	"sync"

	"github.com/HugoSmits86/nativewebp"
)

// maxWebPSide is the largest width or height VP8L stores (14 bits).
const maxWebPSide = 16383

// WebP writes a lossless WebP of width x height. Its encoder
// (nativewebp: pure Go, as the functions build without cgo, and the only
// one to be had here; it writes lossless VP8L only) needs the whole image,
// so only the filling runs in strips, on up to workers goroutines, and the
// caller bounds the image's size (engine.MaxWebPPixels).
func WebP(w io.Writer, width, height, workers int, fill FillNRGBA) error {
	if width < 1 || height < 1 || width > maxWebPSide || height > maxWebPSide {
		return fmt.Errorf("stripenc: a WebP of %d x %d pixels cannot be encoded (each side 1 to %d)",
			width, height, maxWebPSide)
	}
	m := image.NewNRGBA(image.Rect(0, 0, width, height))
	rows := stripRows(width)
	run := &stripRun[struct{}, struct{}]{
		n:        (height + rows - 1) / rows,
		workers:  workers,
		window:   2 * workers,
		newState: func() struct{} { return struct{}{} },
		produce: func(_ struct{}, i int, _ *struct{}) error {
			y0 := i * rows
			y1 := min(y0+rows, height)
			// Its own rows only: a fill that ranges over Pix must not reach the next strip.
			pix := m.Pix[y0*m.Stride : y1*m.Stride : y1*m.Stride]
			return fill(&image.NRGBA{Pix: pix, Stride: m.Stride, Rect: image.Rect(0, y0, width, y1)})
		},
		consume: func(int, *struct{}) error { return nil },
	}
	if err := run.run(); err != nil {
		return err
	}
	// The encoder copies the image twice before it starts and leaves each
	// copy behind as garbage; at the collector's default pace that garbage
	// lifts the peak a half above the encoder's live set (4096² at 16 MiB
	// live: 524 MiB against libvips's 433). A soft memory limit at that
	// live set, for the encode's duration, has the collector return the
	// garbage in time: 338 MiB, the same CPU time.
	defer limitMemory(int64(width) * int64(height) * webpBytesPerPixel)()
	return nativewebp.Encode(w, m, nil)
}

// webpBytesPerPixel is nativewebp's live set a pixel during its encode, as
// read from its code: its NRGBA copy, its flattened pixels and the
// predictor's deltas (4 bytes each), its LZ77 chain (an int) and the
// touched part of its token array.
const webpBytesPerPixel = 28

// encodes is the soft memory limit of the WebP encodes under way. The limit
// is the process's, and encodes may overlap (the local runner and the Cog
// server run several jobs), so the first sets it, each adds its own need and
// the last puts back the limit from before.
var encodes struct {
	sync.Mutex
	running int
	need    int64 // the live sets of the encodes under way
	before  int64 // the limit before the first of them
}

// limitMemory lowers the process's soft memory limit to what it holds now
// plus the need of every encode under way (never above the limit it had),
// until the returned release.
func limitMemory(need int64) (release func()) {
	encodes.Lock()
	defer encodes.Unlock()
	if encodes.running == 0 {
		encodes.before = debug.SetMemoryLimit(-1)
	}
	encodes.running++
	encodes.need += need
	debug.SetMemoryLimit(min(encodes.before, heldNow()+encodes.need))
	return func() {
		encodes.Lock()
		defer encodes.Unlock()
		encodes.running--
		encodes.need -= need
		if encodes.running == 0 {
			debug.SetMemoryLimit(encodes.before)
			return
		}
		debug.SetMemoryLimit(min(encodes.before, heldNow()+encodes.need))
	}
}

// heldNow is the memory the Go runtime holds from the system: the quantity
// a memory limit bounds.
func heldNow() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}
