package mesh

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"genjobs/internal/engine"
)

// gltfToolDir is the Node project that runs the Khronos glTF validator.
const gltfToolDir = "../../../infra/tools/gltf"

var gltfInstall struct {
	once sync.Once
	err  error
}

// gltfValidate runs the Khronos glTF validator (gltf-validator, pinned in
// infra/tools/gltf) on data and returns its exit code (0 valid, 1 errors,
// 2 not recognised) and report. It installs the validator with npm ci when
// node_modules lacks it, as on a fresh CI machine. Without node or npm the
// test fails rather than skips: nothing else checks the GLB output.
func gltfValidate(t *testing.T, data []byte) (int, gltfReport) {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed: the GLB tests run the Khronos glTF validator on Node 20 with npm (%s): %v",
				tool, filepath.Clean("internal/engine/"+gltfToolDir), err)
		}
	}
	dir, err := filepath.Abs(gltfToolDir)
	if err != nil {
		t.Fatal(err)
	}
	gltfInstall.once.Do(func() {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", "gltf-validator", "package.json")); err == nil {
			return
		}
		cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			gltfInstall.err = fmt.Errorf("npm ci in %s failed: %v\n%s", dir, err, out)
		}
	})
	if gltfInstall.err != nil {
		t.Fatal(gltfInstall.err)
	}
	file := filepath.Join(t.TempDir(), "model.glb")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", "validate.mjs", file)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	code := 0
	if exit := (*exec.ExitError)(nil); errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("node validate.mjs: %v", err)
	}
	var report gltfReport
	if code != 2 {
		if err := json.Unmarshal(stdout.Bytes(), &report); err != nil {
			t.Fatalf("the validator's report (exit %d) is not JSON: %v\n%s\n%s", code, err, stdout.Bytes(), stderr.Bytes())
		}
	}
	return code, report
}

// gltfReport is the part of the validator's report the tests read.
type gltfReport struct {
	Issues struct {
		NumErrors   int `json:"numErrors"`
		NumWarnings int `json:"numWarnings"`
		Messages    []struct {
			Code     string `json:"code"`
			Message  string `json:"message"`
			Pointer  string `json:"pointer"`
			Severity int    `json:"severity"`
		} `json:"messages"`
	} `json:"issues"`
	Info struct {
		TotalVertexCount   int `json:"totalVertexCount"`
		TotalTriangleCount int `json:"totalTriangleCount"`
	} `json:"info"`
}

func meshRun(t *testing.T, req map[string]any, inputs ...engine.Input) []byte {
	t.Helper()
	files, _ := genRun(t, Engine{}, engine.Job{Model: "model-g-3.1-rapid", Request: genRequest(req), Inputs: inputs})
	if f := files[0]; f.ContentType != "model/gltf-binary" || f.Ext != "glb" {
		t.Fatalf("output is %s (.%s), want model/gltf-binary (.glb)", f.ContentType, f.Ext)
	}
	return files[0].Data
}

var meshText = map[string]any{"mode": "text", "prompt": "a mossy boulder", "image_urls": []string{}}

func meshImage(n int) map[string]any {
	urls := make([]string, n)
	for i := range urls {
		urls[i] = fmt.Sprintf("https://example.com/%d.png", i)
	}
	return map[string]any{"mode": "image", "prompt": "", "image_urls": urls}
}

// Every model, from a prompt or from images, is a glTF 2.0 file the Khronos
// validator finds nothing wrong with.
func TestMeshIsValidGLB(t *testing.T) {
	tests := []struct {
		name         string
		req          map[string]any
		inputs       []engine.Input
		minTriangles int
	}{
		{"text", meshText, nil, 30000},
		{"empty body", map[string]any{"mode": "text", "prompt": "", "image_urls": []string{}}, nil, 30000},
		{"image", meshImage(1), []engine.Input{{Field: "image_urls", ContentType: "image/png", Data: pngBytes(photo(300, 200))}}, 80000},
		{"tall jpeg and a webp", meshImage(2), []engine.Input{
			{Field: "image_urls", ContentType: "image/jpeg", Data: jpegBytes(photo(90, 400), 85)},
			{Field: "image_urls", Index: 1, ContentType: "image/webp", Data: webpBytes(photo(64, 64))},
		}, 25000},
		{"one pixel", meshImage(1), []engine.Input{genPNGInput("image_urls", 0, genSolid(1, 1, color.RGBA{9, 99, 199, 255}))}, 130000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := meshRun(t, tt.req, tt.inputs...)
			code, report := gltfValidate(t, data)
			if code != 0 || report.Issues.NumErrors != 0 || report.Issues.NumWarnings != 0 {
				t.Errorf("validator exit %d, %d errors, %d warnings: %+v",
					code, report.Issues.NumErrors, report.Issues.NumWarnings, report.Issues.Messages)
			}
			if report.Info.TotalTriangleCount < tt.minTriangles {
				t.Errorf("%d triangles, want at least %d", report.Info.TotalTriangleCount, tt.minTriangles)
			}
		})
	}
}

// The validator run by these tests does catch a broken file.
func TestGLBValidatorCatchesMistakes(t *testing.T) {
	good := meshRun(t, meshText)
	jsonLen := int(binary.LittleEndian.Uint32(good[12:16]))
	bin := 12 + 8 + jsonLen + 8
	tests := []struct {
		name   string
		change func(b []byte)
		code   string // the validator's issue code
	}{
		{"wrong total length", func(b []byte) { binary.LittleEndian.PutUint32(b[8:12], uint32(len(b)+4)) }, "GLB_LENGTH_MISMATCH"},
		// The first vertex's x, the first float of the BIN chunk, leaves the
		// accessor's bounds.
		{"position outside max", func(b []byte) { binary.LittleEndian.PutUint32(b[bin:], math.Float32bits(100)) }, "ACCESSOR_MAX_MISMATCH"},
		{"index out of range", func(b []byte) { binary.LittleEndian.PutUint32(b[len(b)-4:], 1<<30) }, "ACCESSOR_INDEX_OOB"},
	}
	for _, tt := range tests {
		bad := bytes.Clone(good)
		tt.change(bad)
		code, report := gltfValidate(t, bad)
		found := false
		for _, m := range report.Issues.Messages {
			found = found || m.Code == tt.code
		}
		if code != 1 || !found {
			t.Errorf("%s: validator exit %d, issues %+v; want exit 1 with %s", tt.name, code, report.Issues.Messages, tt.code)
		}
	}
}

// glbMesh is the one mesh of a GLB file as the tests read it, with the
// glTF document's spec names.
type glbMesh struct {
	doubleSided bool
	pos, normal [][3]float32
	color       [][3]float32
	index       []uint32
}

func readGLB(t *testing.T, data []byte) glbMesh {
	t.Helper()
	if len(data) < 20 || string(data[:4]) != "glTF" || binary.LittleEndian.Uint32(data[4:]) != 2 ||
		int(binary.LittleEndian.Uint32(data[8:])) != len(data) {
		t.Fatal("not a GLB 2 file of its stated length")
	}
	jsonLen := int(binary.LittleEndian.Uint32(data[12:]))
	var doc struct {
		Meshes []struct {
			Primitives []struct {
				Attributes map[string]int `json:"attributes"`
				Indices    int            `json:"indices"`
				Material   int            `json:"material"`
			} `json:"primitives"`
		} `json:"meshes"`
		Materials []struct {
			DoubleSided bool `json:"doubleSided"`
		} `json:"materials"`
		Accessors []struct {
			BufferView int `json:"bufferView"`
			Count      int `json:"count"`
		} `json:"accessors"`
		BufferViews []struct {
			ByteOffset int `json:"byteOffset"`
		} `json:"bufferViews"`
	}
	if err := json.Unmarshal(data[20:20+jsonLen], &doc); err != nil {
		t.Fatalf("JSON chunk: %v", err)
	}
	bin := data[20+jsonLen+8:]
	if len(doc.Meshes) != 1 || len(doc.Meshes[0].Primitives) != 1 {
		t.Fatalf("%d meshes, want 1 of 1 primitive", len(doc.Meshes))
	}
	prim := doc.Meshes[0].Primitives[0]
	words := func(accessor, per int) []uint32 {
		a := doc.Accessors[accessor]
		off := doc.BufferViews[a.BufferView].ByteOffset
		out := make([]uint32, a.Count*per)
		for i := range out {
			out[i] = binary.LittleEndian.Uint32(bin[off+4*i:])
		}
		return out
	}
	vec3 := func(name string) [][3]float32 {
		acc, ok := prim.Attributes[name]
		if !ok {
			return nil
		}
		w := words(acc, 3)
		out := make([][3]float32, len(w)/3)
		for i := range out {
			out[i] = [3]float32{math.Float32frombits(w[3*i]), math.Float32frombits(w[3*i+1]), math.Float32frombits(w[3*i+2])}
		}
		return out
	}
	return glbMesh{
		doubleSided: doc.Materials[prim.Material].DoubleSided,
		pos:         vec3("POSITION"), normal: vec3("NORMAL"), color: vec3("COLOR_0"),
		index: words(prim.Indices, 1),
	}
}

func sub3(a, b [3]float32) [3]float64 {
	return [3]float64{float64(a[0] - b[0]), float64(a[1] - b[1]), float64(a[2] - b[2])}
}

// From a prompt: a closed, single-sided solid (every edge between exactly
// two triangles) about 2 units across, every triangle facing out, its
// colours varying; the prompt shapes it.
func TestMeshTextIsAClosedBlob(t *testing.T) {
	m := readGLB(t, meshRun(t, meshText))
	if m.doubleSided {
		t.Error("a closed solid marked double-sided")
	}
	edges := map[[2]uint32]int{}
	for i := 0; i < len(m.index); i += 3 {
		tri := m.index[i : i+3]
		for k := range 3 {
			a, b := tri[k], tri[(k+1)%3]
			edges[[2]uint32{min(a, b), max(a, b)}]++
		}
		p0, p1, p2 := m.pos[tri[0]], m.pos[tri[1]], m.pos[tri[2]]
		u, v := sub3(p1, p0), sub3(p2, p0)
		n := [3]float64{u[1]*v[2] - u[2]*v[1], u[2]*v[0] - u[0]*v[2], u[0]*v[1] - u[1]*v[0]}
		var c [3]float64
		for k := range 3 {
			c[k] = float64(p0[k]+p1[k]+p2[k]) / 3
		}
		if n[0]*c[0]+n[1]*c[1]+n[2]*c[2] <= 0 {
			t.Fatalf("triangle %d faces inward", i/3)
		}
	}
	for e, n := range edges {
		if n != 2 {
			t.Fatalf("edge %v is shared by %d triangles: the surface is not closed", e, n)
		}
	}
	for i, p := range m.pos {
		r := math.Sqrt(float64(p[0]*p[0] + p[1]*p[1] + p[2]*p[2]))
		if r < 0.3 || r > 2 {
			t.Fatalf("vertex %d is %.2f from the centre", i, r)
		}
		if n := m.normal[i]; n[0]*p[0]+n[1]*p[1]+n[2]*p[2] <= 0 {
			t.Fatalf("vertex %d's normal points inward", i)
		}
	}
	colours := map[[3]float32]bool{}
	for _, c := range m.color {
		colours[c] = true
	}
	if len(colours) < 100 {
		t.Errorf("only %d vertex colours", len(colours))
	}

	other := readGLB(t, meshRun(t, map[string]any{"mode": "text", "prompt": "a glass teapot", "image_urls": []string{}}))
	moved := 0
	for i := range m.pos {
		if d := sub3(m.pos[i], other.pos[i]); math.Abs(d[0])+math.Abs(d[1])+math.Abs(d[2]) > 0.01 {
			moved++
		}
	}
	if moved < len(m.pos)/2 {
		t.Errorf("another prompt moved only %d of %d vertices", moved, len(m.pos))
	}
}

// From an image: a relief with the picture's aspect ratio, upright and
// facing the viewer (+Z) with the picture's top up, its light parts
// standing out, coloured like the picture, visible from both sides.
func TestMeshReliefFollowsTheImage(t *testing.T) {
	// 2:1; light on top, dark below; reddish left, greenish right.
	pic := image.NewRGBA(image.Rect(0, 0, 200, 100))
	for y := range 100 {
		for x := range 200 {
			c := color.RGBA{255, 200, 200, 255}
			switch {
			case y < 50 && x >= 100:
				c = color.RGBA{200, 255, 200, 255}
			case y >= 50 && x < 100:
				c = color.RGBA{120, 0, 0, 255}
			case y >= 50:
				c = color.RGBA{0, 120, 0, 255}
			}
			pic.SetRGBA(x, y, c)
		}
	}
	m := readGLB(t, meshRun(t, meshImage(1), genPNGInput("image_urls", 0, pic)))
	if !m.doubleSided {
		t.Error("an open relief not marked double-sided")
	}
	lo, hi := [3]float32{1e9, 1e9, 1e9}, [3]float32{-1e9, -1e9, -1e9}
	for _, p := range m.pos {
		for k := range 3 {
			lo[k], hi[k] = min(lo[k], p[k]), max(hi[k], p[k])
		}
	}
	if ratio := (hi[0] - lo[0]) / (hi[1] - lo[1]); math.Abs(float64(ratio)-2) > 0.04 {
		t.Errorf("the relief is %.3f times as wide as high, want 2", ratio)
	}
	var topZ, bottomZ, top, bottom float64
	for i, p := range m.pos {
		c := m.color[i]
		switch {
		case p[1] > 0.05:
			topZ, top = topZ+float64(p[2]), top+1
		case p[1] < -0.05:
			bottomZ, bottom = bottomZ+float64(p[2]), bottom+1
		}
		if p[0] < -0.05 && p[1]*p[1] > 0.0025 && !(c[0] > c[1]) || p[0] > 0.05 && p[1]*p[1] > 0.0025 && !(c[1] > c[0]) {
			t.Fatalf("vertex at (%.2f, %.2f) has colour %v: not the picture's", p[0], p[1], c)
		}
	}
	if topZ/top < bottomZ/bottom+0.03 {
		t.Errorf("the light top stands at z %.3f, the dark bottom at %.3f: want the top raised", topZ/top, bottomZ/bottom)
	}
	// Its faces look toward +Z.
	for i := 0; i < len(m.index); i += 3 {
		p0, p1, p2 := m.pos[m.index[i]], m.pos[m.index[i+1]], m.pos[m.index[i+2]]
		u, v := sub3(p1, p0), sub3(p2, p0)
		if u[0]*v[1]-u[1]*v[0] <= 0 {
			t.Fatalf("triangle %d faces away from the viewer", i/3)
		}
	}
}

// A mode the request contradicts (the catalog refuses both) fails the job
// as the service's fault, not the client's, and never panics.
func TestMeshModeMismatch(t *testing.T) {
	img := genPNGInput("image_urls", 0, photo(32, 32))
	for name, j := range map[string]engine.Job{
		"image without images": {Model: "model-g-3.1-rapid", Request: genRequest(meshImage(0))},
		"text with an image":   {Model: "model-g-3.1-rapid", Request: genRequest(meshText), Inputs: []engine.Input{img}},
	} {
		files, err := Engine{}.Run(context.Background(), j, func(engine.Update) error { return nil })
		if err == nil || errors.Is(err, engine.ErrInvalidInput) || files != nil {
			t.Errorf("%s: %d files, err = %v; want a service error", name, len(files), err)
		}
	}
}
