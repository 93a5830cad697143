package emulator

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

const (
	// DynamoDBLocalVersion is the DynamoDB Local shipped by dynamoDBPackage.
	DynamoDBLocalVersion = "1.25.1"
	// dynamoDBPackage carries AWS's DynamoDB Local under emulator/. Only its
	// tarball is fetched (npm pack): installing it would pull its wrapper's
	// dependencies too (hundreds of MB).
	dynamoDBPackage = "amplify-dynamodb-simulator@2.9.30"
	dynamoDBTarball = "amplify-dynamodb-simulator-2.9.30.tgz"
	// DynamoDBTarballSHA256 pins the tarball's content; it matches the
	// registry's sha512 integrity for that version.
	DynamoDBTarballSHA256 = "3503ffac19f183407909fecdacf4db51ab1fdad1da7b2f177016670b2d80e4b9"
	dynamoDBTarPrefix     = "package/emulator/"
)

// Installation locates installed emulators.
type Installation struct {
	// DynamoDBDir holds DynamoDBLocal.jar and DynamoDBLocal_lib/.
	DynamoDBDir string
	// FauxqsScript is fauxqs's command-line entry point, run with node.
	FauxqsScript string
}

// Install puts DynamoDB Local into cacheDir and fauxqs into
// <repoRoot>/infra/local/node_modules unless they are already there, and
// returns where they are. A re-run with nothing to do costs a few stats and
// one hash of package-lock.json. Concurrent callers (parallel test binaries)
// are serialised by a lock file in cacheDir.
func Install(ctx context.Context, repoRoot, cacheDir string) (Installation, error) {
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return Installation{}, err
	}
	unlock, err := lockFile(ctx, filepath.Join(cacheDir, ".install.lock"))
	if err != nil {
		return Installation{}, err
	}
	defer unlock()

	// Both fetch from the npm registry; doing them at once halves a cold install.
	type result struct {
		path string
		err  error
	}
	ddb := make(chan result, 1)
	go func() {
		p, err := installDynamoDB(ctx, cacheDir)
		ddb <- result{p, err}
	}()
	script, ferr := installFauxqs(ctx, filepath.Join(repoRoot, "infra", "local"))
	d := <-ddb
	if err := errors.Join(d.err, ferr); err != nil {
		return Installation{}, err
	}
	return Installation{DynamoDBDir: d.path, FauxqsScript: script}, nil
}

// lockFile takes an exclusive flock, polling so that ctx can cancel the wait.
func lockFile(ctx context.Context, path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil // closing releases the lock
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for another install to finish (%s): %w", path, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func installDynamoDB(ctx context.Context, cacheDir string) (string, error) {
	dest := filepath.Join(cacheDir, "dynamodb-local-"+DynamoDBLocalVersion)
	// The directory only ever appears complete (renamed into place), so its
	// jar being there means the install is whole.
	if _, err := os.Stat(filepath.Join(dest, "DynamoDBLocal.jar")); err == nil {
		return dest, nil
	}
	// Under the install lock, these are leftovers of interrupted installs.
	for _, pattern := range []string{".npm-pack-*", ".dynamodb-local-*"} {
		stale, _ := filepath.Glob(filepath.Join(cacheDir, pattern))
		for _, dir := range stale {
			_ = os.RemoveAll(dir)
		}
	}
	tmp, err := os.MkdirTemp(cacheDir, ".npm-pack-*")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	if out, err := run(ctx, tmp, "npm", "pack", dynamoDBPackage, "--silent", "--pack-destination", tmp); err != nil {
		return "", fmt.Errorf("fetch DynamoDB Local (npm pack %s): %w\n%s", dynamoDBPackage, err, tail(out, 2048))
	}
	tarball := filepath.Join(tmp, dynamoDBTarball)
	if err := VerifySHA256(tarball, DynamoDBTarballSHA256); err != nil {
		return "", err
	}
	// Staged next to dest so that the final rename stays on one file system.
	staging, err := os.MkdirTemp(cacheDir, ".dynamodb-local-*")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(staging) // a no-op once renamed
	if err := extractTarGz(tarball, dynamoDBTarPrefix, staging); err != nil {
		return "", fmt.Errorf("extract %s: %w", dynamoDBTarball, err)
	}
	if _, err := os.Stat(filepath.Join(staging, "DynamoDBLocal.jar")); err != nil {
		return "", fmt.Errorf("%s holds no %sDynamoDBLocal.jar", dynamoDBTarball, dynamoDBTarPrefix)
	}
	if err := os.Chmod(staging, 0o755); err != nil {
		return "", err
	}
	if err := os.Rename(staging, dest); err != nil {
		return "", fmt.Errorf("install DynamoDB Local into %s: %w", dest, err)
	}
	return dest, nil
}

// ChecksumError reports a file whose SHA-256 is not the pinned one.
type ChecksumError struct {
	Path, Expected, Actual string
}

func (e *ChecksumError) Error() string {
	return fmt.Sprintf("checksum mismatch for %s: expected sha256 %s, got %s (refusing to install it)", e.Path, e.Expected, e.Actual)
}

// VerifySHA256 returns a *ChecksumError unless the file's SHA-256 is want (hex).
func VerifySHA256(path, want string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return fmt.Errorf("hash %s: %w", path, err)
	}
	got := hex.EncodeToString(h.Sum(nil))
	if !strings.EqualFold(got, want) {
		return &ChecksumError{Path: path, Expected: strings.ToLower(want), Actual: got}
	}
	return nil
}

// extractTarGz writes the regular files under prefix in the archive into
// dest, with prefix stripped. Entries that would land outside dest are refused.
func extractTarGz(archive, prefix, dest string) error {
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return err
	}
	tr := tar.NewReader(gz)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		rel, ok := strings.CutPrefix(hdr.Name, prefix)
		if !ok || rel == "" {
			continue
		}
		if !filepath.IsLocal(rel) {
			return fmt.Errorf("unsafe path in archive: %q", hdr.Name)
		}
		target := filepath.Join(dest, rel)
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			if err := writeFile(target, tr, hdr.FileInfo().Mode().Perm()|0o644); err != nil {
				return err
			}
		default:
			// npm tarballs hold only files; links could point outside dest.
			return fmt.Errorf("unexpected entry type %q for %q in archive", hdr.Typeflag, hdr.Name)
		}
	}
}

func writeFile(path string, r io.Reader, perm os.FileMode) error {
	out, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, r); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// stampName sits inside node_modules so that npm ci, which deletes
// node_modules first, can never leave a stale stamp behind.
const stampName = ".genjobs-package-lock.sha256"

// installFauxqs runs npm ci in nodeDir when fauxqs is missing or
// package-lock.json changed since the last install, and returns the path of
// fauxqs's command-line script.
func installFauxqs(ctx context.Context, nodeDir string) (string, error) {
	lock, err := os.ReadFile(filepath.Join(nodeDir, "package-lock.json"))
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(lock)
	want := hex.EncodeToString(sum[:])
	stamp := filepath.Join(nodeDir, "node_modules", stampName)
	if got, err := os.ReadFile(stamp); err == nil && strings.TrimSpace(string(got)) == want {
		if script, err := fauxqsScript(nodeDir); err == nil {
			return script, nil
		}
	}
	if out, err := run(ctx, nodeDir, "npm", "ci", "--no-audit", "--no-fund"); err != nil {
		return "", fmt.Errorf("install fauxqs (npm ci in %s): %w\n%s", nodeDir, err, tail(out, 2048))
	}
	script, err := fauxqsScript(nodeDir)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(stamp, []byte(want+"\n"), 0o644); err != nil {
		return "", err
	}
	return script, nil
}

// fauxqsScript reads the bin entry of fauxqs's package.json, so that the
// script is run with node directly: npx would add a process of its own.
func fauxqsScript(nodeDir string) (string, error) {
	pkgDir := filepath.Join(nodeDir, "node_modules", "fauxqs")
	data, err := os.ReadFile(filepath.Join(pkgDir, "package.json"))
	if err != nil {
		return "", err
	}
	var pkg struct {
		Bin json.RawMessage `json:"bin"`
	}
	if err := json.Unmarshal(data, &pkg); err != nil {
		return "", fmt.Errorf("fauxqs package.json: %w", err)
	}
	var bin string
	if err := json.Unmarshal(pkg.Bin, &bin); err != nil {
		var bins map[string]string
		if err := json.Unmarshal(pkg.Bin, &bins); err != nil || bins["fauxqs"] == "" {
			return "", errors.New("fauxqs package.json has no fauxqs bin entry")
		}
		bin = bins["fauxqs"]
	}
	script := filepath.Join(pkgDir, filepath.FromSlash(bin))
	if _, err := os.Stat(script); err != nil {
		return "", err
	}
	return script, nil
}

// run runs a tool to completion, returning its combined output.
func run(ctx context.Context, dir, name string, args ...string) ([]byte, error) {
	if _, err := exec.LookPath(name); err != nil {
		return nil, fmt.Errorf("%s not found on PATH (Node 20 and npm are needed for the local emulators)", name)
	}
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.Bytes(), err
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return strings.TrimRight(string(b), "\n")
}
