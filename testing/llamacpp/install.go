// Package llamacpp is the reference engine beside batchd's tests and
// benchmarks: llama.cpp release v0.5.0 (upstream commit 0ad4a86) as the
// npm package node-llama-cpp@3.22.1 ships it prebuilt, with every x86 CPU
// variant of ggml as shared libraries.
//
// Install puts the package in a cache folder (nothing is downloaded but
// from the npm registry, nothing of llama.cpp is built), takes the public
// headers of the same release from the package's git bundle, and compiles
// a small client of those libraries, llamaref (native/llamaref.cpp:
// batchd's own code against llama.h). A test drives it through Ref:
// tokenization, greedy tokens with top-k log-probabilities under a stated
// KV type and flash-attention setting, output under a GBNF grammar, JSON
// Schema to GBNF as llama.cpp's common library converts it, pooled
// embeddings, llama_model_quantize, and timings measured inside the
// decode calls. A test that cannot install it (no npm, no registry, no
// g++) skips with the reason.
//
// The client, not the package's Node addon, runs the libraries: timings
// must not carry a JavaScript call per token, and quantization and the
// schema converter are C and C++ entry points the addon does not offer.
package llamacpp

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"time"
)

// The pinned reference.
const (
	Package = "node-llama-cpp@3.22.1"
	Release = "v0.5.0"
	Commit  = "0ad4a86"
)

//go:embed native/llamaref.cpp
var refSource []byte

// Install is an installed reference: where its libraries are and the
// client built against them.
type Install struct {
	Dir  string // the cache folder
	Bins string // the ggml and llama shared libraries (every CPU variant)
	Tool string // the llamaref binary
}

// CacheDir is where the reference is installed: BATCHD_LLAMACPP_DIR, else
// the user's cache folder.
func CacheDir() (string, error) {
	if d := os.Getenv("BATCHD_LLAMACPP_DIR"); d != "" {
		return d, nil
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(base, "batchd", "llamacpp-"+Release), nil
}

// Ensure installs the reference in dir if it is not there (one process at
// a time: test binaries of several packages may ask together) and returns
// it; the error says what is missing.
func Ensure(ctx context.Context, dir string) (*Install, error) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		return nil, fmt.Errorf("the npm package's prebuilt libraries are for linux/amd64, this is %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return nil, err
	}
	defer func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) }()
	in := &Install{Dir: dir, Bins: filepath.Join(dir, "node_modules", "@node-llama-cpp", "linux-x64", "bins", "linux-x64")}
	if _, err := os.Stat(filepath.Join(in.Bins, "libllama."+Release+".so")); err != nil {
		if err := npmInstall(ctx, dir); err != nil {
			return nil, err
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "headers", "include", "llama.h")); err != nil {
		if err := extractHeaders(ctx, dir); err != nil {
			return nil, err
		}
	}
	sum := sha256.Sum256(refSource)
	in.Tool = filepath.Join(dir, "llamaref-"+hex.EncodeToString(sum[:6]))
	if _, err := os.Stat(in.Tool); err != nil {
		if err := build(ctx, in); err != nil {
			return nil, err
		}
	}
	return in, nil
}

func run(ctx context.Context, dir string, env []string, name string, args ...string) error {
	if _, err := exec.LookPath(name); err != nil {
		return fmt.Errorf("%s is not installed: %w", name, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		if len(out) > 2000 {
			out = out[len(out)-2000:]
		}
		return fmt.Errorf("%s %v: %w\n%s", name, args, err, out)
	}
	return nil
}

// npmInstall takes the pinned package and its prebuilt linux-x64 binaries
// from the npm registry; its postinstall step is told not to download or
// build anything.
func npmInstall(ctx context.Context, dir string) error {
	return run(ctx, dir, []string{"NODE_LLAMA_CPP_SKIP_DOWNLOAD=true"}, "npm", "install", "--omit=optional",
		"--no-audit", "--no-fund", "--no-save", Package, "@node-llama-cpp/linux-x64@3.22.1")
}

// extractHeaders takes the release's public headers (llama.h, ggml's, the
// common library's) from the git bundle the package ships.
func extractHeaders(ctx context.Context, dir string) error {
	bundle := filepath.Join(dir, "node_modules", "node-llama-cpp", "llama", "gitRelease.bundle")
	bare := filepath.Join(dir, "release.git")
	_ = os.RemoveAll(bare)
	if err := run(ctx, dir, nil, "git", "clone", "-q", "--bare", bundle, bare); err != nil {
		return err
	}
	defer os.RemoveAll(bare)
	tmp := filepath.Join(dir, "headers.tmp")
	_ = os.RemoveAll(tmp)
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	tar := filepath.Join(dir, "headers.tar")
	defer os.Remove(tar)
	if err := run(ctx, dir, nil, "git", "--git-dir", bare, "archive", "-o", tar, "HEAD", "include", "ggml/include", "common"); err != nil {
		return err
	}
	if err := run(ctx, tmp, nil, "tar", "-xf", tar); err != nil {
		return err
	}
	_ = os.RemoveAll(filepath.Join(dir, "headers"))
	return os.Rename(tmp, filepath.Join(dir, "headers"))
}

// build compiles llamaref against the release's headers and libraries.
func build(ctx context.Context, in *Install) error {
	src := in.Tool + ".cpp"
	if err := os.WriteFile(src, refSource, 0o644); err != nil {
		return err
	}
	defer os.Remove(src)
	h := filepath.Join(in.Dir, "headers")
	tmp := in.Tool + ".tmp"
	err := run(ctx, in.Dir, nil, "g++", "-O2", "-std=c++17", "-o", tmp, src,
		"-I"+filepath.Join(h, "include"), "-I"+filepath.Join(h, "ggml", "include"), "-I"+filepath.Join(h, "common"),
		"-L"+in.Bins, "-l:libllama."+Release+".so", "-l:libllama-common.so", "-l:libggml-base.so", "-l:libggml."+Release+".so",
		"-Wl,-rpath,"+in.Bins)
	if err != nil {
		return errors.Join(errors.New("building llamaref"), err)
	}
	return os.Rename(tmp, in.Tool)
}
