package generate

import (
	"crypto/sha256"
	"encoding/binary"
	"image"
	"math"
	"slices"
)

// DefaultSeed is the seed of a request that gives none: the video
// schemas say "random when absent", but a reference engine stays
// reproducible, and model-e-4's schema default is the same number.
const DefaultSeed = 1337

// RNG is SplitMix64: tiny, fast and, unlike math/rand's helpers, fixed
// forever, so a (prompt, seed) pair gives the same bytes on every Go release.
type RNG struct{ state uint64 }

// NewRNG seeds a generator from everything that must change the output.
func NewRNG(kind, prompt string, seed int64) *RNG {
	h := sha256.New()
	h.Write([]byte(kind))
	h.Write([]byte{0})
	h.Write([]byte(prompt))
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(seed))
	h.Write(b[:])
	return &RNG{state: binary.LittleEndian.Uint64(h.Sum(nil))}
}

func (r *RNG) next() uint64 {
	r.state += 0x9e3779b97f4a7c15
	z := r.state
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// float returns a number in [0, 1).
func (r *RNG) Float() float64 { return float64(r.next()>>11) / (1 << 53) }

// between returns a number in [lo, hi).
func (r *RNG) Between(lo, hi float64) float64 { return lo + (hi-lo)*r.Float() }

// intn returns an integer in [0, n).
func (r *RNG) Intn(n int) int { return int(r.next() % uint64(n)) }

// RGB is a colour with channels in 0..1 (sRGB-encoded).
type RGB struct{ R, G, B float64 }

func (c RGB) Mix(d RGB, t float64) RGB {
	return RGB{c.R + (d.R-c.R)*t, c.G + (d.G-c.G)*t, c.B + (d.B-c.B)*t}
}

func (c RGB) scale(k float64) RGB {
	return RGB{min(c.R*k, 1), min(c.G*k, 1), min(c.B*k, 1)}
}

func genHSV(h, s, v float64) RGB {
	h = math.Mod(h, 1)
	if h < 0 {
		h++
	}
	i := math.Floor(h * 6)
	f := h*6 - i
	p, q, t := v*(1-s), v*(1-s*f), v*(1-s*(1-f))
	switch int(i) % 6 {
	case 0:
		return RGB{v, t, p}
	case 1:
		return RGB{q, v, p}
	case 2:
		return RGB{p, v, t}
	case 3:
		return RGB{p, q, v}
	case 4:
		return RGB{t, p, v}
	}
	return RGB{v, p, q}
}

// genPaletteSize is how many colours a scene is painted with.
const genPaletteSize = 5

// RandomPalette draws a harmonious palette: hues around one base hue and
// its complement, from dark to light.
func RandomPalette(rng *RNG) []RGB {
	base := rng.Float()
	offsets := []float64{0, 0.08, -0.08, 0.5, 0.42}
	pal := make([]RGB, genPaletteSize)
	for i := range pal {
		pal[i] = genHSV(base+offsets[i]+rng.Between(-0.03, 0.03),
			rng.Between(0.35, 0.9), rng.Between(0.25, 0.95))
	}
	return pal
}

// genHistogram counts the colours of style images, to paint with their
// dominant ones: 4-bit channels, up to 96 x 96 samples an image, so a large
// image costs no more than a small one and need not be kept.
type genHistogram struct {
	bins [4096]struct {
		n       int
		r, g, b float64
	}
	total int
}

func (hist *genHistogram) add(img image.Image) {
	b := img.Bounds()
	nx, ny := min(b.Dx(), 96), min(b.Dy(), 96)
	for j := range ny {
		y := b.Min.Y + (2*j+1)*b.Dy()/(2*ny)
		for i := range nx {
			x := b.Min.X + (2*i+1)*b.Dx()/(2*nx)
			r, g, bl, _ := img.At(x, y).RGBA()
			bin := &hist.bins[int(r>>12)<<8|int(g>>12)<<4|int(bl>>12)]
			bin.n++
			bin.r += float64(r) / 0xffff
			bin.g += float64(g) / 0xffff
			bin.b += float64(bl) / 0xffff
			hist.total++
		}
	}
}

// palette returns the mean colours of the most frequent bins (ties by bin,
// so the result is stable), topped up with lighter and darker variants when
// there are too few, in an order rng shuffles: the seed still matters.
// Without samples it is RandomPalette.
func (hist *genHistogram) palette(rng *RNG) []RGB {
	if hist.total == 0 {
		return RandomPalette(rng)
	}
	order := make([]int, 0, len(hist.bins))
	for k := range hist.bins {
		if hist.bins[k].n > 0 {
			order = append(order, k)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return hist.bins[b].n - hist.bins[a].n })
	var pal []RGB
	for _, k := range order[:min(len(order), genPaletteSize)] {
		bin, n := hist.bins[k], float64(hist.bins[k].n)
		pal = append(pal, RGB{bin.r / n, bin.g / n, bin.b / n})
	}
	for i := 0; len(pal) < genPaletteSize; i++ {
		k := 0.6 + 0.25*float64(i%3)
		if i%2 == 1 {
			k = 1.25 + 0.2*float64(i%3)
		}
		pal = append(pal, pal[i%len(pal)].scale(k))
	}
	for i := len(pal) - 1; i > 0; i-- {
		j := rng.Intn(i + 1)
		pal[i], pal[j] = pal[j], pal[i]
	}
	return pal
}
