package catalog_test

import (
	"fmt"
	"time"

	"genjobs/internal/catalog"
)

func ExampleEndpoint_Decode() {
	c, err := catalog.New() // once, at init
	if err != nil {
		panic(err)
	}
	e, _ := c.Lookup("video", "vendor-c", "model-c")
	now := time.Date(2026, time.March, 1, 0, 0, 0, 0, time.UTC)

	req, err := e.Decode([]byte(`{"prompt":"a red fox","startImage":"https://example.com/fox.png","duration":8.0}`), now)
	if err != nil {
		panic(err)
	}
	fmt.Println(string(req.JSON()))
	for _, d := range req.Deprecations {
		fmt.Println(d.Field, "is now", d.Replacement, "until", d.Sunset.Format(time.DateOnly))
	}

	_, err = e.Decode([]byte(`{"prompt":"a red fox","duration":11,"colour":"red"}`), now)
	fmt.Println(err)
	// Output:
	// {"aspect_ratio":"1280:720","duration":8,"prompt":"a red fox","start_image":"https://example.com/fox.png"}
	// startImage is now start_image until 2026-06-19
	// The request body is invalid: colour is not a known field
}
