package enhance

import (
	"math"
	"math/rand/v2"
	"testing"
)

// encode8 rounds every linear value to its nearest 8-bit sRGB code, the
// codes' thresholds and their neighbours included.
func TestEncode8RoundsToTheNearestCode(t *testing.T) {
	want := func(v float32) uint8 {
		return uint8(math.Round(linearToSRGB(min(max(float64(v), 0), 1)) * 255))
	}
	values := []float32{0, -1, 1, 2, float32(math.NaN())}
	for k := range 255 {
		th := encodeThreshold[k]
		values = append(values, th, math.Nextafter32(th, 0), math.Nextafter32(th, 2))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		values = append(values, rng.Float32(), rng.Float32()*0.01)
	}
	for _, v := range values {
		w := want(v)
		if math.IsNaN(float64(v)) {
			w = 0
		}
		// At a threshold itself float32 and float64 may round apart.
		if got := encode8(v); got != w && !(int(got)-int(w) == 1 && v == encodeThreshold[w]) {
			t.Fatalf("encode8(%v) = %d, want %d", v, got, w)
		}
	}
}
