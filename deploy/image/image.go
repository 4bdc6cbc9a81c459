// Package image assembles batchd's OCI image from a staged root directory
// (stage.sh) with go-containerregistry: one layer, deterministic (sorted
// entries, fixed times), files owned by root and the writable directories
// by the batchd user, which the image runs as. It needs no Docker daemon.
package image

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// UID and GID of the user the image runs as (distroless' nonroot).
const (
	UID = 65532
	GID = 65532
)

// writable are the directories the batchd user owns.
var writable = map[string]fs.FileMode{"run/batchd": 0o750, "var/lib/batchd": 0o750, "tmp": 0o1777}

// epoch is every entry's time, so that the same root gives the same digest.
var epoch = time.Unix(0, 0).UTC()

// Options describes the image.
type Options struct {
	Root    string // staged root directory
	Version string // the image's version label
	Arch    string // GOARCH of the binaries
}

// Build returns the image of o.Root.
func Build(o Options) (v1.Image, error) {
	var buf bytes.Buffer
	if err := tarRoot(o.Root, &buf); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	// An OCI image throughout (manifest, config, layer): an OCI layout
	// holding Docker v2 media types is one umoci and skopeo refuse.
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.AppendLayers(base, layer)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS, cf.Created = o.Arch, "linux", v1.Time{Time: epoch}
	cf.Config = v1.Config{
		User:         fmt.Sprintf("%d:%d", UID, GID),
		Entrypoint:   []string{"/usr/bin/batchd"},
		Cmd:          []string{"serve", "--config", "/etc/batchd/batchd.toml"},
		Env:          []string{"PATH=/usr/bin"},
		WorkingDir:   "/var/lib/batchd",
		ExposedPorts: map[string]struct{}{"8000/tcp": {}, "5557/tcp": {}},
		StopSignal:   "SIGTERM",
		Labels: map[string]string{
			"org.opencontainers.image.title":   "batchd",
			"org.opencontainers.image.version": o.Version,
		},
	}
	return mutate.ConfigFile(img, cf)
}

// WriteLayout writes img into a new OCI image layout at dir (replacing
// what is there), its index entry annotated, every file readable by all
// (0644; go-containerregistry writes blobs 0600, which a registry copy
// run as another user cannot read) and every directory 0755.
func WriteLayout(dir string, img v1.Image, annotations map[string]string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendImage(img, layout.WithAnnotations(annotations)); err != nil {
		return err
	}
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		mode := fs.FileMode(0o644)
		if d.IsDir() {
			mode = 0o755
		}
		return os.Chmod(path, mode)
	})
}

// tarRoot writes root as a tar stream in sorted order.
func tarRoot(root string, w io.Writer) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == "." {
			return nil
		}
		rel = filepath.ToSlash(rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		if info.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		}
		h, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return err
		}
		h.Name, h.ModTime, h.AccessTime, h.ChangeTime = rel, epoch, time.Time{}, time.Time{}
		h.Uid, h.Gid, h.Uname, h.Gname = 0, 0, "", ""
		h.Format = tar.FormatPAX
		if d.IsDir() {
			h.Name += "/"
			if mode, ok := writable[rel]; ok {
				h.Uid, h.Gid, h.Mode = UID, GID, int64(mode)
			}
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, f)
		return err
	})
	if err != nil {
		return fmt.Errorf("image root %s: %w", root, err)
	}
	return tw.Close()
}
