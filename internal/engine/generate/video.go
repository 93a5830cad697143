package generate

import (
	"context"
	"encoding/json"
	"fmt"
	"image"
	"math"

	"genjobs/internal/engine"
)

// Video is the reference engine of the video models (model-b-fast, model-c,
// model-d-flash-1.1, model-f-2.2; it reads Job.Model): a looping animated
// GIF of VideoFPS frames a second that plays for exactly the requested
// duration. With a start image the camera slowly zooms and pans over it
// (the first frame is the whole image, cropped to the frame's aspect); an
// end image (model-b-fast) is cross-faded in and is the last frame.
// Otherwise the camera moves over a procedural scene from prompt and seed
// (its palette from the reference images, if any) with a few drifting
// spheres. Frame sizes: videoFrameSize. Fields without an effect here:
// reference_videos, reference_audios, upscale and expand_prompt (they
// steer models this reference does not have), and model-f-2.2's
// aspect_ratio (width and height are its frame).
type Video struct{}

// VideoFPS is the frame rate of every video: 10 frames a second is a whole
// number of the GIF's hundredths of a second (10 each), so the play time is
// exactly the duration.
const VideoFPS = 10

type genVideoRequest struct {
	Prompt      string `json:"prompt"`
	AspectRatio string `json:"aspect_ratio"`
	Resolution  string `json:"resolution"`
	Width       int    `json:"width"`
	Height      int    `json:"height"`
	Duration    int    `json:"duration"`
	Seed        *int64 `json:"seed"`
}

// videoSizes is the frame size of model-b-fast (by resolution and aspect
// ratio: the short side is the resolution, the long side rounded to even
// pixels) and of model-d-flash-1.1 (720p only).
var videoSizes = map[string]map[string][2]int{
	"model-b-fast/480p": {
		"16:9": {854, 480}, "4:3": {640, 480}, "1:1": {480, 480},
		"3:4": {480, 640}, "9:16": {480, 854}, "21:9": {1120, 480},
	},
	"model-b-fast/720p": {
		"16:9": {1280, 720}, "4:3": {960, 720}, "1:1": {720, 720},
		"3:4": {720, 960}, "9:16": {720, 1280}, "21:9": {1680, 720},
	},
	"model-d-flash-1.1": {"16:9": {1280, 720}, "9:16": {720, 1280}},
}

// videoFrameSize is the frame size of a request: the table above for
// model-b-fast and model-d-flash-1.1, model-c's aspect_ratio read as
// width:height pixels, model-f-2.2's width and height.
func videoFrameSize(model string, req genVideoRequest) (w, h int, err error) {
	switch model {
	case "model-b-fast":
		size, ok := videoSizes[model+"/"+req.Resolution][req.AspectRatio]
		if !ok {
			return 0, 0, fmt.Errorf("engine: %s has no size for %q at %q", model, req.AspectRatio, req.Resolution)
		}
		return size[0], size[1], nil
	case "model-d-flash-1.1":
		size, ok := videoSizes[model][req.AspectRatio]
		if !ok {
			return 0, 0, fmt.Errorf("engine: %s has no size for %q", model, req.AspectRatio)
		}
		return size[0], size[1], nil
	case "model-c":
		if _, err := fmt.Sscanf(req.AspectRatio, "%d:%d", &w, &h); err != nil {
			return 0, 0, fmt.Errorf("engine: %s aspect_ratio %q is not width:height", model, req.AspectRatio)
		}
	case "model-f-2.2":
		w, h = req.Width, req.Height
	default:
		return 0, 0, fmt.Errorf("engine: %s is not a video model", model)
	}
	// The schemas allow at most 1584 x 672 (model-c) and 2048 x 2048
	// (model-f-2.2); checked again because it sizes every allocation.
	if w < 16 || h < 16 || w > 2048 || h > 2048 {
		return 0, 0, fmt.Errorf("engine: %s frame size %d x %d is out of range", model, w, h)
	}
	return w, h, nil
}

// videoMargin is how much larger than a frame the canvas the camera moves
// over is: the last frame shows 1/videoMargin of it, and every frame
// samples it at 1:1 or finer.
const videoMargin = 9.0 / 8

// Run implements Engine. It calls report from its own goroutine only.
func (Video) Run(ctx context.Context, j engine.Job, report engine.Report) (files []engine.File, err error) {
	defer Recover(j.Model, &files, &err)
	var req genVideoRequest
	if err := json.Unmarshal(j.Request, &req); err != nil {
		return nil, fmt.Errorf("engine: %s request: %w", j.Model, err)
	}
	w, h, err := videoFrameSize(j.Model, req)
	if err != nil {
		return nil, err
	}
	if req.Duration < 1 || req.Duration > 15 {
		return nil, fmt.Errorf("engine: %s duration %d is outside 1..15", j.Model, req.Duration)
	}
	seed := int64(DefaultSeed)
	if req.Seed != nil {
		seed = *req.Seed
	}
	p := &Progress{ctx: ctx, report: report}
	if err := p.To(0.01, nil); err != nil {
		return nil, err
	}

	cw, ch := int(math.Round(float64(w)*videoMargin)), int(math.Round(float64(h)*videoMargin))
	var start, end *image.RGBA
	var hist genHistogram
	err = p.DecodeInputs(j.Inputs, 0.1, func(ctx context.Context, in engine.Input, img image.Image) error {
		var err error
		switch in.Field {
		case "start_image":
			start, err = CoverFit(ctx, img, cw, ch)
		case "end_image":
			end, err = CoverFit(ctx, img, cw, ch)
		default: // reference images: their colours paint the procedural scene
			hist.add(img)
		}
		return err
	})
	if err != nil {
		return nil, err
	}

	rng := NewRNG(j.Model, req.Prompt, seed)
	pal := hist.palette(rng)
	var blobs []videoBlob
	if start == nil {
		start = image.NewRGBA(image.Rect(0, 0, cw, ch))
		scene := newGenScene(rng, pal, cw, ch)
		if err := scene.paint(p, start, 0.15); err != nil {
			return nil, err
		}
		blobs = videoBlobs(rng, pal)
	}
	n := req.Duration * VideoFPS
	shot := videoShot{
		w: w, h: h, n: n, start: start, end: end, blobs: blobs,
		startPan: videoPan(rng), endPan: videoPan(rng),
	}
	shot.q = shot.palette()
	if err := p.To(0.2, nil); err != nil {
		return nil, err
	}
	delays := make([]int, n)
	for i := range delays {
		delays[i] = 100 / VideoFPS
	}
	gifData, err := genEncodeGIF(p, genAnimation{
		w: w, h: h, pal: shot.q.pal, delays: delays, newPainter: shot.newPainter,
	}, 0.98)
	if err != nil {
		return nil, err
	}
	return []engine.File{{ContentType: "image/gif", Ext: "gif", Data: gifData}}, nil
}

// videoPan is the direction the camera drifts in, as a share of the room
// the zoom leaves on each axis.
func videoPan(rng *RNG) [2]float64 {
	a := rng.Between(0, 2*math.Pi)
	return [2]float64{math.Cos(a), math.Sin(a)}
}

// videoBlob is a sphere drifting over a procedural scene along a Lissajous
// path: per axis an amplitude (a share of the half frame), a whole number
// of cycles over the video, a phase.
type videoBlob struct {
	shape            genShape
	ampX, ampY       float64
	cyclesX, cyclesY float64
	phaseX, phaseY   float64
}

func videoBlobs(rng *RNG, pal []RGB) []videoBlob {
	blobs := make([]videoBlob, 3+rng.Intn(3))
	for i := range blobs {
		blobs[i] = videoBlob{
			shape: genShape{
				r:      rng.Between(0.06, 0.16),
				soft:   rng.Between(0.05, 0.3),
				alpha:  rng.Between(0.7, 0.95),
				col:    pal[rng.Intn(len(pal))],
				lightX: rng.Between(-0.5, 0.5), lightY: rng.Between(-0.6, -0.2),
			},
			ampX: rng.Between(0.3, 0.8), ampY: rng.Between(0.3, 0.8),
			cyclesX: float64(1 + rng.Intn(2)), cyclesY: float64(1 + rng.Intn(2)),
			phaseX: rng.Float(), phaseY: rng.Float(),
		}
	}
	return blobs
}

// videoShot is the camera work of one video.
type videoShot struct {
	w, h, n    int
	start, end *image.RGBA // canvases, videoMargin times the frame size
	blobs      []videoBlob
	q          *genQuantizer
	startPan   [2]float64
	endPan     [2]float64
}

// camera is the window of a canvas that frame i shows: zooming in from the
// whole canvas (in) or out to it (!in), drifting along pan.
func (s *videoShot) camera(c *image.RGBA, i int, in bool, pan [2]float64) genWindow {
	t := genSmooth(float64(i) / float64(max(s.n-1, 1)))
	if !in {
		t = 1 - t
	}
	scale := 1 - (1-1/videoMargin)*t
	cw, ch := float64(c.Rect.Dx()), float64(c.Rect.Dy())
	ww, wh := cw*scale, ch*scale
	x0 := (cw-ww)/2 + pan[0]*(cw-ww)/2
	y0 := (ch-wh)/2 + pan[1]*(ch-wh)/2
	return genWindow{x0: x0, y0: y0, sx: ww / float64(s.w), sy: wh / float64(s.h)}
}

// paint renders frame i into frame; other is scratch of the same size for
// the end image's view.
func (s *videoShot) paint(i int, frame, other *image.RGBA) {
	genSample(frame, s.start, s.camera(s.start, i, true, s.startPan))
	if s.end != nil {
		genSample(other, s.end, s.camera(s.end, i, false, s.endPan))
		t := genSmooth(float64(i) / float64(max(s.n-1, 1)))
		genBlend(frame, other, int(t*256+0.5))
	}
	if len(s.blobs) > 0 {
		s.paintBlobs(frame, float64(i)/float64(s.n))
	}
}

// palette chooses the video's palette from five frames spread over it,
// painted small (about 64k pixels in all: the camera's windows and the
// spheres are placed relative to the frame, so a small frame shows the
// same picture with less detail), which takes milliseconds at any size.
func (s *videoShot) palette() *genQuantizer {
	const frames = 5
	k := min(math.Sqrt(65536/float64(s.w*s.h*frames)), 1)
	small := *s
	small.w, small.h = max(int(float64(s.w)*k), 16), max(int(float64(s.h)*k), 16)
	frame := image.NewRGBA(image.Rect(0, 0, small.w, small.h))
	other := image.NewRGBA(frame.Rect)
	samples := make([]byte, 0, frames*len(frame.Pix))
	for f := range frames {
		small.paint(f*(s.n-1)/(frames-1), frame, other)
		samples = append(samples, frame.Pix...)
	}
	return newGenQuantizer(samples)
}

func (s *videoShot) newPainter() func(i int, dst *image.Paletted) {
	frame := image.NewRGBA(image.Rect(0, 0, s.w, s.h))
	other := image.NewRGBA(frame.Rect)
	return func(i int, dst *image.Paletted) {
		s.paint(i, frame, other)
		s.q.quantize(dst, frame)
	}
}

// paintBlobs draws the drifting spheres at time t (0..1 over the video).
func (s *videoShot) paintBlobs(frame *image.RGBA, t float64) {
	unit := float64(min(s.w, s.h))
	hw, hh := float64(s.w)/unit/2, float64(s.h)/unit/2
	for _, b := range s.blobs {
		sh := b.shape
		sh.cx = hw * b.ampX * math.Sin(2*math.Pi*(b.cyclesX*t+b.phaseX))
		sh.cy = hh * b.ampY * math.Sin(2*math.Pi*(b.cyclesY*t+b.phaseY))
		px, py := sh.cx*unit+float64(s.w)/2, sh.cy*unit+float64(s.h)/2
		rp := sh.r*unit + 2
		for y := max(int(py-rp), 0); y < min(int(py+rp)+1, s.h); y++ {
			uy := (float64(y) + 0.5 - float64(s.h)/2) / unit
			row := frame.Pix[y*frame.Stride:]
			for x := max(int(px-rp), 0); x < min(int(px+rp)+1, s.w); x++ {
				ux := (float64(x) + 0.5 - float64(s.w)/2) / unit
				if dx, dy := ux-sh.cx, uy-sh.cy; dx*dx+dy*dy >= sh.r*sh.r {
					continue
				}
				c := RGB{float64(row[4*x]) / 255, float64(row[4*x+1]) / 255, float64(row[4*x+2]) / 255}
				c = sh.over(c, ux, uy)
				row[4*x], row[4*x+1], row[4*x+2] = genByte(c.R), genByte(c.G), genByte(c.B)
			}
		}
	}
}
