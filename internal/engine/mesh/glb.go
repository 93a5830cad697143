package mesh

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
)

// genMesh is an indexed triangle mesh, counter-clockwise triangles facing
// out, as glTF wants them.
type genMesh struct {
	name        string
	pos         [][3]float32
	normal      [][3]float32 // unit length; see computeNormals
	color       [][3]float32 // linear RGB in 0..1, or nil
	index       []uint32
	doubleSided bool // an open surface, seen from both sides
}

// computeNormals sets every vertex normal to the area-weighted mean of the
// normals of the triangles around it, which is what makes a displaced
// sphere or a relief look smooth.
func (m *genMesh) computeNormals() {
	acc := make([][3]float64, len(m.pos))
	for t := 0; t+2 < len(m.index); t += 3 {
		a, b, c := m.pos[m.index[t]], m.pos[m.index[t+1]], m.pos[m.index[t+2]]
		u := [3]float64{float64(b[0] - a[0]), float64(b[1] - a[1]), float64(b[2] - a[2])}
		v := [3]float64{float64(c[0] - a[0]), float64(c[1] - a[1]), float64(c[2] - a[2])}
		n := [3]float64{u[1]*v[2] - u[2]*v[1], u[2]*v[0] - u[0]*v[2], u[0]*v[1] - u[1]*v[0]}
		for _, k := range m.index[t : t+3] {
			acc[k][0] += n[0]
			acc[k][1] += n[1]
			acc[k][2] += n[2]
		}
	}
	m.normal = make([][3]float32, len(m.pos))
	for i, n := range acc {
		l := math.Sqrt(n[0]*n[0] + n[1]*n[1] + n[2]*n[2])
		if l == 0 {
			m.normal[i] = [3]float32{0, 0, 1} // a vertex of no triangle's area
			continue
		}
		m.normal[i] = [3]float32{float32(n[0] / l), float32(n[1] / l), float32(n[2] / l)}
	}
}

// The parts of glTF 2.0 (https://registry.khronos.org/glTF/specs/2.0/glTF-2.0.html)
// that genMesh needs.
type gltfDoc struct {
	Asset       gltfAsset         `json:"asset"`
	Scene       int               `json:"scene"`
	Scenes      []gltfScene       `json:"scenes"`
	Nodes       []gltfNode        `json:"nodes"`
	Meshes      []gltfMeshDef     `json:"meshes"`
	Materials   []gltfMaterial    `json:"materials"`
	Accessors   []gltfAccessor    `json:"accessors"`
	BufferViews []gltfBufferView  `json:"bufferViews"`
	Buffers     []gltfBufferEntry `json:"buffers"`
}

type gltfAsset struct {
	Version   string `json:"version"`
	Generator string `json:"generator"`
}

type gltfScene struct {
	Nodes []int `json:"nodes"`
}

type gltfNode struct {
	Name   string `json:"name"`
	Engine int    `json:"mesh"`
}

type gltfMeshDef struct {
	Name       string          `json:"name"`
	Primitives []gltfPrimitive `json:"primitives"`
}

type gltfPrimitive struct {
	Attributes map[string]int `json:"attributes"` // encoding/json sorts the keys
	Indices    int            `json:"indices"`
	Material   int            `json:"material"`
	Mode       int            `json:"mode"`
}

type gltfMaterial struct {
	Name                 string  `json:"name"`
	PBRMetallicRoughness gltfPBR `json:"pbrMetallicRoughness"`
	DoubleSided          bool    `json:"doubleSided,omitempty"`
}

type gltfPBR struct {
	BaseColorFactor [4]float64 `json:"baseColorFactor"`
	MetallicFactor  float64    `json:"metallicFactor"`
	RoughnessFactor float64    `json:"roughnessFactor"`
}

type gltfAccessor struct {
	BufferView    int       `json:"bufferView"`
	ComponentType int       `json:"componentType"`
	Count         int       `json:"count"`
	Type          string    `json:"type"`
	Min           []float64 `json:"min,omitempty"`
	Max           []float64 `json:"max,omitempty"`
}

type gltfBufferView struct {
	Buffer     int `json:"buffer"`
	ByteOffset int `json:"byteOffset"`
	ByteLength int `json:"byteLength"`
	Target     int `json:"target"`
}

type gltfBufferEntry struct {
	ByteLength int `json:"byteLength"`
}

const (
	gltfFloat        = 5126
	gltfUnsignedInt  = 5125
	gltfArrayBuffer  = 34962
	gltfElementArray = 34963
	gltfTriangles    = 4
)

// encodeGLB writes m as a binary glTF 2.0 file: a 12-byte header, a JSON
// chunk padded with spaces and a BIN chunk padded with zeros, each to 4
// bytes. Every accessor has its own tightly packed buffer view; all data
// is 4-byte aligned because every component is.
func encodeGLB(m *genMesh) ([]byte, error) {
	if len(m.pos) == 0 || len(m.index) == 0 || len(m.index)%3 != 0 || len(m.normal) != len(m.pos) ||
		(m.color != nil && len(m.color) != len(m.pos)) {
		return nil, errors.New("engine: an incomplete mesh")
	}
	// A NaN would not marshal as a bound, nor mean anything in the buffer.
	for _, vs := range [][][3]float32{m.pos, m.normal, m.color} {
		for _, v := range vs {
			for _, c := range v {
				if math.IsNaN(float64(c)) || math.IsInf(float64(c), 0) {
					return nil, errors.New("engine: a mesh value is not finite")
				}
			}
		}
	}
	doc := gltfDoc{
		Asset:  gltfAsset{Version: "2.0", Generator: "genjobs reference engine"},
		Scenes: []gltfScene{{Nodes: []int{0}}},
		Nodes:  []gltfNode{{Name: m.name, Engine: 0}},
		Materials: []gltfMaterial{{
			Name: m.name,
			// Vertex colours carry the colour; COLOR_0 multiplies this.
			PBRMetallicRoughness: gltfPBR{BaseColorFactor: [4]float64{1, 1, 1, 1}, RoughnessFactor: 0.8},
			DoubleSided:          m.doubleSided,
		}},
		Buffers: []gltfBufferEntry{{}},
	}
	var bin bytes.Buffer
	addVec3 := func(v [][3]float32, bounds bool) int {
		acc := gltfAccessor{BufferView: len(doc.BufferViews), ComponentType: gltfFloat, Count: len(v), Type: "VEC3"}
		if bounds {
			lo := [3]float32{float32(math.Inf(1)), float32(math.Inf(1)), float32(math.Inf(1))}
			hi := [3]float32{float32(math.Inf(-1)), float32(math.Inf(-1)), float32(math.Inf(-1))}
			for _, p := range v {
				for c := range 3 {
					lo[c], hi[c] = min(lo[c], p[c]), max(hi[c], p[c])
				}
			}
			// As float64s, so the JSON holds exactly the float32 values the
			// validator reads back from the buffer.
			acc.Min = []float64{float64(lo[0]), float64(lo[1]), float64(lo[2])}
			acc.Max = []float64{float64(hi[0]), float64(hi[1]), float64(hi[2])}
		}
		doc.BufferViews = append(doc.BufferViews, gltfBufferView{ByteOffset: bin.Len(), ByteLength: 12 * len(v), Target: gltfArrayBuffer})
		var b [4]byte
		for _, p := range v {
			for c := range 3 {
				binary.LittleEndian.PutUint32(b[:], math.Float32bits(p[c]))
				bin.Write(b[:])
			}
		}
		doc.Accessors = append(doc.Accessors, acc)
		return len(doc.Accessors) - 1
	}
	attrs := map[string]int{"POSITION": addVec3(m.pos, true), "NORMAL": addVec3(m.normal, false)}
	if m.color != nil {
		attrs["COLOR_0"] = addVec3(m.color, false)
	}
	lo, hi := uint32(math.MaxUint32), uint32(0)
	for _, i := range m.index {
		if int(i) >= len(m.pos) {
			return nil, errors.New("engine: a mesh index out of range")
		}
		lo, hi = min(lo, i), max(hi, i)
	}
	doc.BufferViews = append(doc.BufferViews, gltfBufferView{ByteOffset: bin.Len(), ByteLength: 4 * len(m.index), Target: gltfElementArray})
	doc.Accessors = append(doc.Accessors, gltfAccessor{
		BufferView: len(doc.BufferViews) - 1, ComponentType: gltfUnsignedInt, Count: len(m.index), Type: "SCALAR",
		Min: []float64{float64(lo)}, Max: []float64{float64(hi)},
	})
	var b [4]byte
	for _, i := range m.index {
		binary.LittleEndian.PutUint32(b[:], i)
		bin.Write(b[:])
	}
	doc.Buffers[0].ByteLength = bin.Len()
	doc.Meshes = []gltfMeshDef{{Name: m.name, Primitives: []gltfPrimitive{{
		Attributes: attrs, Indices: len(doc.Accessors) - 1, Material: 0, Mode: gltfTriangles,
	}}}}

	js, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	for len(js)%4 != 0 {
		js = append(js, ' ')
	}
	for bin.Len()%4 != 0 {
		bin.WriteByte(0)
	}
	total := 12 + 8 + len(js) + 8 + bin.Len()
	out := make([]byte, 0, total)
	out = binary.LittleEndian.AppendUint32(out, 0x46546c67) // "glTF"
	out = binary.LittleEndian.AppendUint32(out, 2)
	out = binary.LittleEndian.AppendUint32(out, uint32(total))
	out = binary.LittleEndian.AppendUint32(out, uint32(len(js)))
	out = binary.LittleEndian.AppendUint32(out, 0x4e4f534a) // "JSON"
	out = append(out, js...)
	out = binary.LittleEndian.AppendUint32(out, uint32(bin.Len()))
	out = binary.LittleEndian.AppendUint32(out, 0x004e4942) // "BIN\0"
	out = append(out, bin.Bytes()...)
	return out, nil
}
