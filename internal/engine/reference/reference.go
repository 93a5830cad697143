// Package reference maps every model of the catalog to its reference engine.
package reference

import (
	"genjobs/internal/engine"
	"genjobs/internal/engine/enhance"
	"genjobs/internal/engine/generate"
	"genjobs/internal/engine/mesh"
)

// Engines returns the reference engine of every model.
func Engines() engine.Registry {
	return engine.Registry{
		"standard-enhance":  enhance.Engine{},
		"model-e-4":         generate.Image{},
		"model-b-fast":      generate.Video{},
		"model-c":           generate.Video{},
		"model-d-flash-1.1": generate.Video{},
		"model-f-2.2":       generate.Video{},
		"model-g-3.1-rapid": mesh.Engine{},
	}
}
