// Command mkimage writes batchd's OCI image (package image) from a staged
// root: an OCI image layout directory, which a registry copy (crane, skopeo)
// takes, and a tarball that podman load and ctr images import take.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/batchd/batchd/deploy/image"
)

func main() {
	root := flag.String("root", "", "staged root directory (image/stage.sh)")
	ociDir := flag.String("oci", "", "write an OCI image layout here")
	tarPath := flag.String("tar", "", "write an image tarball here (podman load, ctr images import)")
	tag := flag.String("tag", "batchd:latest", "the image's name in the tarball and the layout's index")
	version := flag.String("version", "0.0.0", "the version label")
	arch := flag.String("arch", runtime.GOARCH, "the binaries' architecture")
	flag.Parse()
	if err := run(*root, *ociDir, *tarPath, *tag, *version, *arch); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
}

func run(root, ociDir, tarPath, tag, version, arch string) error {
	if root == "" || (ociDir == "" && tarPath == "") {
		return fmt.Errorf("need -root and one of -oci, -tar")
	}
	ref, err := name.NewTag(tag, name.WeakValidation)
	if err != nil {
		return err
	}
	img, err := image.Build(image.Options{Root: root, Version: version, Arch: arch})
	if err != nil {
		return err
	}
	if ociDir != "" {
		if err := image.WriteLayout(ociDir, img, map[string]string{
			"org.opencontainers.image.ref.name": ref.TagStr(), "io.containerd.image.name": ref.Name()}); err != nil {
			return err
		}
	}
	if tarPath != "" {
		if err := tarball.WriteToFile(tarPath, ref, img); err != nil {
			return err
		}
		if err := os.Chmod(tarPath, 0o644); err != nil {
			return err
		}
	}
	d, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("%s %s\n", ref.Name(), d)
	return nil
}
