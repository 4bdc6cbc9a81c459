package image

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
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
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

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

// TestImageServes builds the image as make image does (stage.sh, then
// Build into an OCI layout), reads it back from the layout, unpacks its
// filesystem into a directory with the owners the layer records, and runs
// batchd from it under chroot as the image's user against a tiny model: a
// completion comes back over the HTTP socket.
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
	build := exec.Command("go", "build", "-o", bin+"/", "./cmd/batchd", "./cmd/batchctl")
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
	lp, err := layout.Write(filepath.Join(work, "oci"), empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := lp.AppendImage(img); err != nil {
		t.Fatal(err)
	}

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
	serveFromRoot(t, root)
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

// serveFromRoot runs the image's batchd under chroot as its user and asks
// it for a completion over its HTTP socket.
func serveFromRoot(t *testing.T, root string) {
	t.Helper()
	cmd := exec.Command("/usr/bin/batchd", "serve", "--model", "/models/model.gguf",
		"--socket", "/run/batchd/batchd.sock", "--http-socket", "/run/batchd/http.sock")
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
	sock := filepath.Join(root, "run", "batchd", "http.sock")
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}, Timeout: 30 * time.Second}
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := hc.Get("http://batchd/health")
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
	resp, err := hc.Post("http://batchd/v1/completions", "application/json",
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
