package engine

// Reference returns the reference engine of every model.
func Reference() Registry {
	return Registry{
		"standard-enhance":  Enhance{},
		"model-e-4":         Image{},
		"model-b-fast":      Video{},
		"model-c":           Video{},
		"model-d-flash-1.1": Video{},
		"model-f-2.2":       Video{},
		"model-g-3.1-rapid": Mesh{},
	}
}
