package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/schollz/progressbar/v3"

	"genjobs/client"
)

type generateFlags struct {
	data, webhookURL, idempotencyKey, out string
	wait                                  bool
}

func generateCommand() *command {
	var f generateFlags
	return &command{
		name: "generate", args: "KIND/VENDOR/MODEL [field=value ...] [-d JSON|@file.json] [--webhook-url URL] [--idempotency-key K] [--wait] [--out PATH|DIR/]",
		summary: "Create a generation job; with --wait, wait until it ends (a progress bar on a terminal), and with --out write its result files.",
		example: `genjobs generate image/vendor-b/model-e-4 prompt="a red bicycle" width=1024 height=768 --wait --out bike.png`,
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&f.data, "d", "", "the request body as `JSON`, or @file.json; field=value arguments are added to it")
			fs.StringVar(&f.webhookURL, "webhook-url", "", "POST the job's record to this `URL` when it ends (X-Webhook-URL)")
			fs.StringVar(&f.idempotencyKey, "idempotency-key", "", "send `KEY` as the creation's Idempotency-Key (default: a random one, reused on every retry)")
			fs.BoolVar(&f.wait, "wait", false, "wait until the job ends")
			fs.StringVar(&f.out, "out", "", "with --wait, write the first result file to `PATH`, or every one into DIR/")
		},
		run: func(c *cli, ctx context.Context, _ *flag.FlagSet, args []string) error {
			return c.generate(ctx, f, args)
		},
	}
}

func generateHelp(w io.Writer) {
	fmt.Fprint(w, `
field=value values that parse as JSON numbers, booleans or arrays are sent as
such, others as strings (quote a number to send it as a string: 'seed="7"').
field=@path uploads the local image as an asset and sends its URL; on an array
field (style_images, image_urls, ...) a value that is not a JSON array becomes a
one-item array, and a repeated field adds items.

Endpoints and their fields (* required):
`)
	for _, e := range client.Endpoints {
		var fields []string
		for _, fl := range e.Fields {
			n := fl.Name
			if fl.Required {
				n += "*"
			}
			fields = append(fields, n)
		}
		fmt.Fprintf(w, "  %s\n      %s\n", strings.TrimPrefix(e.Path, "/generate/"), strings.Join(fields, " "))
	}
}

func (c *cli) generate(ctx context.Context, f generateFlags, args []string) error {
	if len(args) == 0 {
		return usagef("name the endpoint, such as image/vendor-b/model-e-4")
	}
	route, fields := args[0], args[1:]
	if strings.Contains(route, "=") {
		return usagef("the first argument is the endpoint (such as image/vendor-b/model-e-4), not %q", route)
	}
	if f.out != "" && !f.wait {
		return usagef("--out needs --wait")
	}
	body := map[string]any{}
	if f.data != "" {
		raw := []byte(f.data)
		if name, ok := strings.CutPrefix(f.data, "@"); ok {
			var err error
			if raw, err = os.ReadFile(name); err != nil {
				return usagef("-d: %v", err)
			}
		}
		if err := json.Unmarshal(raw, &body); err != nil || body == nil {
			return usagef("-d must be a JSON object: %v", err)
		}
	}
	endpoint, known := client.LookupEndpoint(route)
	if !known {
		var names []string
		for _, e := range client.Endpoints {
			names = append(names, strings.TrimPrefix(e.Path, "/generate/"))
		}
		return usagef("no endpoint %s; the endpoints are:\n  %s", route, strings.Join(names, "\n  "))
	}
	cl, err := c.client()
	if err != nil {
		return err
	}
	isArray := func(name string) bool {
		for _, fl := range endpoint.Fields {
			if fl.Name == name {
				return fl.Type == "array"
			}
		}
		return false
	}
	seen := map[string]bool{}
	for _, kv := range fields {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			return usagef("%q is not field=value", kv)
		}
		var v any
		if file, ok := strings.CutPrefix(value, "@"); ok {
			u, err := c.upload(ctx, cl, file)
			if err != nil {
				return err
			}
			v = u
		} else {
			v = typed(value)
		}
		if known && isArray(name) {
			if _, isList := v.([]any); !isList {
				v = []any{v}
			}
			if prev, ok := body[name].([]any); ok && seen[name] {
				v = append(prev, v.([]any)...)
			}
		} else if seen[name] {
			return usagef("%s is given twice", name)
		}
		seen[name] = true
		body[name] = v
	}
	if format, ok := formatOf(f.out); ok && hasField(endpoint, "output_format") && body["output_format"] == nil && !isDir(f.out) {
		// The file's name asks for a format the request left to its default.
		body["output_format"] = format
		fmt.Fprintf(c.stderr, "asking for output_format %s, as --out %s says\n", format, f.out)
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return err
	}
	var opts []client.GenerateOption
	if f.webhookURL != "" {
		opts = append(opts, client.WithWebhookURL(f.webhookURL))
	}
	if f.idempotencyKey != "" {
		opts = append(opts, client.WithIdempotencyKey(f.idempotencyKey))
	}
	j, err := cl.Generate(ctx, client.RawRequest{Route: route, Body: raw}, opts...)
	if err != nil {
		return err
	}
	if !f.wait {
		c.print(j.RawJSON(), humanJob(j))
		return nil
	}
	if c.stderrTTY {
		fmt.Fprintf(c.stderr, "job %s %s\n", j.ID, j.Status)
	}
	return c.waitAndSave(ctx, cl, j.ID, f.out)
}

// formatOf is the output_format a file name's extension asks for.
func formatOf(name string) (string, bool) {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".png":
		return "png", true
	case ".jpg", ".jpeg":
		return "jpg", true
	case ".webp":
		return "webp", true
	}
	return "", false
}

func hasField(e client.Endpoint, name string) bool {
	for _, f := range e.Fields {
		if f.Name == name {
			return true
		}
	}
	return false
}

// isDir reports whether --out names a directory: a trailing slash, or an
// existing directory.
func isDir(out string) bool {
	if strings.HasSuffix(out, "/") || strings.HasSuffix(out, string(os.PathSeparator)) {
		return true
	}
	st, err := os.Stat(out)
	return err == nil && st.IsDir()
}

// typed reads a field=value value: JSON numbers, booleans and arrays as
// such, anything else as a string.
func typed(value string) any {
	var v any
	if json.Unmarshal([]byte(value), &v) == nil {
		switch v.(type) {
		case float64: // sent as written: 9007199254740991 stays exact
			return json.Number(strings.TrimSpace(value))
		case bool, []any:
			return v
		}
	}
	return value
}

// upload sends a local image as an asset and returns its URL.
func (c *cli) upload(ctx context.Context, cl *client.Client, file string) (string, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", usagef("%v", err)
	}
	defer f.Close()
	if c.stderrTTY {
		fmt.Fprintf(c.stderr, "uploading %s\n", file)
	}
	a, err := cl.Assets.Upload(ctx, f, "")
	if errors.Is(err, client.ErrNotAnImage) || errors.Is(err, client.ErrTooLarge) {
		return "", usagef("%s: %v", file, err)
	}
	if err != nil {
		return "", fmt.Errorf("upload %s: %w", file, err)
	}
	return a.URL, nil
}

// waitAndSave waits for the job, with a progress bar on a terminal, prints
// its final record and writes its files to out.
func (c *cli) waitAndSave(ctx context.Context, cl *client.Client, id, out string) error {
	o := &client.WaitOptions{}
	var bar *progressbar.ProgressBar
	if c.stderrTTY {
		bar = progressbar.NewOptions(100, progressbar.OptionSetWriter(c.stderr), progressbar.OptionSetDescription("queued"),
			progressbar.OptionSetPredictTime(false), progressbar.OptionShowElapsedTimeOnFinish(), progressbar.OptionSetWidth(30))
		o.OnUpdate = func(j *client.Job) {
			// A completed job's bar is full: its record's progress is the
			// last one the engine reported (a few percent for a job that
			// ended between two reads). The bar is set before it is
			// described, so that no frame says completed at less.
			switch {
			case j.Status == client.StatusCompleted:
				_ = bar.Set(100)
			case j.Progress != nil:
				_ = bar.Set(int(*j.Progress * 100))
			}
			bar.Describe(string(j.Status))
		}
	}
	j, err := cl.Jobs.Wait(ctx, id, o)
	if bar != nil {
		if err == nil {
			_ = bar.Finish()
		}
		fmt.Fprintln(c.stderr)
	}
	if err != nil {
		return err
	}
	c.print(j.RawJSON(), humanJob(j))
	if out == "" {
		return nil
	}
	return c.save(ctx, cl, j, out)
}

// save writes the first result file to out, or every one into out when it
// names a directory (a trailing slash, or an existing directory).
func (c *cli) save(ctx context.Context, cl *client.Client, j *client.Job, out string) error {
	if j.Result == nil || len(j.Result.URLs) == 0 {
		return fmt.Errorf("job %s has no result files", j.ID)
	}
	if !isDir(out) {
		want, named := formatOf(out)
		got, known := formatOf(j.FileName(0))
		if named && known && want != got {
			fmt.Fprintf(c.stderr, "genjobs: warning: the result is a %s file (%s); %s gets its bytes as they are\n", got, j.FileName(0), out)
		}
		return c.saveOne(ctx, cl, j, 0, out)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	for i := range j.Result.URLs {
		if err := c.saveOne(ctx, cl, j, i, filepath.Join(out, j.FileName(i))); err != nil {
			return err
		}
	}
	return nil
}

func (c *cli) saveOne(ctx context.Context, cl *client.Client, j *client.Job, i int, path string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".genjobs-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	n, err := cl.Jobs.Download(ctx, j, i, tmp)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("download result %d of job %s: %w", i, j.ID, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	fmt.Fprintf(c.stderr, "wrote %s (%d bytes)\n", path, n)
	return nil
}
