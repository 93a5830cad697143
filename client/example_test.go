package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http"
	"os"
	"time"

	"genjobs/client"
)

// The whole round trip: create a job, wait for it, write its file. The
// token and the API's address come from GENJOBS_TOKEN and GENJOBS_API_URL.
func Example() {
	ctx := context.Background()
	c, err := client.NewClient()
	if err != nil {
		log.Fatal(err)
	}
	job, err := c.Run(ctx, &client.ModelE4Request{Prompt: "a red bicycle", Width: 1024, Height: 768}, nil)
	if err != nil {
		log.Fatal(err) // a *client.JobFailedError carries the job's error code
	}
	f, err := os.Create("bike.png")
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	if _, err := c.Jobs.Download(ctx, job, 0, f); err != nil {
		log.Fatal(err)
	}
}

// Optional fields are pointers; Ptr makes one. Unset fields are left out,
// so the API applies its defaults.
func ExamplePtr() {
	req := client.ModelBFastRequest{Prompt: "waves at dusk", Duration: client.Ptr(8), Resolution: client.Ptr("480p")}
	body, _ := json.Marshal(req)
	fmt.Println(req.Path())
	fmt.Println(string(body))
	// Output:
	// /generate/video/vendor-b/model-b-fast
	// {"prompt":"waves at dusk","resolution":"480p","duration":8}
}

// A field or an endpoint this package does not know yet goes as a raw body.
func ExampleRawRequest() {
	req := client.RawRequest{Route: "3d/vendor-g/model-g-3.1-rapid", Body: json.RawMessage(`{"prompt":"a teapot"}`)}
	fmt.Println(req.Path())
	// Output: /generate/3d/vendor-g/model-g-3.1-rapid
}

// Endpoints lists what each generation endpoint takes.
func ExampleLookupEndpoint() {
	e, _ := client.LookupEndpoint("image/vendor-b/model-e-4")
	for _, f := range e.Fields {
		fmt.Println(f.Name, f.Type, f.Required)
	}
	// Output:
	// prompt string true
	// width integer true
	// height integer true
	// seed integer false
	// style_images array false
}

// Refusals are *APIError values with the API's message and the request id
// to quote to support.
func ExampleAPIError() {
	ctx := context.Background()
	c, err := client.NewClient()
	if err != nil {
		log.Fatal(err)
	}
	_, err = c.Generate(ctx, &client.ModelG31RapidRequest{Prompt: client.Ptr("a teapot")})
	var apiErr *client.APIError
	if errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusPaymentRequired {
		fmt.Println(apiErr.Message, apiErr.Detail, apiErr.RequestID)
	}
}

// Every creation carries an Idempotency-Key; give your own to make a
// request safe to repeat across restarts of your program.
func ExampleWithIdempotencyKey() {
	c, err := client.NewClient()
	if err != nil {
		log.Fatal(err)
	}
	job, err := c.Generate(context.Background(), &client.ModelCRequest{Prompt: "a paper boat"},
		client.WithIdempotencyKey("order-1234-boat"), client.WithWebhookURL("https://example.com/hooks/genjobs"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(job.ID, job.Replayed())
}

// List walks every page; breaking out of the loop stops reading.
func ExampleJobsService_List() {
	c, err := client.NewClient()
	if err != nil {
		log.Fatal(err)
	}
	for job, err := range c.Jobs.List(context.Background(), client.ListParams{Status: client.StatusFailed}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(job.ID, job.Error.Code)
	}
}

// Wait polls until the job ends and reports each record read.
func ExampleJobsService_Wait() {
	c, err := client.NewClient()
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	job, err := c.Jobs.Wait(ctx, "0194b3a0-5c6e-7d2f-9a01-23456789abcd", &client.WaitOptions{
		OnUpdate: func(j *client.Job) { fmt.Println(j.Status) },
	})
	var failed *client.JobFailedError
	switch {
	case errors.As(err, &failed):
		fmt.Println("failed:", failed.Job.Error.Code)
	case err != nil:
		log.Fatal(err)
	default:
		fmt.Println(job.Result.URLs)
	}
}

// Upload a local image and use it as a job's input.
func ExampleAssetsService_Upload() {
	ctx := context.Background()
	c, err := client.NewClient()
	if err != nil {
		log.Fatal(err)
	}
	f, err := os.Open("photo.jpg")
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	asset, err := c.Assets.Upload(ctx, f, "") // the type is read from the bytes
	if err != nil {
		log.Fatal(err)
	}
	_, err = c.Generate(ctx, &client.StandardEnhanceRequest{ImageURL: asset.URL, Model: "Standard V2", Width: 4000, Height: 3000})
	if err != nil {
		log.Fatal(err)
	}
}

// A webhook receiver: the handler verifies each delivery and calls the
// function once per delivery, however often the service retries it.
func ExampleWebhookVerifier_Handler() {
	const hookURL = "https://example.com/hooks/genjobs" // as given to WithWebhookURL
	v := client.NewWebhookVerifier("https://api.example.com", hookURL)
	http.Handle("/hooks/genjobs", v.Handler(func(ctx context.Context, ev *client.WebhookEvent) error {
		fmt.Println(ev.JobID, ev.Job.Status)
		return nil // an error answers 500: the service delivers again later
	}))
	log.Fatal(http.ListenAndServe("127.0.0.1:9000", nil))
}
