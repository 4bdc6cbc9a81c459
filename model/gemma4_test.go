package model

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/batchd/batchd/quant"
	"github.com/batchd/batchd/testing/synth"
)

// TestGemma4Layout: an E2B-shaped file's per-layer shapes, its sharing
// layers' sources and places in the KV layout (their source's group and
// slot, none of their own), and the bytes a token reads (the per-layer
// embeddings' projections and one table row, not the table).
func TestGemma4Layout(t *testing.T) {
	path := filepath.Join(t.TempDir(), "g4.gguf")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	err = synth.WriteGemma4(f, synth.Gemma4Options{Dim: 128, Layers: 10, Heads: 4, FFN: 256, Vocab: 512, Context: 256, Window: 8,
		HeadSWA: 32, HeadFull: 64, KVSWA: 2, KVFull: 1, Slide: []bool{true, true, true, true, false, true, true, true, true, false},
		KVShared: 5, PerLayer: 32, DoubleFFN: true, DType: quant.F32, Seed: 1})
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	m, err := Load(path, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	c := m.Config
	if s, f := c.At(0), c.At(4); s.HeadDim != 32 || s.KVHeads != 2 || s.FFN != 256 || f.HeadDim != 64 || f.KVHeads != 1 || c.At(9).FFN != 512 {
		t.Fatalf("shapes: sliding %+v, full %+v", s.Shapes[0], f.Shapes[4])
	}
	for l, want := range []int{0, 1, 2, 3, 4, 3, 3, 3, 3, 4} {
		if got := c.KVSource(l); got != want {
			t.Errorf("layer %d reads layer %d's K and V, want %d", l, got, want)
		}
	}
	if c.AttnLayers() != 5 || c.SlidingLayers() != 4 {
		t.Errorf("%d layers keep K and V (%d sliding), want 5 (4)", c.AttnLayers(), c.SlidingLayers())
	}
	lay := c.Layout(true)
	for l := 5; l < 10; l++ {
		if s := c.KVSource(l); lay.Group[l] != lay.Group[s] || lay.Slot[l] != lay.Slot[s] {
			t.Errorf("layer %d at group %d slot %d, its source %d at %d %d", l, lay.Group[l], lay.Slot[l], s, lay.Group[s], lay.Slot[s])
		}
	}
	if m.Layers[7].Wk != nil || m.Layers[7].PLEGate == nil || m.Layers[0].OutScale == nil {
		t.Error("a sharing layer has K, or a layer lacks its per-layer embedding or output scale")
	}
	row := 4 * c.Layers * c.PerLayer
	if w := m.WeightBytes(); w < m.PLEProj.Bytes()+row || int64(w) > m.FileBytes()-int64(m.PLE.Bytes()-row) {
		t.Errorf("a token reads %d bytes of a %d-byte file whose table is %d bytes", w, m.FileBytes(), m.PLE.Bytes())
	}
}

// TestGemma4BadShapesRefused: a file whose per-layer arrays give a layer
// KV heads that do not divide its heads, or an odd RoPE width, is refused
// at load (the backend would divide by zero), not run.
func TestGemma4BadShapesRefused(t *testing.T) {
	for name, o := range map[string]synth.Gemma4Options{
		"kv heads": {KVSWA: 3, KVFull: 1, HeadSWA: 32},
		"more kv":  {KVSWA: 8, KVFull: 1, HeadSWA: 32},
		"odd rope": {KVSWA: 2, KVFull: 1, HeadSWA: 33},
	} {
		o.Dim, o.Layers, o.Heads, o.FFN, o.Vocab, o.Context, o.Window = 128, 2, 4, 256, 512, 64, 8
		o.HeadFull, o.Slide, o.DType = 64, []bool{true, false}, quant.F32
		path := filepath.Join(t.TempDir(), "g4.gguf")
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		err = synth.WriteGemma4(f, o)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if m, err := Load(path, LoadOptions{}); !errors.Is(err, ErrShape) {
			if m != nil {
				m.Close()
			}
			t.Errorf("%s: %v, want ErrShape", name, err)
		}
	}
}
