// The forward DCT, the colour conversion, the 4:2:0 down-sampling and the
// order of the blocks below are those of Go's image/jpeg (Copyright 2011
// and 2025 The Go Authors; BSD-style licence: https://go.dev/LICENSE), so
// that a strip codes to the very bytes image/jpeg writes for it. What is
// ours: quantizing by multiplying with reciprocals instead of dividing, a
// 64-bit bit writer appending to a slice, and no interface call per byte;
// together about twice image/jpeg's speed (BenchmarkJPEG4096).

package stripenc

import (
	"errors"
	"image"
	"image/jpeg"
	"math/bits"
)

// unzig maps a coefficient's zig-zag index to its natural index.
var unzig = [64]int{
	0, 1, 8, 16, 9, 2, 3, 10,
	17, 24, 32, 25, 18, 11, 4, 5,
	12, 19, 26, 33, 40, 48, 41, 34,
	27, 20, 13, 6, 7, 14, 21, 28,
	35, 42, 49, 56, 57, 50, 43, 36,
	29, 22, 15, 23, 30, 37, 44, 51,
	58, 59, 52, 45, 38, 31, 39, 46,
	53, 60, 61, 54, 47, 55, 62, 63,
}

// jpegCoder codes strips with the tables image/jpeg uses at one quality.
// It reads them from image/jpeg's own output rather than keeping copies, so
// the headers and the coding can never disagree.
type jpegCoder struct {
	tables jpegParts // the DQT, SOF0, DHT and SOS payloads of a tiny image
	// divisor[q][zig] divides a DCT output (scaled by 8) by 8 x the
	// quantizer, rounding half away from zero, as image/jpeg's div.
	divisor [2][64]reciprocal
	huff    [4][256]uint32 // nBits<<24 | code; 0 luma DC, 1 luma AC, 2 chroma DC, 3 chroma AC
	// zeroTest[q][k] tells whether the coefficient at natural index k
	// quantizes to 0 (reciprocal.zeroes), and its bit in nonzeroAC's mask.
	zeroTest [2][64]zeroTest
}

// zeroTest is reciprocal.zeroes as a table entry: a coefficient a
// quantizes to 0 when uint32(a)+bias < span.
type zeroTest struct {
	bias, span uint32
	bit        uint64 // 1 << the coefficient's zig-zag index
}

// reciprocal divides by d: for 0 <= u < 2^20, u*mul>>recipShift = u/d. With
// mul = 2^40/d + 1, mul*d exceeds 2^40 by e <= d < 2^12, and the result is
// exact while u*e < 2^40 (u < 2^28). A DCT output is under 2^14 in size.
type reciprocal struct {
	mul  uint64
	half int32 // d/2, added before dividing to round
	zero int32 // d - d/2: |a| below it divides to 0
}

const recipShift = 40

func newReciprocal(d int32) reciprocal {
	return reciprocal{mul: 1<<recipShift/uint64(d) + 1, half: d >> 1, zero: d - d>>1}
}

// zeroes reports whether div(a) is 0, |a| + d/2 < d, with one comparison:
// most of a block's quantized coefficients are.
func (r reciprocal) zeroes(a int32) bool {
	t := r.zeroTest(0)
	return uint32(a)+t.bias < t.span
}

// zeroTest is zeroes as a table entry for the coefficient at zig-zag index
// zig.
func (r reciprocal) zeroTest(zig int) zeroTest {
	return zeroTest{bias: uint32(r.zero - 1), span: uint32(2*r.zero - 1), bit: 1 << zig}
}

// div is image/jpeg's div(a, d): a/d rounded half away from zero.
func (r reciprocal) div(a int32) int32 {
	s := a >> 31
	u := (a ^ s) - s // |a|
	q := int32(uint64(u+r.half) * r.mul >> recipShift)
	return (q ^ s) - s
}

var errTables = errors.New("stripenc: image/jpeg's tables are not in the layout this package reads")

func newJPEGCoder(quality int) (*jpegCoder, error) {
	c := &jpegCoder{}
	if err := jpeg.Encode(&c.tables.buf, image.NewRGBA(image.Rect(0, 0, 16, 16)), &jpeg.Options{Quality: quality}); err != nil {
		return nil, err
	}
	if err := c.tables.parse(); err != nil {
		return nil, err
	}
	// DQT: per table, Pq<<4|Tq then 64 bytes in zig-zag order.
	dqt := c.tables.dqt
	if len(dqt) != 2*65 {
		return nil, errTables
	}
	for range 2 {
		if dqt[0]>>4 != 0 || dqt[0]&15 > 1 {
			return nil, errTables
		}
		q := dqt[0] & 15
		for zig, v := range dqt[1:65] {
			r := newReciprocal(8 * int32(v))
			c.divisor[q][zig] = r
			c.zeroTest[q][unzig[zig]] = r.zeroTest(zig)
		}
		dqt = dqt[65:]
	}
	// DHT: per table, Tc<<4|Th, 16 counts of codes by length, the values;
	// codes are assigned canonically, as image/jpeg's huffmanLUT.init does.
	dht := c.tables.dht
	for range 4 {
		if len(dht) < 17 || dht[0]>>4 > 1 || dht[0]&15 > 1 {
			return nil, errTables
		}
		lut := &c.huff[2*(dht[0]&15)+dht[0]>>4]
		counts := dht[1:17]
		values := dht[17:]
		code, k := uint32(0), 0
		for i, n := range counts {
			for range n {
				if k >= len(values) {
					return nil, errTables
				}
				lut[values[k]] = uint32(i+1)<<24 | code
				code++
				k++
			}
			code <<= 1
		}
		dht = values[k:]
	}
	if len(dht) != 0 {
		return nil, errTables
	}
	return c, nil
}

// bitWriter appends entropy-coded bits to buf, stuffing a 0x00 after every
// 0xFF byte. Pending bits are the low n bits of acc.
type bitWriter struct {
	buf []byte
	acc uint64
	n   uint
}

// emit appends the low n bits of v (n <= 16).
func (w *bitWriter) emit(v uint32, n uint) {
	w.acc = w.acc<<n | uint64(v)
	w.n += n
	if w.n >= 32 {
		w.n -= 32
		word := uint32(w.acc >> w.n)
		if x := ^word; (x-0x01010101)&^x&0x80808080 == 0 { // no 0xFF byte
			w.buf = append(w.buf, byte(word>>24), byte(word>>16), byte(word>>8), byte(word))
			return
		}
		for shift := 24; shift >= 0; shift -= 8 {
			w.putByte(byte(word >> shift))
		}
	}
}

func (w *bitWriter) putByte(b byte) {
	if b == 0xff {
		w.buf = append(w.buf, 0xff, 0x00)
		return
	}
	w.buf = append(w.buf, b)
}

// pad ends the data as image/jpeg does: 1 bits up to the byte's end; a last
// partial byte is dropped.
func (w *bitWriter) pad() {
	w.acc = w.acc<<7 | 0x7f
	w.n += 7
	for w.n >= 8 {
		w.n -= 8
		w.putByte(byte(w.acc >> w.n))
	}
	w.n = 0
}

func (c *jpegCoder) emitHuff(w *bitWriter, h int, v int32) {
	x := c.huff[h][v]
	w.emit(x&(1<<24-1), uint(x>>24))
}

// emitHuffRLE codes a run of zeros then the value v.
func (c *jpegCoder) emitHuffRLE(w *bitWriter, h int, run, v int32) {
	a, b := v, v
	if a < 0 {
		a, b = -v, v-1
	}
	n := uint(bits.Len32(uint32(a)))
	c.emitHuff(w, h, run<<4|int32(n))
	if n > 0 {
		w.emit(uint32(b)&(1<<n-1), n)
	}
}

// writeBlock transforms, quantizes and codes b with table q (0 luma, 1
// chroma), returning its DC for the next block's prediction.
func (c *jpegCoder) writeBlock(w *bitWriter, b *block, q int, prevDC int32) int32 {
	fdct(b)
	div := &c.divisor[q]
	dc := div[0].div(b[0])
	c.emitHuffRLE(w, 2*q, 0, dc-prevDC)
	h, last := 2*q+1, 0 // last: the zig-zag index of the last AC coded
	for m := c.nonzeroAC(b, q); m != 0; m &= m - 1 {
		zig := bits.TrailingZeros64(m)
		run := int32(zig - last - 1)
		for run > 15 {
			c.emitHuff(w, h, 0xf0)
			run -= 16
		}
		c.emitHuffRLE(w, h, run, div[zig].div(b[unzig[zig]&63]))
		last = zig
	}
	if last < 63 {
		c.emitHuff(w, h, 0x00)
	}
	return dc
}

// nonzeroAC has bit zig set for each AC coefficient of b, zig-zag index zig
// (1 to 63), that quantizes to other than 0 with table q. A block of an
// enlarged photo has a few: testing the 63 in b's own order against
// tables, then visiting the bits set, costs fewer instructions than a loop
// over the zig-zag order that counts the zeros between them.
func (c *jpegCoder) nonzeroAC(b *block, q int) uint64 {
	var m uint64
	t := &c.zeroTest[q]
	for k := 1; k < 64; k++ {
		z := &t[k]
		if uint32(b[k])+z.bias >= z.span {
			m |= z.bit
		}
	}
	return m
}

// jpegScan is the coding of one restart interval under way: its bits so
// far and the DC predictions.
type jpegScan struct {
	w                           bitWriter
	prevDCY, prevDCCb, prevDCCr int32
}

// newScan starts the entropy-coded data of a restart interval, appended to
// dst.
func (c *jpegCoder) newScan(dst []byte) jpegScan { return jpegScan{w: bitWriter{buf: dst}} }

// encodeRows codes the MCUs of m (4:2:0, MCUs of 16 x 16, edges repeated)
// into s, as image/jpeg's writeSOS codes an *image.RGBA: m's rows are a
// whole number of MCU rows of the interval, or its last rows.
func (c *jpegCoder) encodeRows(s *jpegScan, m *image.RGBA) {
	var (
		b      block
		cb, cr [4]block
		yb     [4]block
	)
	r := m.Rect
	for y := r.Min.Y; y < r.Max.Y; y += 16 {
		for x := r.Min.X; x < r.Max.X; x += 16 {
			if x+16 <= r.Max.X && y+16 <= r.Max.Y { // all but the edges' MCUs
				mcuToYCbCr(m, x, y, &yb, &cb[0], &cr[0])
				for i := range yb {
					s.prevDCY = c.writeBlock(&s.w, &yb[i], 0, s.prevDCY)
				}
				s.prevDCCb = c.writeBlock(&s.w, &cb[0], 1, s.prevDCCb)
				s.prevDCCr = c.writeBlock(&s.w, &cr[0], 1, s.prevDCCr)
				continue
			}
			for i := range 4 {
				rgbaToYCbCr(m, x+(i&1)*8, y+(i&2)*4, &b, &cb[i], &cr[i])
				s.prevDCY = c.writeBlock(&s.w, &b, 0, s.prevDCY)
			}
			scale(&b, &cb)
			s.prevDCCb = c.writeBlock(&s.w, &b, 1, s.prevDCCb)
			scale(&b, &cr)
			s.prevDCCr = c.writeBlock(&s.w, &b, 1, s.prevDCCr)
		}
	}
}

// finish ends the interval's data and returns it.
func (s *jpegScan) finish() []byte {
	s.w.pad()
	return s.w.buf
}

// encode appends the entropy-coded data of m, one restart interval, to dst.
func (c *jpegCoder) encode(dst []byte, m *image.RGBA) []byte {
	s := c.newScan(dst)
	c.encodeRows(&s, m)
	return s.finish()
}

// mcuToYCbCr converts the 16 x 16 MCU at (px, py), wholly inside m, into
// its four luma blocks (in coding order) and its chroma blocks, each
// chroma sample the average of four pixels': rgbaToYCbCr's arithmetic,
// then scale's, a 2 x 2 quad of pixels at a time, without storing the
// pixels' own chroma in between.
func mcuToYCbCr(m *image.RGBA, px, py int, yb *[4]block, cbBlock, crBlock *block) {
	r := m.Rect
	o := (py-r.Min.Y)*m.Stride + 4*(px-r.Min.X)
	for cy := range 8 {
		top := (*[64]byte)(m.Pix[o+2*cy*m.Stride:])
		bottom := (*[64]byte)(m.Pix[o+(2*cy+1)*m.Stride:])
		// Rows 2cy and 2cy+1 of the MCU are rows (2cy)%8 and (2cy)%8+1 of
		// blocks 0 and 1 (cy < 4) or 2 and 3.
		lo := 2 * (cy >> 2)
		row := 16 * (cy & 3)
		yl := (*[16]int32)(yb[lo][row:])   // block lo, rows 2cy%8, 2cy%8+1
		yr := (*[16]int32)(yb[lo+1][row:]) // the block to its right
		cbRow, crRow := (*[8]int32)(cbBlock[8*cy:]), (*[8]int32)(crBlock[8*cy:])
		for cx := range 8 {
			p, q := (*[8]byte)(top[8*cx:]), (*[8]byte)(bottom[8*cx:])
			y0, cb0, cr0 := ycc(p[0], p[1], p[2])
			y1, cb1, cr1 := ycc(p[4], p[5], p[6])
			y2, cb2, cr2 := ycc(q[0], q[1], q[2])
			y3, cb3, cr3 := ycc(q[4], q[5], q[6])
			yd := yl
			if cx >= 4 {
				yd = yr
			}
			i := 2 * (cx & 3)
			yd[i], yd[i+1], yd[8+i], yd[8+i+1] = y0, y1, y2, y3
			cbRow[cx] = (cb0 + cb1 + cb2 + cb3 + 2) >> 2
			crRow[cx] = (cr0 + cr1 + cr2 + cr3 + 2) >> 2
		}
	}
}

// ycc is one pixel's Y, Cb and Cr with rgbaToYCbCr's arithmetic.
func ycc(r, g, b byte) (y, cb, cr int32) {
	r1, g1, b1 := int32(r), int32(g), int32(b)
	y = (19595*r1 + 38470*g1 + 7471*b1 + 1<<15) >> 16
	cb = min((-11056*r1-21712*g1+32768*b1+257<<15)>>16, 255)
	cr = min((32768*r1-27440*g1-5328*b1+257<<15)>>16, 255)
	return y, cb, cr
}

// rgbaToYCbCr converts the 8 x 8 block at (px, py), repeating the last
// column and row past the image's edge, with color.RGBToYCbCr's arithmetic.
func rgbaToYCbCr(m *image.RGBA, px, py int, yBlock, cbBlock, crBlock *block) {
	r := m.Rect
	var edge [32]byte // a row of the block whose right part lies past the edge
	for j := range 8 {
		sy := min(py+j, r.Max.Y-1)
		row := m.Pix[(sy-r.Min.Y)*m.Stride:][:4*r.Dx()]
		var p *[32]byte
		if x := px - r.Min.X; x+8 <= r.Dx() {
			p = (*[32]byte)(row[4*x:])
		} else {
			for i := range 8 {
				sx := min(x+i, r.Dx()-1)
				copy(edge[4*i:4*i+4], row[4*sx:])
			}
			p = &edge
		}
		yb, cbb, crb := (*[8]int32)(yBlock[8*j:]), (*[8]int32)(cbBlock[8*j:]), (*[8]int32)(crBlock[8*j:])
		for i := range 8 {
			r1, g1, b1 := int32(p[4*i]), int32(p[4*i+1]), int32(p[4*i+2])
			yy := (19595*r1 + 38470*g1 + 7471*b1 + 1<<15) >> 16
			// color.RGBToYCbCr clamps Cb and Cr to [0, 255] by a test of
			// the high byte. From 8-bit R, G, B neither is below 1<<16,
			// and both reach 256<<16 (pure blue, pure red): min clamps
			// them alike, without a branch.
			cb := -11056*r1 - 21712*g1 + 32768*b1 + 257<<15
			cr := 32768*r1 - 27440*g1 - 5328*b1 + 257<<15
			yb[i] = yy
			cbb[i] = min(cb>>16, 255)
			crb[i] = min(cr>>16, 255)
		}
	}
}

// scale averages the four 8 x 8 blocks of a 16 x 16 MCU down to one.
func scale(dst *block, src *[4]block) {
	for i := range 4 {
		dstOff := (i&2)<<4 | (i&1)<<2
		for y := range 4 {
			top, bottom := (*[8]int32)(src[i][16*y:]), (*[8]int32)(src[i][16*y+8:])
			d := (*[4]int32)(dst[8*y+dstOff:])
			for x := range 4 {
				sum := top[2*x] + top[2*x+1] + bottom[2*x] + bottom[2*x+1]
				d[x] = (sum + 2) >> 2
			}
		}
	}
}
