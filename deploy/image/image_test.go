package image

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/batchd/batchd/testing/synth"
)

// repo is the repository root (deploy/image -> ..).
func repo(t *testing.T) string {
	t.Helper()
	d, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestImageServes builds the image as make image does (stripped binaries
// that say their version, stage.sh, then Build into an OCI layout), checks
// the layout is OCI throughout and readable by all, reads it back, unpacks
// its filesystem into a directory with the owners the layer records, and
// runs its entrypoint with its own config under chroot as the image's user
// against a tiny model: a completion comes back on port 8000 without a key.
func TestImageServes(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (chroot, the layer's owners)")
	}
	for _, tool := range []string{"dpkg-deb", "dpkg-query", "ldd"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s (Debian)", tool)
		}
	}
	work := t.TempDir()
	bin := filepath.Join(work, "bin")
	if ln, err := net.Listen("tcp", "127.0.0.1:8000"); err != nil {
		t.Skipf("port 8000, the image's, is taken here: %v", err)
	} else {
		ln.Close()
	}
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X github.com/batchd/batchd/daemon.Version=9.8.7",
		"-o", bin+"/", "./cmd/batchd", "./cmd/batchctl")
	build.Dir = repo(t)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	stage := exec.Command("bash", "deploy/image/stage.sh", filepath.Join(work, "stage", "root"), bin)
	stage.Dir = repo(t)
	if out, err := stage.CombinedOutput(); err != nil {
		t.Skipf("staging needs Debian's libc6 package (apt-get download): %v\n%s", err, out)
	}
	img, err := Build(Options{Root: filepath.Join(work, "stage", "root"), Version: "test", Arch: "amd64"})
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteLayout(filepath.Join(work, "oci"), img, nil); err != nil {
		t.Fatal(err)
	}
	checkLayout(t, filepath.Join(work, "oci"))

	// Read it back as a runtime would.
	idx, err := layout.ImageIndexFromPath(filepath.Join(work, "oci"))
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil || len(im.Manifests) != 1 {
		t.Fatalf("index %+v (%v)", im, err)
	}
	back, err := idx.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := back.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.User != "65532:65532" || cf.Config.Entrypoint[0] != "/usr/bin/batchd" || cf.OS != "linux" {
		t.Fatalf("config %+v", cf.Config)
	}
	m, err := back.Manifest()
	if err != nil || m.MediaType != types.OCIManifestSchema1 || m.Config.MediaType != types.OCIConfigJSON ||
		len(m.Layers) != 1 || m.Layers[0].MediaType != types.OCILayer {
		t.Fatalf("manifest %+v (%v): want OCI media types throughout", m, err)
	}
	root := filepath.Join(work, "rootfs")
	names := unpack(t, back, root)
	for _, n := range names {
		if base := filepath.Base(n); base == "sh" || base == "bash" || base == "dash" || base == "busybox" {
			t.Errorf("the image has a shell: %s", n)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "models", "model.gguf"), readFile(t, synth.TinyFile(t, 256)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(filepath.Join(root, "usr", "bin", "batchd"), "version").Output(); err != nil || strings.TrimSpace(string(out)) != "batchd 9.8.7" {
		t.Errorf("batchd version: %q (%v)", out, err)
	}
	if f, err := elf.Open(filepath.Join(root, "usr", "bin", "batchd")); err != nil || f.Section(".symtab") != nil {
		t.Errorf("the image's batchd keeps its symbol table (not stripped) or is not ELF: %v", err)
	} else {
		f.Close()
	}
	serveFromRoot(t, root, append(cf.Config.Entrypoint, cf.Config.Cmd...))
}

// checkLayout: every file of the layout readable by all, none executable.
func checkLayout(t *testing.T, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if want := fs.FileMode(0o644); !d.IsDir() && info.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", p, info.Mode().Perm(), want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// unpack writes the image's flattened filesystem under root with the
// layer's modes and owners, and returns the names.
func unpack(t *testing.T, img v1.Image, root string) []string {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	var names []string
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		p := filepath.Join(root, filepath.Clean("/"+h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
		case tar.TypeSymlink:
			if err := os.Symlink(h.Linkname, p); err != nil {
				t.Fatal(err)
			}
			continue
		case tar.TypeReg:
			f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(f, tr); err != nil {
				t.Fatal(err)
			}
			f.Close()
		default:
			t.Fatalf("%s: entry type %c", h.Name, h.Typeflag)
		}
		if err := os.Chown(p, h.Uid, h.Gid); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, os.FileMode(h.Mode).Perm()|modeBits(h.Mode)); err != nil {
			t.Fatal(err)
		}
	}
	return names
}

func modeBits(m int64) os.FileMode {
	var out os.FileMode
	if m&0o1000 != 0 {
		out |= os.ModeSticky
	}
	return out
}

// serveFromRoot runs args (the image's entrypoint and command) under
// chroot as its user and asks it for a completion on port 8000, as a
// client without a key.
func serveFromRoot(t *testing.T, root string, args []string) {
	t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir, cmd.Env = "/", []string{"PATH=/usr/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root, Credential: &syscall.Credential{Uid: UID, Gid: GID}}
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	hc := &http.Client{Timeout: 30 * time.Second}
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := hc.Get("http://127.0.0.1:8000/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) || cmd.ProcessState != nil {
			t.Fatalf("batchd from the image never became healthy (%v):\n%s", err, logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	resp, err := hc.Post("http://127.0.0.1:8000/v1/completions", "application/json",
		strings.NewReader(`{"prompt": "Once upon a time", "max_tokens": 8}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Choices []struct {
			Text string `json:"text"`
		} `json:"choices"`
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK ||
		len(out.Choices) != 1 || out.Usage.CompletionTokens == 0 {
		t.Fatalf("completion: %d %+v (%v)\n%s", resp.StatusCode, out, err, logs.String())
	}
	t.Logf("batchd from the image answered %d tokens: %q", out.Usage.CompletionTokens, out.Choices[0].Text)
}
