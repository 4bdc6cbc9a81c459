package model

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/batchd/batchd/quant"
	"github.com/batchd/batchd/testing/synth"
)

// rss is the process's resident bytes.
func rss(t *testing.T) int {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Skip("no /proc/self/statm")
	}
	pages, _ := strconv.Atoi(strings.Fields(string(b))[1])
	return pages * os.Getpagesize()
}

// TestRepackResidentOnce: a repacked copy takes the place of the file's
// pages (dropped) rather than sitting beside them; it is made once, from
// Data, and Data still reads the file's bytes after the drop.
func TestRepackResidentOnce(t *testing.T) {
	path, _ := synth.WriteFile(t, synth.Options{Dim: 1024, Layers: 2, Heads: 8, KVHeads: 8, FFN: 4096, Vocab: 512,
		Context: 64, DType: quant.Q8_0, Seed: 3})
	m, err := Load(path, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	want := func(w *Matrix) bool { return w != m.Embed }
	var sum, bytes, n int
	for _, w := range m.matrices() {
		if w.Type == quant.Q8_0 && want(w) {
			n++
			for _, c := range w.Data {
				sum += int(c)
			}
			bytes += len(w.Data)
		}
	}
	before := rss(t)
	calls := 0
	if err := m.Repack(quant.Q8_0, "copy", want, func(dst []byte, w *Matrix) { calls++; copy(dst, w.Data) }); err != nil {
		t.Fatal(err)
	}
	grew := rss(t) - before
	if grew > bytes/4 {
		t.Errorf("resident grew %d bytes for %d repacked: the file's pages stayed", grew, bytes)
	}
	if err := m.Repack(quant.Q8_0, "copy", want, func([]byte, *Matrix) { calls++ }); err != nil || calls != n {
		t.Errorf("%v, %d packings: want each of %d matrices once", err, calls, n)
	}
	// Another layout of the same type is refused: the copies are in this one.
	if err := m.Repack(quant.Q8_0, "other", want, func([]byte, *Matrix) { calls++ }); err == nil || calls != n {
		t.Errorf("%v, %d packings: a second layout must be refused, nothing packed", err, calls)
	}
	after := 0
	for _, w := range m.matrices() {
		if w.Type == quant.Q8_0 && want(w) {
			if w.Packed() == nil || string(w.Packed()) != string(w.Data) {
				t.Fatal("packed copy missing or not pack's output")
			}
			for _, c := range w.Data {
				after += int(c)
			}
		}
	}
	if after != sum {
		t.Error("Data reads other bytes after its pages were dropped")
	}
}

// TestRepackOnHugePages: the repacked copies lie on transparent huge pages,
// also where each matrix is a few MiB (each in a mapping of its own, only
// the whole 2 MiB spans inside one were huge: about half of such a model).
func TestRepackOnHugePages(t *testing.T) {
	if b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil || strings.Contains(string(b), "[never]") {
		t.Skip("no transparent huge pages here")
	}
	path, _ := synth.WriteFile(t, synth.Options{Dim: 1024, Layers: 2, Heads: 8, KVHeads: 8, FFN: 3072, Vocab: 512,
		Context: 64, DType: quant.Q8_0, Seed: 4})
	m, err := Load(path, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Repack(quant.Q8_0, "copy", func(w *Matrix) bool { return w != m.Embed }, func(dst []byte, w *Matrix) { copy(dst, w.Data) }); err != nil {
		t.Fatal(err)
	}
	var lo, hi uintptr
	packed := 0
	for _, w := range m.matrices() {
		if p := w.Packed(); p != nil {
			a := addr(p)
			if lo == 0 || a < lo {
				lo = a
			}
			hi = max(hi, a+uintptr(len(p)))
			packed += len(p)
		}
	}
	huge := hugeBytes(t, lo, hi)
	t.Logf("%d of %d packed bytes on huge pages", huge, packed)
	if huge < packed*9/10 {
		t.Errorf("%d of %d packed bytes on huge pages", huge, packed)
	}
}

// hugeBytes is AnonHugePages of the mappings that overlap [lo, hi).
func hugeBytes(t *testing.T, lo, hi uintptr) int {
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skip("no /proc/self/smaps")
	}
	huge, in := 0, false
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if r := strings.Split(f[0], "-"); len(r) == 2 && !strings.HasSuffix(f[0], ":") {
			a, err1 := strconv.ParseUint(r[0], 16, 64)
			z, err2 := strconv.ParseUint(r[1], 16, 64)
			if err1 == nil && err2 == nil {
				in = uintptr(a) < hi && uintptr(z) > lo
				continue
			}
		}
		if in && f[0] == "AnonHugePages:" && len(f) >= 2 {
			kb, _ := strconv.Atoi(f[1])
			huge += kb << 10
		}
	}
	return huge
}
