package fetch_test

import (
	"context"
	"errors"
	"fmt"

	"genjobs/internal/fetch"
	"genjobs/internal/netguard"
)

func ExampleFetcher_Fetch() {
	f := fetch.New(&netguard.Guard{})
	ctx := context.Background()

	img, err := f.Fetch(ctx, "image_url", "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAwS2OUAAAAABJRU5ErkJggg==")
	fmt.Println(img.ContentType, len(img.Data), err)

	_, err = f.Fetch(ctx, "start_image", "http://169.254.169.254/latest/meta-data/")
	fmt.Println(err, errors.Is(err, fetch.ErrBlocked))

	_, err = f.Fetch(ctx, "reference_images[0]", "data:image/png;base64,aGVsbG8=")
	fmt.Println(err, errors.Is(err, fetch.ErrInvalid))
	// Output:
	// image/png 70 <nil>
	// start_image: the address 169.254.169.254 is not allowed true
	// reference_images[0]: not a PNG, JPEG or WebP image (it looks like text/plain) true
}
