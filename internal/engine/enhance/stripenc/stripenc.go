// Package stripenc encodes images that are computed strip by strip, so that
// a large output never exists whole in memory: JPEG and PNG hold a few
// strips per worker whatever the image's height, and write their bytes as
// the strips finish, in order. WebP's encoder needs the whole image; only
// its filling is split into strips.
//
// The caller's fill computes one strip of rows (JPEG: one band of a strip,
// see below). Several fills run at once, on disjoint strips, and the
// encoding of each strip runs on the goroutine that filled it; the writer
// is called on the caller's goroutine only.
// What a fill may count on, to bound what it keeps (source rows, say):
//   - strips are handed to the workers in order of their rows (two fills
//     handed out together may still begin in either order);
//   - strip i starts only once strip i - 2 x workers has been encoded and
//     written (JPEG, PNG) or filled (WebP);
//   - every strip is StripHeight rows tall (narrow images: taller, see
//     stripRows), the last one possibly shorter;
//   - JPEG fills a strip in bands of whole MCU rows (bandRows), one after
//     the other on one goroutine, so that a worker holds a band of 8-bit
//     rows rather than a strip; a fill that keeps state from one call to
//     the next (rows around the last one) finds the strip's next band
//     following the last one it filled.
//
// To cancel, make fill return an error (ctx.Err(), say): no strip starts
// after it, and the encoder returns it once the strips under way are done.
// workers below 1 count as 1.
package stripenc

import (
	"errors"
	"fmt"
	"image"
	"sync"
	"sync/atomic"
)

// FillRGBA computes the output rows dst.Rect.Min.Y .. dst.Rect.Max.Y-1 into
// dst (dst.Rect = image.Rect(0, y0, width, y1)); dst's pixels are zero on
// entry. It is called from several goroutines at once for disjoint strips;
// an error stops the encoding and is returned.
type FillRGBA func(dst *image.RGBA) error

// FillNRGBA is FillRGBA for non-premultiplied pixels.
type FillNRGBA func(dst *image.NRGBA) error

// StripHeight is the usual number of rows one fill computes. A strip of a
// narrow image has more rows (see stripRows) and the last strip of an image
// may have fewer. It is a multiple of 16, a JPEG 4:2:0 MCU row.
const StripHeight = 64

// minBandPixels is the least a JPEG strip's band holds (bandRows).
const minBandPixels = 1 << 14

// bandRows is how many rows of a JPEG strip of rows rows, width pixels
// wide, are filled at once: whole MCU rows (16), enough of them to make a
// fill's fixed cost small. A worker then holds a band of 8-bit rows, not a
// strip: a quarter of it at 1024 pixels wide and more.
func bandRows(width, rows int) int {
	band := (minBandPixels/width + 15) &^ 15
	return min(max(band, 16), rows)
}

// minStripPixels keeps strips of narrow images from being so small that the
// cost of a task (a fresh JPEG encoder, a deflate stream that forgets its
// window) outweighs its work.
const minStripPixels = 1 << 16

// maxSide is the largest width or height JPEG can store; PNG could store
// more, but no output of this service comes near it.
const maxSide = 65535

// stripRows is the height of the strips of an image width pixels wide.
func stripRows(width int) int {
	rows := StripHeight
	if width*rows < minStripPixels {
		rows = (minStripPixels/width + 15) &^ 15
	}
	return rows
}

func checkSize(format string, width, height int) error {
	if width < 1 || height < 1 || width > maxSide || height > maxSide {
		return fmt.Errorf("stripenc: a %s of %d x %d pixels cannot be encoded (each side 1 to %d)",
			format, width, height, maxSide)
	}
	return nil
}

// errStopped marks a strip skipped because another one failed; it never
// reaches the caller.
var errStopped = errors.New("stripenc: stopped")

// stripRun computes strips 0..n-1 on up to workers goroutines and hands each
// strip's result to consume, in order, on the calling goroutine. Strip i
// starts only once fewer than window results are waiting to be consumed, so
// memory holds at most window results (plus each worker's own state S),
// whatever n is. The first error (a produce's, a panic in it, or consume's)
// stops the run: no strip starts after it, the strips under way finish, and
// run returns that error once every worker has returned.
type stripRun[S, R any] struct {
	n, workers, window int
	newState           func() S
	produce            func(state S, i int, r *R) error
	consume            func(i int, r *R) error
	onStop             func() // optional: wakes whatever a produce may wait on

	quit     chan struct{}
	stopOnce sync.Once
	err      error // set once, before quit is closed
}

type stripResult[R any] struct {
	r   *R
	err error
}

// stop records err as the run's error unless one is recorded, and tells the
// workers to start no more strips.
func (s *stripRun[S, R]) stop(err error) {
	s.stopOnce.Do(func() {
		s.err = err
		close(s.quit)
		if s.onStop != nil {
			s.onStop()
		}
	})
}

func (s *stripRun[S, R]) run() error {
	s.quit = make(chan struct{})
	s.workers = max(1, min(s.workers, s.n))
	s.window = max(s.window, s.workers)
	free := make(chan *R, s.window) // a result to fill is also the permit to start a strip
	for range s.window {
		free <- new(R)
	}
	done := make([]chan stripResult[R], s.window) // strip i reports on done[i%window]
	for i := range done {
		done[i] = make(chan stripResult[R], 1)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range s.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			state := s.newState()
			for {
				var r *R
				select {
				case r = <-free:
				case <-s.quit:
					return
				}
				i := int(next.Add(1) - 1)
				if i >= s.n {
					return
				}
				err := errStopped
				select {
				case <-s.quit:
				default:
					if err = s.protect(state, i, r); err != nil {
						s.stop(err)
					}
				}
				done[i%s.window] <- stripResult[R]{r, err}
			}
		}()
	}
	defer wg.Wait()
	defer s.stop(errStopped) // a consume that panics still stops the workers
	for i := range s.n {
		res := <-done[i%s.window]
		if res.err != nil {
			break
		}
		if err := s.consume(i, res.r); err != nil {
			s.stop(err)
			break
		}
		free <- res.r
	}
	// Whatever stopped the run recorded its error first; with none, every
	// strip was consumed.
	s.stop(nil)
	return s.err
}

// protect runs produce, turning a panic into an error: a bug in one fill
// must fail the encoding, not the process.
func (s *stripRun[S, R]) protect(state S, i int, r *R) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("stripenc: strip %d panicked: %v", i, p)
		}
	}()
	return s.produce(state, i, r)
}
