package stripenc

// PNG's row filters (RFC 2083 section 6) for 4 bytes a pixel, and the
// heuristic image/png and libpng use to pick one per row: the filter whose
// output has the least sum of absolute values, read as signed bytes.

const (
	filterNone = iota
	filterSub
	filterUp
	filterAverage
	filterPaeth
	filterCount
)

const bpp = 4 // bytes a pixel: 8-bit RGBA

// rowFilter holds one row's candidate filterings; each candidate is the
// filter type byte followed by the filtered row.
type rowFilter struct {
	cand [filterCount][]byte
}

func newRowFilter(rowBytes int) *rowFilter {
	f := &rowFilter{}
	for i := range f.cand {
		f.cand[i] = make([]byte, 1+rowBytes)
		f.cand[i][0] = byte(i)
	}
	return f
}

// filter returns the best filtering of cur, whose previous row is prev
// (zeros for the image's first row); len(cur) = len(prev), a multiple of 4.
// The result is valid until the next call.
//
// Paeth goes first: on photographs it wins most rows, and its sum then cuts
// the other candidates short (checked every filterChunk bytes). The loops
// run over slices of equal length, offset by one pixel, so that the
// compiler drops their bounds checks: this is the hot loop of PNG output.
func (f *rowFilter) filter(cur, prev []byte) []byte {
	prev = prev[:len(cur)]
	best, bestSum := filterPaeth, f.paeth(cur, prev)
	for _, k := range [...]int{filterUp, filterSub, filterAverage, filterNone} {
		if s, ok := f.try(k, cur, prev, bestSum); ok {
			best, bestSum = k, s
		}
	}
	if best == filterNone {
		copy(f.cand[filterNone][1:], cur)
	}
	return f.cand[best][:1+len(cur)]
}

const filterChunk = 512

func (f *rowFilter) paeth(cur, prev []byte) int {
	n := len(cur)
	out := f.cand[filterPaeth][1:][:n]
	sum := 0
	for i := range bpp { // no left neighbour: the predictor is the byte above
		out[i] = cur[i] - prev[i]
		sum += absSigned(out[i])
	}
	c, l := cur[bpp:], cur[:n-bpp]
	u, ul := prev[bpp:][:len(c)], prev[:n-bpp][:len(c)]
	o := out[bpp:][:len(c)]
	for i, v := range c {
		// The nearest of a (left), b (up) and c (up-left) to p = a + b - c,
		// ties going to a then b, chosen with masks: branches on photo data
		// are mispredicted half the time.
		a, b, c := int(l[i]), int(u[i]), int(ul[i])
		pa := b - c        // p - a
		pb := a - c        // p - b
		pc := abs(pa + pb) // |p - c|
		pa, pb = abs(pa), abs(pb)
		bc := b ^ ((b ^ c) & ((pc - pb) >> 63))       // pb <= pc ? b : c
		least := pc + ((pb - pc) & ((pb - pc) >> 63)) // min(pb, pc)
		pred := a ^ ((a ^ bc) & ((least - pa) >> 63)) // pa <= least ? a : bc
		d := v - byte(pred)
		o[i] = d
		sum += absSigned(d)
	}
	return sum
}

// try computes filter k into its candidate while its sum stays under bound;
// ok says whether it did.
func (f *rowFilter) try(k int, cur, prev []byte, bound int) (sum int, ok bool) {
	n := len(cur)
	out := f.cand[k][1:][:n]
	for i := range bpp { // the first pixel, which has no left neighbour
		var d byte
		switch k {
		case filterUp:
			d = cur[i] - prev[i]
		case filterAverage:
			d = cur[i] - prev[i]/2
		default: // None, Sub
			d = cur[i]
		}
		out[i] = d
		sum += absSigned(d)
	}
	for lo := bpp; lo < n; lo += filterChunk {
		hi := min(lo+filterChunk, n)
		c, l := cur[lo:hi], cur[lo-bpp:hi-bpp]
		u := prev[lo:hi][:len(c)]
		l = l[:len(c)]
		o := out[lo:hi][:len(c)]
		switch k {
		case filterNone:
			for _, v := range c {
				sum += absSigned(v)
			}
		case filterSub:
			for i, v := range c {
				d := v - l[i]
				o[i] = d
				sum += absSigned(d)
			}
		case filterUp:
			for i, v := range c {
				d := v - u[i]
				o[i] = d
				sum += absSigned(d)
			}
		case filterAverage:
			for i, v := range c {
				d := v - uint8((uint(l[i])+uint(u[i]))/2)
				o[i] = d
				sum += absSigned(d)
			}
		}
		if sum >= bound {
			return sum, false
		}
	}
	return sum, sum < bound
}

func abs(x int) int {
	m := x >> 63
	return (x ^ m) - m
}

// absSigned is |v| with v read as a signed byte.
func absSigned(v uint8) int { return int(absTable[v]) }

// absTable[v] is |int8(v)|: a load is cheaper than the arithmetic in the
// filters' loops.
var absTable = func() (t [256]uint8) {
	for v := range t {
		t[v] = uint8(abs(int(int8(v))))
	}
	return t
}()
