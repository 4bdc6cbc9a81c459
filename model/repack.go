package model

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/batchd/batchd/quant"
	"golang.org/x/sys/unix"
)

// A backend may keep a matrix in a layout of its own that its kernels read
// faster (the CPU backend's sixteen-row Q8_0 groups). The model holds that
// copy, made once however many backends run the model, outside the Go heap,
// and lets the kernel drop the file's pages for it, so the weights stay
// resident once. Data stays valid (a read faults the page back in), so
// whatever still reads the file's layout (a token's embedding row, the
// rows past the last group) reads it correctly.

// repacks is a model's repacked copies.
type repacks struct {
	mu      sync.Mutex
	mems    [][]byte               // anonymous mappings, unmapped by Close and DropResident
	mats    []*Matrix              // the matrices that have them
	layouts map[quant.DType]string // each type's layout, as Repack was told
}

// Packed is the matrix's repacked copy (see Model.Repack), or nil.
func (m *Matrix) Packed() []byte {
	if p := m.packed.Load(); p != nil {
		return *p
	}
	return nil
}

// Repack gives every matrix of type t that want accepts a repacked copy,
// pack writing it from Data into dst (len(Data) bytes), unless it has one;
// the file's pages of each packed matrix are then dropped. layout names
// what pack writes: a type's matrices hold one layout at a time, so a
// second backend asking for another (kernels of another family on the
// same loaded model) gets an error rather than copies it would misread.
func (mo *Model) Repack(t quant.DType, layout string, want func(*Matrix) bool, pack func(dst []byte, w *Matrix)) error {
	mo.repacks.mu.Lock()
	defer mo.repacks.mu.Unlock()
	if have, ok := mo.repacks.layouts[t]; ok && have != layout {
		return fmt.Errorf("model: its %s weights are repacked for %s, not %s: one kernel family per loaded model", t, have, layout)
	}
	var mats []*Matrix
	total := 0
	for _, w := range mo.matrices() {
		if w.Type == t && w.Packed() == nil && want(w) {
			mats = append(mats, w)
			total += roundUp(len(w.Data), packAlign)
		}
	}
	if total == 0 {
		return nil
	}
	// One mapping for them all, from a huge-page boundary: a mapping of
	// its own per matrix starts anywhere, and the kernel backs only the
	// whole 2 MiB spans inside it with huge pages, so a model's many
	// few-MiB matrices (MoE experts, small models) sat mostly on 4 KiB
	// pages.
	mem, err := unix.Mmap(-1, 0, total+hugePage, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return err
	}
	mo.repacks.mems = append(mo.repacks.mems, mem)
	if mo.repacks.layouts == nil {
		mo.repacks.layouts = map[quant.DType]string{}
	}
	mo.repacks.layouts[t] = layout
	off := roundUp(int(addr(mem)), hugePage) - int(addr(mem))
	adviseHuge(mem[off:])
	for _, w := range mats {
		dst := mem[off : off+len(w.Data) : off+len(w.Data)]
		off += roundUp(len(w.Data), packAlign)
		pack(dst, w)
		w.packed.Store(&dst)
		mo.repacks.mats = append(mo.repacks.mats, w)
		mo.dropPages(w.Data)
	}
	return nil
}

const (
	hugePage  = 2 << 20
	packAlign = 4096 // each copy starts on a page, as its own mapping did
)

func roundUp(n, to int) int { return (n + to - 1) / to * to }

// dropPages lets the kernel drop the whole pages of b, where b lies in the
// mapped file (elsewhere it would lose data).
func (mo *Model) dropPages(b []byte) {
	if len(b) == 0 || len(mo.mapped) == 0 {
		return
	}
	base := addr(mo.mapped)
	lo, hi := addr(b)-base, addr(b)-base+uintptr(len(b))
	if addr(b) < base || hi > uintptr(len(mo.mapped)) {
		return
	}
	page := uintptr(unix.Getpagesize())
	lo, hi = (lo+page-1)&^(page-1), hi&^(page-1)
	if lo < hi {
		_ = unix.Madvise(mo.mapped[lo:hi], unix.MADV_DONTNEED)
	}
}

// closeRepacks unmaps the repacked copies; no backend may be running the
// model (Close, or DropResident for a sleep: Repack again after).
func (mo *Model) closeRepacks() {
	mo.repacks.mu.Lock()
	defer mo.repacks.mu.Unlock()
	for _, w := range mo.repacks.mats {
		w.packed.Store(nil)
	}
	for _, mem := range mo.repacks.mems {
		_ = unix.Munmap(mem)
	}
	mo.repacks.mems, mo.repacks.mats, mo.repacks.layouts = nil, nil, nil
}

// matrices is every matrix of the model once (the classifier may be the
// embedding table).
func (mo *Model) matrices() []*Matrix {
	all := []*Matrix{mo.Embed, mo.Output, mo.PosEmbd}
	all = append(all, mo.Dense...)
	for _, l := range mo.Layers {
		all = append(all, l.Wq, l.Wk, l.Wv, l.Wo, l.W1, l.W2, l.W3, l.Router, l.ShGate, l.ShUp, l.ShDown)
		all = append(all, l.ExpGate...)
		all = append(all, l.ExpUp...)
		all = append(all, l.ExpDown...)
		if s := l.SSM; s != nil {
			all = append(all, s.QKV, s.Gate, s.Beta, s.Alpha, s.Out)
		}
	}
	seen := map[*Matrix]bool{nil: true}
	out := all[:0]
	for _, w := range all {
		if !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

func addr(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
