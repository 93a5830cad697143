package generate

import (
	"image"
	"math"
)

// genScene is a procedural picture: a gradient between two palette colours,
// fractal value noise, then soft shaded discs and bands. Everything is drawn
// from the generator at construction and placed relative to the short side,
// so one (prompt, seed) looks alike at every size, and any row can be
// painted on its own (in parallel).
type genScene struct {
	w, h       int
	unit       float64 // pixels per scene unit: the short side
	pal        []RGB
	dirX, dirY float64 // gradient direction
	noise      [3]genLattice
	shapes     []genShape
}

// genLattice is one octave of value noise: random values on a grid.
type genLattice struct {
	freq   float64 // cells per scene unit
	stride int
	v      []float64
}

type genShape struct {
	band           bool    // a soft stripe rather than a disc
	cx, cy         float64 // centre, in scene units from the picture's centre
	r              float64 // radius, or half width of a band
	nx, ny         float64 // a band's normal
	soft           float64 // share of r over which the edge fades
	alpha          float64
	col            RGB
	y0, y1         int // rows it may touch
	x0, x1         int // columns it may touch (discs)
	lightX, lightY float64
}

func newGenScene(rng *RNG, pal []RGB, w, h int) *genScene {
	s := &genScene{w: w, h: h, unit: float64(min(w, h)), pal: pal}
	a := rng.Between(0, 2*math.Pi)
	s.dirX, s.dirY = math.Cos(a), math.Sin(a)
	hw, hh := float64(w)/s.unit/2, float64(h)/s.unit/2 // half extents in units
	for k := range s.noise {
		freq := 3 * float64(int(1)<<k)
		nx, ny := int(math.Ceil(2*hw*freq))+2, int(math.Ceil(2*hh*freq))+2
		l := genLattice{freq: freq, stride: nx, v: make([]float64, nx*ny)}
		for i := range l.v {
			l.v[i] = rng.Float()
		}
		s.noise[k] = l
	}
	n := 6 + rng.Intn(7)
	for range n {
		sh := genShape{
			band:  rng.Float() < 0.25,
			cx:    rng.Between(-hw, hw),
			cy:    rng.Between(-hh, hh),
			soft:  rng.Between(0.05, 0.6),
			alpha: rng.Between(0.35, 0.9),
			col:   pal[2+rng.Intn(len(pal)-2)],
		}
		if sh.band {
			sh.r = rng.Between(0.02, 0.12)
			a := rng.Between(0, math.Pi)
			sh.nx, sh.ny = math.Cos(a), math.Sin(a)
			sh.y0, sh.y1, sh.x0, sh.x1 = 0, h, 0, w
		} else {
			sh.r = rng.Between(0.05, 0.35)
			sh.lightX, sh.lightY = rng.Between(-0.5, 0.5), rng.Between(-0.6, -0.2)
			px, py := s.toPixel(sh.cx, sh.cy)
			rp := sh.r*s.unit + 2
			sh.x0, sh.x1 = max(int(px-rp), 0), min(int(px+rp)+1, w)
			sh.y0, sh.y1 = max(int(py-rp), 0), min(int(py+rp)+1, h)
		}
		s.shapes = append(s.shapes, sh)
	}
	return s
}

func (s *genScene) toPixel(ux, uy float64) (float64, float64) {
	return ux*s.unit + float64(s.w)/2, uy*s.unit + float64(s.h)/2
}

// at samples the lattice at (ux, uy) scene units, smoothly interpolated.
func (l *genLattice) at(ux, uy, hw, hh float64) float64 {
	fx, fy := (ux+hw)*l.freq, (uy+hh)*l.freq
	ix, iy := int(fx), int(fy)
	tx, ty := genSmooth(fx-float64(ix)), genSmooth(fy-float64(iy))
	i := iy*l.stride + ix
	top := l.v[i] + (l.v[i+1]-l.v[i])*tx
	bot := l.v[i+l.stride] + (l.v[i+l.stride+1]-l.v[i+l.stride])*tx
	return top + (bot-top)*ty
}

func genSmooth(t float64) float64 { return t * t * (3 - 2*t) }

func genSmoothstep(a, b, x float64) float64 {
	t := min(max((x-a)/(b-a), 0), 1)
	return genSmooth(t)
}

// paintRows paints rows [y0, y1) of dst, which is s.w x s.h at (0, 0).
func (s *genScene) paintRows(dst *image.RGBA, y0, y1 int) {
	hw, hh := float64(s.w)/s.unit/2, float64(s.h)/s.unit/2
	active := make([]*genShape, 0, len(s.shapes))
	for y := y0; y < y1; y++ {
		uy := (float64(y) + 0.5 - float64(s.h)/2) / s.unit
		active = active[:0]
		for i := range s.shapes {
			if sh := &s.shapes[i]; y >= sh.y0 && y < sh.y1 {
				active = append(active, sh)
			}
		}
		row := dst.Pix[y*dst.Stride : y*dst.Stride+4*s.w]
		for x := range s.w {
			ux := (float64(x) + 0.5 - float64(s.w)/2) / s.unit
			t := genSmoothstep(-0.8, 0.8, ux*s.dirX+uy*s.dirY)
			c := s.pal[0].Mix(s.pal[1], t)
			n := 0.5*s.noise[0].at(ux, uy, hw, hh) + 0.3*s.noise[1].at(ux, uy, hw, hh) +
				0.2*s.noise[2].at(ux, uy, hw, hh)
			c = c.Mix(s.pal[2], 0.5*genSmoothstep(0.4, 0.8, n)).scale(0.8 + 0.4*n)
			for _, sh := range active {
				if x < sh.x0 || x >= sh.x1 {
					continue
				}
				c = sh.over(c, ux, uy)
			}
			v := 1 - 0.3*(ux*ux+uy*uy)/(hw*hw+hh*hh) // a light vignette
			row[4*x] = genByte(c.R * v)
			row[4*x+1] = genByte(c.G * v)
			row[4*x+2] = genByte(c.B * v)
			row[4*x+3] = 0xff
		}
	}
}

// genBandPixels is how many pixels genScene.paint paints between two
// reports: tens of milliseconds of work.
const genBandPixels = 1 << 19

// paint paints all of dst, which is s.w x s.h at (0, 0), band by band,
// reporting after each band, progress rising from p's to limit.
func (s *genScene) paint(p *Progress, dst *image.RGBA, limit float64) error {
	start := p.last
	band := max(genBandPixels/s.w, 1)
	for y := 0; y < s.h; y += band {
		y1 := min(y+band, s.h)
		genParallelRows(y, y1, func(a, b int) { s.paintRows(dst, a, b) })
		if err := p.To(start+(limit-start)*float64(y1)/float64(s.h), nil); err != nil {
			return err
		}
	}
	return nil
}

// over composites the shape over c at (ux, uy): discs are shaded as if lit
// from above, so they read as spheres.
func (sh *genShape) over(c RGB, ux, uy float64) RGB {
	dx, dy := ux-sh.cx, uy-sh.cy
	if sh.band {
		d := math.Abs(dx*sh.nx+dy*sh.ny) / sh.r
		if d >= 1 {
			return c
		}
		return c.Mix(sh.col, sh.alpha*(1-genSmoothstep(1-sh.soft, 1, d)))
	}
	d2 := (dx*dx + dy*dy) / (sh.r * sh.r)
	if d2 >= 1 {
		return c
	}
	d := math.Sqrt(d2)
	lx, ly := dx/sh.r-sh.lightX, dy/sh.r-sh.lightY
	shade := 1.25 - 0.6*math.Sqrt(lx*lx+ly*ly)
	return c.Mix(sh.col.scale(max(shade, 0.3)), sh.alpha*(1-genSmoothstep(1-sh.soft, 1, d)))
}

// genByte turns a channel in 0..1 into a byte, rounding.
func genByte(v float64) uint8 {
	return uint8(min(max(v, 0), 1)*255 + 0.5)
}
