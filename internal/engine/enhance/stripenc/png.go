package stripenc

import (
	"bytes"
	"encoding/binary"
	"hash/adler32"
	"hash/crc32"
	"image"
	"io"
	"sync"

	"github.com/klauspost/compress/flate"
)

// pngLevel is the deflate level of PNG output, klauspost/compress's scale.
// On a 4096 x 4096 photo-like image its level 4 deflates several times
// faster than compress/flate's default (level 6) for a file within 1% of
// its size; its level 6 saves another 2% for a third more time. A 22000 x
// 22000 output must fit the worker's time limit.
const pngLevel = 4

// PNG writes an 8-bit RGBA, non-interlaced PNG of width x height, computing
// the image strip by strip with up to workers strips in flight.
//
// Each strip is filtered (per row, the filter image/png would choose) and
// deflated on its own, ended by a sync flush: byte-aligned, non-final
// blocks, so the strips' deflate data joined in order is one zlib stream
// (the last strip ends it with the final block). Each strip goes out as one
// IDAT chunk.
func PNG(w io.Writer, width, height, workers int, fill FillNRGBA) error {
	if err := checkSize("PNG", width, height); err != nil {
		return err
	}
	rows := stripRows(width)
	n := (height + rows - 1) / rows
	rowBytes := 4 * width
	window := 2 * max(workers, 1)
	// Filtering a strip's first row needs the row above it, which another
	// worker fills.
	above := newRowRing(window+1, rowBytes)
	var adler uint32 = 1 // Adler-32 of every filtered byte so far
	run := &stripRun[*pngWorker, pngStrip]{
		n:       n,
		workers: workers,
		window:  window,
		newState: func() *pngWorker {
			z, _ := flate.NewWriter(nil, pngLevel) // the level is valid
			return &pngWorker{
				dst:    &image.NRGBA{Pix: make([]byte, rowBytes*min(rows, height)), Stride: rowBytes},
				prev:   make([]byte, rowBytes),
				filter: newRowFilter(rowBytes),
				z:      z,
			}
		},
		produce: func(pw *pngWorker, i int, r *pngStrip) error {
			y0 := i * rows
			y1 := min(y0+rows, height)
			dst := pw.dst
			dst.Rect = image.Rect(0, y0, width, y1)
			dst.Pix = dst.Pix[:cap(dst.Pix)][:rowBytes*(y1-y0)]
			clear(dst.Pix)
			if err := fill(dst); err != nil {
				return err
			}
			if i+1 < n {
				above.put(i, dst.Pix[len(dst.Pix)-rowBytes:])
			}
			if i == 0 {
				clear(pw.prev)
			} else if !above.get(i-1, pw.prev) {
				return errStopped
			}
			r.data.Reset()
			pw.z.Reset(&r.data)
			sum := adler32.New()
			prev := pw.prev
			for y := range y1 - y0 {
				cur := dst.Pix[y*rowBytes:][:rowBytes]
				f := pw.filter.filter(cur, prev)
				sum.Write(f)
				if _, err := pw.z.Write(f); err != nil {
					return err
				}
				prev = cur
			}
			var err error
			if i+1 < n {
				err = pw.z.Flush()
			} else {
				err = pw.z.Close()
			}
			r.adler, r.length = sum.Sum32(), int64(y1-y0)*int64(1+rowBytes)
			return err
		},
		consume: func(i int, r *pngStrip) error {
			if i == 0 {
				if _, err := w.Write(pngHeader(width, height)); err != nil {
					return err
				}
			}
			adler = adler32Combine(adler, r.adler, r.length)
			var head, tail []byte
			if i == 0 {
				head = []byte{0x78, 0x5e} // zlib: deflate, 32 KiB window, a fast level
			}
			if i+1 == n {
				tail = binary.BigEndian.AppendUint32(nil, adler)
			}
			return writeChunk(w, "IDAT", head, r.data.Bytes(), tail)
		},
	}
	run.onStop = above.stop // a strip waiting for a row that will never come gives up
	if err := run.run(); err != nil {
		return err
	}
	return writeChunk(w, "IEND")
}

type pngWorker struct {
	dst    *image.NRGBA
	prev   []byte // the row above the strip
	filter *rowFilter
	z      *flate.Writer
}

type pngStrip struct {
	data   bytes.Buffer // deflate data
	adler  uint32       // Adler-32 of the strip's filtered bytes
	length int64        // their count
}

func pngHeader(width, height int) []byte {
	h := []byte("\x89PNG\r\n\x1a\n")
	ihdr := binary.BigEndian.AppendUint32(nil, uint32(width))
	ihdr = binary.BigEndian.AppendUint32(ihdr, uint32(height))
	ihdr = append(ihdr, 8, 6, 0, 0, 0) // 8 bits, RGBA, deflate, adaptive filters, no interlace
	var b bytes.Buffer
	b.Write(h)
	writeChunk(&b, "IHDR", ihdr) // a bytes.Buffer does not fail
	return b.Bytes()
}

// writeChunk writes one PNG chunk whose data is parts joined.
func writeChunk(w io.Writer, kind string, parts ...[]byte) error {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	head := binary.BigEndian.AppendUint32(make([]byte, 0, 8), uint32(n))
	head = append(head, kind...)
	crc := crc32.NewIEEE()
	crc.Write(head[4:])
	if _, err := w.Write(head); err != nil {
		return err
	}
	for _, p := range parts {
		crc.Write(p)
		if _, err := w.Write(p); err != nil {
			return err
		}
	}
	_, err := w.Write(binary.BigEndian.AppendUint32(nil, crc.Sum32()))
	return err
}

// adler32Combine is the Adler-32 of A followed by B, given a = Adler-32(A),
// b = Adler-32(B) and len(B) (zlib's adler32_combine).
func adler32Combine(a, b uint32, lenB int64) uint32 {
	const mod = 65521
	rem := uint32(lenB % mod)
	s1 := a & 0xffff
	s2 := rem * s1 % mod
	s1 += b&0xffff + mod - 1
	s2 += a>>16 + b>>16 + mod - rem
	if s1 >= mod {
		s1 -= mod
	}
	if s1 >= mod {
		s1 -= mod
	}
	if s2 >= 2*mod {
		s2 -= 2 * mod
	}
	if s2 >= mod {
		s2 -= mod
	}
	return s2<<16 | s1
}

// rowRing passes each strip's last row to the worker of the next strip.
// Strip i's row lives in slot i % len(slots) until strip i+1 has read it;
// with window results in flight at most, window+1 slots are never reused
// too early.
type rowRing struct {
	mu      sync.Mutex
	cond    *sync.Cond
	strip   []int // which strip's row each slot holds, -1 for none
	rows    [][]byte
	stopped bool
}

func newRowRing(slots, rowBytes int) *rowRing {
	r := &rowRing{strip: make([]int, slots), rows: make([][]byte, slots)}
	r.cond = sync.NewCond(&r.mu)
	for i := range r.rows {
		r.strip[i] = -1
		r.rows[i] = make([]byte, rowBytes)
	}
	return r
}

func (r *rowRing) put(i int, row []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := i % len(r.rows)
	copy(r.rows[k], row)
	r.strip[k] = i
	r.cond.Broadcast()
}

// get copies strip i's last row into dst once it is there; false if the
// ring stopped first.
func (r *rowRing) get(i int, dst []byte) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := i % len(r.rows)
	for r.strip[k] != i {
		if r.stopped {
			return false
		}
		r.cond.Wait()
	}
	copy(dst, r.rows[k])
	return true
}

func (r *rowRing) stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopped = true
	r.cond.Broadcast()
}
