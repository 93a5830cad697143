// Package mesh is the reference engine of the 3D model (model-g-3.1-rapid):
// binary glTF files of a mesh drawn from the prompt or raised from a picture.
package mesh

import (
	"context"
	"encoding/json"
	"fmt"
	"image"
	"math"

	"genjobs/internal/engine"
	"genjobs/internal/engine/generate"
)

// Engine is the reference engine of model-g-3.1-rapid: one binary glTF 2.0
// file (GLB) holding one mesh with vertex normals and colours.
//
// Text mode: a closed blob, a sphere displaced by a few smooth waves and
// stretched, all drawn from a generator seeded by the prompt (the schema
// has no seed; an empty prompt is a valid request and gives the default
// object), coloured by height from a palette drawn from the same generator.
//
// Image mode: a relief of the first image of image_urls, standing upright
// in the XY plane and facing +Z (the default camera's view): the picture's
// aspect ratio, its lighter parts raised toward the viewer, each vertex
// coloured by the picture. The other images are decoded (a bad one fails
// the job as invalid input) but shape nothing: a relief shows one picture.
//
// The same request and images always give the same bytes.
type Engine struct{}

type genMeshRequest struct {
	Mode   string `json:"mode"`
	Prompt string `json:"prompt"`
}

const (
	// meshRings and meshSegments are the text mode sphere's latitude
	// bands and longitude steps: 18,242 vertices, 36,480 triangles.
	meshRings    = 96
	meshSegments = 192
	// meshReliefSide is how many vertices the relief has along the
	// picture's long side: at most 65,536 vertices, 130,050 triangles.
	meshReliefSide = 256
	// meshReliefDepth is how far white stands out from black, as a share
	// of the relief's long side.
	meshReliefDepth = 0.08
)

// Run implements Engine. It calls report from its own goroutine only.
func (Engine) Run(ctx context.Context, j engine.Job, report engine.Report) (files []engine.File, err error) {
	defer generate.Recover(j.Model, &files, &err)
	var req genMeshRequest
	if err := json.Unmarshal(j.Request, &req); err != nil {
		return nil, fmt.Errorf("engine: %s request: %w", j.Model, err)
	}
	mode := req.Mode
	if mode == "" { // the catalog fills it; the same rule
		mode = "text"
		if len(j.Inputs) > 0 {
			mode = "image"
		}
	}
	// The catalog refuses both mismatches; here they are the service's fault.
	switch {
	case mode == "image" && len(j.Inputs) == 0:
		return nil, fmt.Errorf("engine: %s image mode without an image", j.Model)
	case mode == "text" && len(j.Inputs) > 0:
		return nil, fmt.Errorf("engine: %s text mode with %d images", j.Model, len(j.Inputs))
	case mode != "image" && mode != "text":
		return nil, fmt.Errorf("engine: %s mode %q", j.Model, mode)
	}
	p := generate.NewProgress(ctx, report)
	if err := p.To(0.01, nil); err != nil {
		return nil, err
	}

	var m *genMesh
	if mode == "text" {
		m = meshBlob(generate.NewRNG(j.Model, req.Prompt, generate.DefaultSeed))
	} else {
		var relief *image.RGBA
		err := p.DecodeInputs(j.Inputs, 0.6, func(ctx context.Context, _ engine.Input, img image.Image) error {
			if relief != nil {
				return nil
			}
			b := img.Bounds()
			long := max(b.Dx(), b.Dy())
			w := max(int(math.Round(float64(meshReliefSide*b.Dx())/float64(long))), 2)
			h := max(int(math.Round(float64(meshReliefSide*b.Dy())/float64(long))), 2)
			var err error
			relief, err = generate.CoverFit(ctx, img, w, h)
			return err
		})
		if err != nil {
			return nil, err
		}
		m = meshRelief(relief)
	}
	if err := p.To(0.7, nil); err != nil {
		return nil, err
	}
	m.computeNormals()
	if err := p.To(0.8, nil); err != nil {
		return nil, err
	}
	data, err := encodeGLB(m)
	if err != nil {
		return nil, err
	}
	if err := p.To(0.95, nil); err != nil {
		return nil, err
	}
	return []engine.File{{ContentType: "model/gltf-binary", Ext: "glb", Data: data}}, nil
}

// meshWave is one smooth bump pattern over the sphere: amp * sin(freq *
// (d . dir) + phase) for a unit direction d.
type meshWave struct {
	dir         [3]float64
	freq, phase float64
	amp         float64
}

// meshBlob builds the text mode object: a UV sphere (one vertex at each
// pole, so no triangle is degenerate) whose radius along each direction is
// 1 plus the waves, then stretched along the axes; about 2 units across.
func meshBlob(rng *generate.RNG) *genMesh {
	waves := make([]meshWave, 3+rng.Intn(4))
	for k := range waves {
		// A uniformly random direction: z uniform in [-1, 1], angle uniform.
		z, a := rng.Between(-1, 1), rng.Between(0, 2*math.Pi)
		s := math.Sqrt(1 - z*z)
		waves[k] = meshWave{
			dir:   [3]float64{s * math.Cos(a), s * math.Sin(a), z},
			freq:  rng.Between(1.5, 5),
			phase: rng.Between(0, 2*math.Pi),
			amp:   rng.Between(0.04, 0.18) / float64(k+1),
		}
	}
	stretch := [3]float64{rng.Between(0.8, 1.2), rng.Between(0.8, 1.25), rng.Between(0.8, 1.2)}
	pal := generate.RandomPalette(rng)
	low, mid, high := pal[0], pal[1], pal[4]

	radius := func(d [3]float64) float64 {
		r := 1.0
		for _, w := range waves {
			r += w.amp * math.Sin(w.freq*(d[0]*w.dir[0]+d[1]*w.dir[1]+d[2]*w.dir[2])+w.phase)
		}
		return r
	}
	// Directions: the north pole (+Y), the rings from north to south, the
	// south pole.
	dirs := make([][3]float64, 0, 2+(meshRings-1)*meshSegments)
	dirs = append(dirs, [3]float64{0, 1, 0})
	for i := 1; i < meshRings; i++ {
		theta := math.Pi * float64(i) / meshRings
		for k := range meshSegments {
			phi := 2 * math.Pi * float64(k) / meshSegments
			dirs = append(dirs, [3]float64{math.Sin(theta) * math.Cos(phi), math.Cos(theta), -math.Sin(theta) * math.Sin(phi)})
		}
	}
	dirs = append(dirs, [3]float64{0, -1, 0})

	m := &genMesh{name: "blob", pos: make([][3]float32, len(dirs)), color: make([][3]float32, len(dirs))}
	radii := make([]float64, len(dirs))
	rLo, rHi := math.Inf(1), math.Inf(-1)
	for i, d := range dirs {
		radii[i] = radius(d)
		rLo, rHi = min(rLo, radii[i]), max(rHi, radii[i])
	}
	for i, d := range dirs {
		r := radii[i]
		m.pos[i] = [3]float32{float32(d[0] * r * stretch[0]), float32(d[1] * r * stretch[1]), float32(d[2] * r * stretch[2])}
		t := (r - rLo) / max(rHi-rLo, 1e-9)
		c := low.Mix(mid, min(2*t, 1))
		if t > 0.5 {
			c = mid.Mix(high, 2*t-1)
		}
		m.color[i] = genLinear(c)
	}

	// Seen from outside, with y up and phi turning from +X toward -Z, a
	// ring's next vertex is to the right: counter-clockwise is (upper,
	// lower, lower-right) and (upper, lower-right, upper-right).
	ring := func(i, k int) uint32 { return uint32(1 + (i-1)*meshSegments + k%meshSegments) }
	south := uint32(len(dirs) - 1)
	for k := range meshSegments {
		m.index = append(m.index, 0, ring(1, k), ring(1, k+1))
	}
	for i := 1; i < meshRings-1; i++ {
		for k := range meshSegments {
			a, b, c, d := ring(i, k), ring(i+1, k), ring(i+1, k+1), ring(i, k+1)
			m.index = append(m.index, a, b, c, a, c, d)
		}
	}
	for k := range meshSegments {
		m.index = append(m.index, ring(meshRings-1, k), south, ring(meshRings-1, k+1))
	}
	return m
}

// meshRelief builds the image mode relief of img (at least 2 x 2): one
// vertex per pixel, the picture 1 unit along its long side, centred on the
// origin, row 0 at the top (+Y), lighter pixels raised toward +Z. An open
// surface, so its material is double-sided.
func meshRelief(img *image.RGBA) *genMesh {
	w, h := img.Rect.Dx(), img.Rect.Dy()
	step := 1 / float64(max(w, h)-1)
	m := &genMesh{
		name: "relief", doubleSided: true,
		pos: make([][3]float32, 0, w*h), color: make([][3]float32, 0, w*h),
	}
	for y := range h {
		for x := range w {
			px := img.Pix[y*img.Stride+4*x:]
			c := generate.RGB{R: float64(px[0]) / 255, G: float64(px[1]) / 255, B: float64(px[2]) / 255}
			// Lightness as the eye sees it: luma of the sRGB values.
			l := 0.2126*c.R + 0.7152*c.G + 0.0722*c.B
			m.pos = append(m.pos, [3]float32{
				float32((float64(x) - float64(w-1)/2) * step),
				float32((float64(h-1)/2 - float64(y)) * step),
				float32(l * meshReliefDepth),
			})
			m.color = append(m.color, genLinear(c))
		}
	}
	// Counter-clockwise seen from +Z: (top-left, bottom-left, bottom-right)
	// and (top-left, bottom-right, top-right).
	at := func(x, y int) uint32 { return uint32(y*w + x) }
	m.index = make([]uint32, 0, 6*(w-1)*(h-1))
	for y := range h - 1 {
		for x := range w - 1 {
			m.index = append(m.index, at(x, y), at(x, y+1), at(x+1, y+1), at(x, y), at(x+1, y+1), at(x+1, y))
		}
	}
	return m
}

// genLinear converts an sRGB-encoded colour to the linear values glTF's
// COLOR_0 holds.
func genLinear(c generate.RGB) [3]float32 {
	f := func(v float64) float32 {
		v = min(max(v, 0), 1)
		if v <= 0.04045 {
			return float32(v / 12.92)
		}
		return float32(math.Pow((v+0.055)/1.055, 2.4))
	}
	return [3]float32{f(c.R), f(c.G), f(c.B)}
}
