package generate

import (
	"fmt"
	"testing"

	"genjobs/internal/engine"
)

func BenchmarkImage(b *testing.B) {
	for _, size := range [][2]int{{1024, 1024}, {4096, 4096}} {
		b.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(b *testing.B) {
			benchmarkGen(b, Image{}, imageJob("a lighthouse at dusk", size[0], size[1], 1337))
		})
	}
}

// The largest video of each model, from the prompt alone and (model-b-fast)
// from a start and an end image.
func BenchmarkVideo(b *testing.B) {
	startImage := engine.Input{Field: "start_image", ContentType: "image/jpeg", Data: jpegBytes(photo(1920, 1080), 85)}
	endImage := engine.Input{Field: "end_image", ContentType: "image/jpeg", Data: jpegBytes(photo(1080, 1920), 85)}
	tests := []struct {
		name   string
		model  string
		req    map[string]any
		inputs []engine.Input
	}{
		{"b-fast-720p-16:9-15s", "model-b-fast", map[string]any{"resolution": "720p", "aspect_ratio": "16:9", "duration": 15}, nil},
		{"b-fast-720p-21:9-15s", "model-b-fast", map[string]any{"resolution": "720p", "aspect_ratio": "21:9", "duration": 15}, nil},
		{"b-fast-720p-16:9-15s-start-end", "model-b-fast", map[string]any{"resolution": "720p", "aspect_ratio": "16:9", "duration": 15}, []engine.Input{startImage, endImage}},
		{"c-1584:672-10s", "model-c", map[string]any{"aspect_ratio": "1584:672", "duration": 10}, nil},
		{"d-flash-16:9-10s", "model-d-flash-1.1", map[string]any{"aspect_ratio": "16:9", "duration": 10}, nil},
		{"f-2048x2048-5s", "model-f-2.2", map[string]any{"width": 2048, "height": 2048, "duration": 5}, nil},
	}
	for _, tt := range tests {
		b.Run(tt.name, func(b *testing.B) {
			tt.req["prompt"] = "a paper boat on a stream"
			benchmarkGen(b, Video{}, engine.Job{Model: tt.model, Request: genRequest(tt.req), Inputs: tt.inputs})
		})
	}
}
