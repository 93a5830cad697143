package main

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"genjobs/infra/local/devstack/devstacktest"
	"genjobs/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// syncBuffer is a buffer written by one goroutine and read by another.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type result struct {
	code           int
	stdout, stderr string
}

// genjobs runs the command line in-process against the API at url with
// token, stdout and stderr not terminals.
func genjobs(t *testing.T, url, token string, args ...string) result {
	t.Helper()
	var out, errOut syncBuffer
	env := map[string]string{"GENJOBS_TOKEN": token, "GENJOBS_API_URL": url}
	c := &cli{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut, getenv: func(k string) string { return env[k] }}
	code := c.run(context.Background(), args)
	return result{code, out.String(), errOut.String()}
}

// genjobsOnTerminal runs the command line as genjobs does, stdout a
// terminal.
func genjobsOnTerminal(t *testing.T, url, token string, args ...string) result {
	t.Helper()
	var out, errOut syncBuffer
	env := map[string]string{"GENJOBS_TOKEN": token, "GENJOBS_API_URL": url}
	c := &cli{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut, getenv: func(k string) string { return env[k] }, stdoutTTY: true}
	code := c.run(context.Background(), args)
	return result{code, out.String(), errOut.String()}
}

func TestGenjobsAgainstTheStack(t *testing.T) {
	st := devstacktest.Start(t)
	dir := t.TempDir()
	run := func(args ...string) result { return genjobs(t, st.URL, st.Token, args...) }

	t.Run("jobs list is a table on a terminal; jobs show prints the details", func(t *testing.T) {
		r := run("generate", "image/vendor-b/model-e-4", "prompt=a table", "width=64", "height=64", "--wait")
		var j struct {
			JobID string `json:"job_id"`
		}
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &j) != nil {
			t.Fatalf("exit %d: %s %s", r.code, r.stdout, r.stderr)
		}
		r = genjobsOnTerminal(t, st.URL, st.Token, "jobs", "list", "--limit", "5")
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		if r.code != 0 || len(lines) < 2 || strings.Join(strings.Fields(lines[0]), " ") != "ID STATUS ENDPOINT CREATED COST" {
			t.Fatalf("jobs list on a terminal: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
		var row []string
		for _, l := range lines[1:] {
			if strings.HasPrefix(l, j.JobID) {
				row = strings.Fields(l)
			}
		}
		if len(row) != 7 || row[1] != "completed" || row[2] != "image/vendor-b/model-e-4" || row[5] != "0.03" || row[6] != "USD" {
			t.Errorf("the job's row %q in\n%s", row, r.stdout)
		}
		if strings.Contains(r.stdout, "http") {
			t.Errorf("the table shows result URLs:\n%s", r.stdout)
		}
		// Off a terminal, jobs list still prints the API's JSON.
		if r := run("jobs", "list", "--limit", "1"); r.code != 0 || !strings.HasPrefix(r.stdout, `{"items":[`) {
			t.Errorf("jobs list off a terminal: %d %q", r.code, r.stdout)
		}

		r = run("jobs", "show", j.JobID)
		var d struct {
			Endpoint string                           `json:"endpoint"`
			Source   string                           `json:"source"`
			Billing  struct{ Currency, Price string } `json:"billing"`
			Input    struct{ Prompt string }          `json:"input"`
		}
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &d) != nil || d.Endpoint != "/generate/image/vendor-b/model-e-4" ||
			d.Source != "api" || d.Billing.Currency != "usd" || d.Billing.Price != "0.030000" || d.Input.Prompt != "a table" {
			t.Errorf("jobs show off a terminal: exit %d, %q, %s", r.code, r.stdout, r.stderr)
		}
		r = genjobsOnTerminal(t, st.URL, st.Token, "jobs", "show", j.JobID)
		for _, want := range []string{j.JobID + "  completed", "endpoint  /generate/image/vendor-b/model-e-4", "source    api", "cost      0.03 USD", "route     reference", `"prompt": "a table"`} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("jobs show on a terminal lacks %q:\n%s", want, r.stdout)
			}
		}
		if r := run("jobs", "show", "0194b3a0-5c6e-7d2f-9a01-23456789abcd"); r.code != exitRefused || !strings.Contains(r.stderr, "Job not found.") {
			t.Errorf("jobs show of an unknown job: exit %d, %q", r.code, r.stderr)
		}
	})

	t.Run("models lists fields, price rules and durations from the schemas", func(t *testing.T) {
		r := run("models")
		var out struct {
			Models []struct {
				Path, Price, Takes string
				Fields             []struct {
					Name        string
					Type        string
					Description string
					Required    bool
					Minimum     *float64
					Maximum     *float64
					Default     any
				}
			}
		}
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &out) != nil || len(out.Models) != 7 {
			t.Fatalf("models: exit %d, %q, %q", r.code, r.stdout, r.stderr)
		}
		for _, m := range out.Models {
			if m.Path != "/generate/image/vendor-b/model-e-4" {
				continue
			}
			if m.Price != "0.03 USD per job" || m.Takes == "" {
				t.Errorf("model-e-4's price %q, takes %q", m.Price, m.Takes)
			}
			// The fields as the playground's form shows them: in the
			// schema's order, each with its description (package form).
			if len(m.Fields) == 0 || m.Fields[0].Name != "prompt" || m.Fields[0].Description == "" {
				t.Errorf("model-e-4's fields do not start with the schema's prompt and its description: %+v", m.Fields)
			}
			found := false
			for _, f := range m.Fields {
				if f.Name == "width" {
					found = f.Type == "integer" && f.Minimum != nil && f.Maximum != nil && *f.Maximum >= 1024
				}
			}
			if !found {
				t.Errorf("model-e-4's width field is not an integer with bounds: %+v", m.Fields)
			}
		}
		r = genjobsOnTerminal(t, "", "", "models")
		if r.code != 0 || !strings.Contains(r.stdout, "image/vendor-b/model-e-4") || !strings.Contains(r.stdout, "FIELD") ||
			!strings.Contains(r.stdout, "compute units") {
			t.Errorf("models on a terminal: exit %d\n%s", r.code, r.stdout)
		}
	})

	t.Run("generate --wait --out writes the file of the asked size", func(t *testing.T) {
		out := filepath.Join(dir, "bike.png")
		r := run("generate", "image/vendor-b/model-e-4", "prompt=a red bicycle", "width=96", "height=64", "--wait", "--out", out)
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		var j struct{ Status string }
		if err := json.Unmarshal([]byte(r.stdout), &j); err != nil || j.Status != "completed" {
			t.Errorf("stdout %q; want the completed record as JSON", r.stdout)
		}
		assertPNG(t, out, 96, 64)
	})

	t.Run("field=@file uploads the image for enhance; --out DIR/", func(t *testing.T) {
		src := filepath.Join(dir, "local.png")
		writePNG(t, src, 40, 30)
		outDir := filepath.Join(dir, "enhanced") + "/"
		r := run("generate", "enhance/vendor-a/standard-enhance", "image_url=@"+src, "model=Standard V2", "width=80", "height=60",
			"output_format=png", "--wait", "--out", outDir)
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		assertPNG(t, filepath.Join(outDir, "0.png"), 80, 60)
	})

	t.Run("--out NAME.png asks for PNG; a result of another format is written with a warning", func(t *testing.T) {
		src := filepath.Join(dir, "for-format.png")
		writePNG(t, src, 40, 30)
		out := filepath.Join(dir, "big.png") // standard-enhance's default output_format is jpg
		r := run("generate", "enhance/vendor-a/standard-enhance", "image_url=@"+src, "model=Standard V2", "width=80", "height=60", "--wait", "--out", out)
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		assertPNG(t, out, 80, 60)
		if !strings.Contains(r.stderr, "output_format png") {
			t.Errorf("stderr %q does not say output_format png was asked for", r.stderr)
		}
		// A job whose result is a JPEG, downloaded to a .webp name: the
		// bytes are the job's, and stderr says so.
		r = run("generate", "enhance/vendor-a/standard-enhance", "image_url=@"+src, "model=Standard V2", "width=80", "height=60", "output_format=jpg", "--wait")
		var j struct {
			JobID string `json:"job_id"`
		}
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &j) != nil {
			t.Fatalf("exit %d: %s %s", r.code, r.stdout, r.stderr)
		}
		r = run("jobs", "download", j.JobID, "--out", filepath.Join(dir, "photo.webp"))
		if r.code != 0 || !strings.Contains(r.stderr, "warning: the result is a jpg file") {
			t.Errorf("exit %d, stderr %q; want a warning that the result is a jpg", r.code, r.stderr)
		}
	})

	t.Run("-d with field=value typing", func(t *testing.T) {
		body := filepath.Join(dir, "body.json")
		if err := os.WriteFile(body, []byte(`{"prompt":"from the file","width":64}`), 0o644); err != nil {
			t.Fatal(err)
		}
		r := run("generate", "image/vendor-b/model-e-4", "-d", "@"+body, "height=64", "seed=7")
		if r.code != 0 || !strings.Contains(r.stdout, `"status":"queued"`) && !strings.Contains(r.stdout, `"status":"backlogged"`) {
			t.Fatalf("exit %d: %s %s", r.code, r.stdout, r.stderr)
		}
		// A number given as a string is refused by the API: exit 3 with its message.
		r = run("generate", "image/vendor-b/model-e-4", "prompt=x", `width="64"`, "height=64")
		if r.code != 3 || !strings.Contains(r.stderr, "The request body is invalid: width") {
			t.Errorf("exit %d: %s", r.code, r.stderr)
		}
	})

	t.Run("jobs list --all walks every page", func(t *testing.T) {
		r := run("jobs", "list", "--limit", "1", "--all")
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		if r.code != 0 || len(lines) < 3 {
			t.Fatalf("exit %d, %d lines: %s", r.code, len(lines), r.stderr)
		}
		for _, l := range lines {
			var j struct {
				JobID string `json:"job_id"`
			}
			if json.Unmarshal([]byte(l), &j) != nil || j.JobID == "" {
				t.Errorf("line %q is not a job record", l)
			}
		}
		one := run("jobs", "list", "--limit", "1")
		if one.code != 0 || !strings.Contains(one.stdout, `"next_cursor":"`) {
			t.Errorf("one page: exit %d %s", one.code, one.stdout)
		}
	})

	t.Run("jobs cancel cancels; waiting on it exits 1", func(t *testing.T) {
		hang := hangingImage(t)
		r := run("generate", "image/vendor-b/model-e-4", "prompt=x", "width=64", "height=64", "style_images="+hang)
		var j struct {
			JobID string `json:"job_id"`
		}
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &j) != nil {
			t.Fatalf("exit %d: %s %s", r.code, r.stdout, r.stderr)
		}
		if r := run("jobs", "cancel", j.JobID); r.code != 0 || !strings.Contains(r.stdout, `"status":"cancelled"`) {
			t.Fatalf("cancel: exit %d: %s %s", r.code, r.stdout, r.stderr)
		}
		if r := run("jobs", "wait", j.JobID); r.code != 1 || !strings.Contains(r.stderr, "cancelled") {
			t.Errorf("wait: exit %d: %s", r.code, r.stderr)
		}
		if r := run("jobs", "cancel", j.JobID); r.code != 3 {
			t.Errorf("cancelling again: exit %d: %s; want 3 (409)", r.code, r.stderr)
		}
	})

	t.Run("a failed job exits 1 with its code", func(t *testing.T) {
		gone := httptest.NewServer(http.NotFoundHandler())
		defer gone.Close()
		r := run("generate", "image/vendor-b/model-e-4", "prompt=x", "width=64", "height=64", "style_images="+gone.URL+"/x.png", "--wait")
		if r.code != 1 || !strings.Contains(r.stderr, "invalid_input") {
			t.Errorf("exit %d: %s", r.code, r.stderr)
		}
	})

	t.Run("exit codes", func(t *testing.T) {
		for _, tc := range []struct {
			name  string
			token string
			args  []string
			code  int
			say   string
		}{
			{"unknown command", st.Token, []string{"jobz"}, 2, "unknown command"},
			{"not field=value", st.Token, []string{"generate", "image/vendor-b/model-e-4", "prompt"}, 2, "is not field=value"},
			{"no token", "", []string{"jobs", "list"}, 2, "GENJOBS_TOKEN"},
			{"an unknown flag", st.Token, []string{"jobs", "list", "--colour"}, 2, "colour"},
			{"an upload that is not an image", st.Token, []string{"generate", "enhance/vendor-a/standard-enhance", "image_url=@cli_test.go"}, 2, "must be a PNG, JPEG or WebP"},
			{"an upload that does not exist", st.Token, []string{"generate", "enhance/vendor-a/standard-enhance", "image_url=@nothing.png"}, 2, "nothing.png"},
			{"--out without --wait", st.Token, []string{"generate", "3d/vendor-g/model-g-3.1-rapid", "--out", "x"}, 2, "--out needs --wait"},
			{"a bad token", "gjs_" + strings.Repeat("A", 43), []string{"jobs", "list"}, 4, "You are not authenticated."},
			{"a missing job", st.Token, []string{"jobs", "get", "0194b3a0-5c6e-7d2f-9a01-23456789abcd"}, 3, "genjobs: the API answered 404 Not Found: Job not found."},
			{"an unknown endpoint", st.Token, []string{"generate", "image/vendor-x/nope", "prompt=x"}, 2, "no endpoint image/vendor-x/nope; the endpoints are:\n  enhance/vendor-a/standard-enhance\n"},
			{"an invalid body", st.Token, []string{"generate", "image/vendor-b/model-e-4", "prompt=x", "width=1", "height=64"}, 3, "width must be between 64 and 4096"},
			{"402", st.Workspace(t, "ws-cli-broke", 0, 20, 5), []string{"generate", "3d/vendor-g/model-g-3.1-rapid"}, 3, "You have run out of credits."},
		} {
			r := genjobs(t, st.URL, tc.token, tc.args...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.say) {
				t.Errorf("%s: exit %d, stderr %q; want %d and %q", tc.name, r.code, r.stderr, tc.code, tc.say)
			}
			if strings.Contains(r.stderr, "genjobs: genjobs") || strings.Contains(r.stderr, "genjobs: client:") {
				t.Errorf("%s: stderr %q names the program twice", tc.name, r.stderr)
			}
		}
	})

	t.Run("webhook listen prints a verified delivery", func(t *testing.T) {
		ctx, stop := context.WithCancel(context.Background())
		defer stop()
		var out, errOut syncBuffer
		env := map[string]string{"GENJOBS_TOKEN": st.Token, "GENJOBS_API_URL": st.URL}
		listener := &cli{stdout: &out, stderr: &errOut, getenv: func(k string) string { return env[k] }}
		done := make(chan int, 1)
		go func() { done <- listener.run(ctx, []string{"webhook", "listen", "--port", "0"}) }()
		hook := waitFor(t, &errOut, regexp.MustCompile(`--webhook-url (\S+)`))
		r := run("generate", "3d/vendor-g/model-g-3.1-rapid", "prompt=a teapot", "--webhook-url", hook)
		var j struct {
			JobID string `json:"job_id"`
		}
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &j) != nil {
			t.Fatalf("exit %d: %s %s", r.code, r.stdout, r.stderr)
		}
		waitFor(t, &out, regexp.MustCompile(`"job_id":"`+j.JobID+`","status":"completed"`))
		stop()
		if code := <-done; code != 0 {
			t.Errorf("webhook listen exit %d: %s", code, errOut.String())
		}
	})
}

// Every command answers --help with an example, exit 0.
func TestHelp(t *testing.T) {
	for _, cmd := range commands() {
		r := genjobs(t, "http://127.0.0.1:1", "", append(strings.Fields(cmd.name), "--help")...)
		if r.code != 0 || !strings.Contains(r.stdout, "Example:\n  genjobs ") || !strings.Contains(r.stdout, "usage: genjobs "+cmd.name) {
			t.Errorf("%s --help: exit %d\n%s", cmd.name, r.code, r.stdout)
		}
	}
	if r := genjobs(t, "", "", "--help"); r.code != 0 || !strings.Contains(r.stdout, "Exit codes") {
		t.Errorf("genjobs --help: exit %d", r.code)
	}
	if r := genjobs(t, "", "", "generate", "--help"); !strings.Contains(r.stdout, "image/vendor-b/model-e-4\n      prompt* width* height* seed style_images") {
		t.Errorf("generate --help does not list the endpoints' fields:\n%s", r.stdout)
	}
}

// A group's name with --help lists its commands; alone, or with an unknown
// command, it is a usage error that lists them.
func TestGroupHelp(t *testing.T) {
	for group, want := range map[string]string{"jobs": "jobs get", "webhook": "webhook listen", "assets": "assets upload", "styles": "styles share"} {
		if r := genjobs(t, "", "", group, "--help"); r.code != 0 || !strings.Contains(r.stdout, "  "+want+" ") || strings.Contains(r.stderr, "unknown command") {
			t.Errorf("%s --help: exit %d, stdout %q, stderr %q; want its commands", group, r.code, r.stdout, r.stderr)
		}
		if r := genjobs(t, "", "", group); r.code != 2 || !strings.Contains(r.stderr, "  "+want+" ") {
			t.Errorf("%s alone: exit %d, stderr %q; want 2 and its commands", group, r.code, r.stderr)
		}
	}
	if r := genjobs(t, "", "", "jobs", "frob"); r.code != 2 || !strings.Contains(r.stderr, `unknown command "jobs frob"`) || !strings.Contains(r.stderr, "jobs wait") {
		t.Errorf("jobs frob: exit %d, stderr %q", r.code, r.stderr)
	}
}

// Flags print as the docs write them: --name for a long one, -d for a
// one-letter one.
func TestFlagsPrintWithTheirDashes(t *testing.T) {
	r := genjobs(t, "", "", "generate", "--help")
	for _, want := range []string{"\n  --wait\n", "\n  --out PATH\n", "\n  --webhook-url URL\n", "\n  -d JSON\n", "\n  --api-url URL\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("generate --help lacks %q:\n%s", want, r.stdout)
		}
	}
	if regexp.MustCompile(`\n  -[a-z][a-z]`).MatchString(r.stdout) {
		t.Errorf("generate --help prints a long flag with one dash:\n%s", r.stdout)
	}
}

func TestFieldValueTyping(t *testing.T) {
	for in, want := range map[string]string{
		"1024": `1024`, "-0.5": `-0.5`, "9007199254740991": `9007199254740991`, "true": `true`,
		`["a","b"]`: `["a","b"]`, "a red bicycle": `"a red bicycle"`, `"64"`: `"\"64\""`, "null": `"null"`,
		`{"a":1}`: `"{\"a\":1}"`, "16:9": `"16:9"`,
	} {
		got, _ := json.Marshal(typed(in))
		if string(got) != want {
			t.Errorf("%s: %s; want %s", in, got, want)
		}
	}
}

func waitFor(t *testing.T, b *syncBuffer, re *regexp.Regexp) string {
	t.Helper()
	for end := time.Now().Add(90 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if m := re.FindStringSubmatch(b.String()); m != nil {
			if len(m) > 1 {
				return m[1]
			}
			return m[0]
		}
	}
	t.Fatalf("no %s within 90 s in %q", re, b.String())
	return ""
}

func hangingImage(t *testing.T) string {
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-stop:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(stop); srv.Close() })
	return srv.URL + "/slow.png"
}

func writePNG(t *testing.T, path string, w, h int) {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, newGray(w, h)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func assertPNG(t *testing.T, path string, w, h int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if b := img.Bounds(); b.Dx() != w || b.Dy() != h {
		t.Errorf("%s is %dx%d; want %dx%d", path, b.Dx(), b.Dy(), w, h)
	}
}

func newGray(w, h int) *image.Gray {
	img := image.NewGray(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = uint8(i * 7)
	}
	return img
}

// On a terminal, the progress bar of a job that completes reads 100%
// from the moment it says completed: the last record's progress (a few
// percent for a job that ends between two reads) is not the bar's.
func TestTheBarOfACompletedJobReads100(t *testing.T) {
	st := devstacktest.Start(t)
	for i := range 3 {
		var out, errOut syncBuffer
		env := map[string]string{"GENJOBS_TOKEN": st.Token, "GENJOBS_API_URL": st.URL}
		c := &cli{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut, stderrTTY: true, getenv: func(k string) string { return env[k] }}
		if code := c.run(context.Background(), []string{"generate", "image/vendor-b/model-e-4", "prompt=a red bicycle", "width=64", "height=64", "--wait"}); code != 0 {
			t.Fatalf("exit %d: %s", code, errOut.String())
		}
		shown := regexp.MustCompile(`completed\s+(\d+)%`).FindAllStringSubmatch(errOut.String(), -1)
		if len(shown) == 0 {
			t.Fatalf("run %d: no bar says completed: %q", i, errOut.String())
		}
		for _, m := range shown {
			if m[1] != "100" {
				t.Errorf("run %d: the bar reads completed %s%%: %q; want 100%% once completed", i, m[1], errOut.String())
				break
			}
		}
	}
}
