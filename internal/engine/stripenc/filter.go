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
// The loops run over slices of equal length offset by one pixel so that the
// compiler drops their bounds checks: this is the hot loop of PNG output.
func (f *rowFilter) filter(cur, prev []byte) []byte {
	n := len(cur)
	prev = prev[:n]
	left, curR := cur[:n-bpp], cur[bpp:]      // cur[i-4], cur[i] for i >= 4
	upLeft, prevR := prev[:n-bpp], prev[bpp:] // prev[i-4], prev[i]
	prevR = prevR[:len(curR)]
	upLeft = upLeft[:len(curR)]

	best, bestSum := filterNone, 0
	for _, v := range cur {
		bestSum += absSigned(v)
	}

	up := f.cand[filterUp][1:][:n]
	sum := 0
	for i, v := range cur {
		d := v - prev[i]
		up[i] = d
		sum += absSigned(d)
	}
	if sum < bestSum {
		best, bestSum = filterUp, sum
	}

	// The first pixel has no left neighbour: Sub keeps it, Average halves
	// the byte above, Paeth predicts it by the byte above (as Up).
	sub := f.cand[filterSub][1:][:n]
	sum = 0
	for i := range bpp {
		sub[i] = cur[i]
		sum += absSigned(cur[i])
	}
	subR := sub[bpp:][:len(curR)]
	for i, v := range curR {
		d := v - left[i]
		subR[i] = d
		sum += absSigned(d)
	}
	if sum < bestSum {
		best, bestSum = filterSub, sum
	}

	avg := f.cand[filterAverage][1:][:n]
	sum = 0
	for i := range bpp {
		avg[i] = cur[i] - prev[i]/2
		sum += absSigned(avg[i])
	}
	avgR := avg[bpp:][:len(curR)]
	for i, v := range curR {
		d := v - uint8((uint(left[i])+uint(prevR[i]))/2)
		avgR[i] = d
		sum += absSigned(d)
	}
	if sum < bestSum {
		best, bestSum = filterAverage, sum
	}

	pa := f.cand[filterPaeth][1:][:n]
	sum = 0
	for i := range bpp {
		pa[i] = up[i]
		sum += absSigned(up[i])
	}
	paR := pa[bpp:][:len(curR)]
	for i, v := range curR {
		// paeth(a, b, c) written out: the call is too big to be inlined.
		a, b, c := left[i], prevR[i], upLeft[i]
		pa := int(b) - int(c)
		pb := int(a) - int(c)
		pc := abs(pa + pb)
		pa, pb = abs(pa), abs(pb)
		pred := c
		if pb <= pc {
			pred = b
		}
		if pa <= pb && pa <= pc {
			pred = a
		}
		d := v - pred
		paR[i] = d
		sum += absSigned(d)
	}
	if sum < bestSum {
		best = filterPaeth
	}

	if best == filterNone {
		copy(f.cand[filterNone][1:], cur)
	}
	return f.cand[best][:1+n]
}

func abs(x int) int {
	m := x >> 63
	return (x ^ m) - m
}

// absSigned is |v| with v read as a signed byte.
func absSigned(v uint8) int { return abs(int(int8(v))) }
