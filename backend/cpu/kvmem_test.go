package cpu

import (
	"bytes"
	"os"
	"strconv"
	"testing"

	"github.com/batchd/batchd/backend"
	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/quant"
	"github.com/batchd/batchd/testing/synth"
)

// residentBytes is this process's resident set (/proc/self/statm).
func residentBytes(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Skipf("no /proc/self/statm: %v", err)
	}
	f := bytes.Fields(b)
	pages, err := strconv.ParseInt(string(f[1]), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return pages * int64(os.Getpagesize())
}

// TestKVStoreCommitsOnUse: a backend with a 1 GiB KV pool starts without
// committing it (the store was once touched page by page at start: seconds
// and the whole pool resident for a model that holds a few blocks); a step
// commits only the blocks it writes.
func TestKVStoreCommitsOnUse(t *testing.T) {
	path := synth.TinyFile(t, 4096)
	m, err := model.Load(path, model.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	blocks := (1 << 30) / (16 * m.Config.KVDim() * 4 * 2 * m.Config.Layers) // 1 GiB of F32 K and V
	before := residentBytes(t)
	b, err := New(m, backend.Options{NumBlocks: blocks, BlockSize: 16, KV: backend.SameKV(quant.F32), Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if grew := residentBytes(t) - before; grew > 128<<20 {
		t.Errorf("starting a backend with a 1 GiB KV pool made %d MiB resident", grew>>20)
	}
}
