package cpu

import (
	"fmt"
	"unsafe"

	"github.com/batchd/batchd/quant"
	"golang.org/x/sys/unix"
)

// kvArena is the memory behind the KV store: one anonymous mapping outside
// the Go heap, so that it can ask for transparent huge pages. Attention
// hops between blocks scattered over hundreds of MiB, and on 4 KiB pages
// nearly every hop is a TLB miss and a page walk.
type kvArena struct{ mem []byte }

func newKVArena(bytes int) (kvArena, error) {
	mem, err := unix.Mmap(-1, 0, bytes, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return kvArena{}, fmt.Errorf("cpu backend: KV store of %d MiB: %w", bytes>>20, err)
	}
	adviseHugePages(mem) // a hint: where THP is off the store stays on small pages
	return kvArena{mem: mem}, nil
}

// layer returns n elements of type t at byte offset off, in blocks of
// rows positions.
func (a kvArena) layer(t quant.DType, off, n, rows int, kern *kernels) kvLayer {
	return newKVLayer(t, unsafe.Pointer(&a.mem[off]), n, rows, kern)
}

// free unmaps the arena; no kvLayer carved from it may be used afterwards.
func (a *kvArena) free() error {
	if a.mem == nil {
		return nil
	}
	err := unix.Munmap(a.mem)
	a.mem = nil
	return err
}
