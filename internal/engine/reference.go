package engine

// Reference returns the reference engine of every model.
func Reference() Registry {
	return Registry{
		"standard-enhance": Enhance{},
		"model-e-4":        Image{},
	}
}
