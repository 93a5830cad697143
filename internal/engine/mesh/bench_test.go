package mesh

import (
	"testing"

	"genjobs/internal/engine"
)

// A text model, and a relief of a 12-megapixel JPEG photo.
func BenchmarkMesh(b *testing.B) {
	photoInput := engine.Input{Field: "image_urls", ContentType: "image/jpeg", Data: jpegBytes(photo(4000, 3000), 85)}
	b.Run("text", func(b *testing.B) {
		benchmarkGen(b, Engine{}, engine.Job{Model: "model-g-3.1-rapid", Request: genRequest(meshText)})
	})
	b.Run("image-4000x3000", func(b *testing.B) {
		benchmarkGen(b, Engine{}, engine.Job{Model: "model-g-3.1-rapid", Request: genRequest(meshImage(1)), Inputs: []engine.Input{photoInput}})
	})
}
