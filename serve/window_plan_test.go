package serve

import (
	"cmp"
	"errors"
	"fmt"
	"testing"

	"github.com/batchd/batchd/hwprofile"
	"github.com/batchd/batchd/kvcache"
	"github.com/batchd/batchd/model"
)

// gemma3Shape is Gemma 3 4B's attention as its GGUF states it (34 layers,
// 4 KV heads of 256, a window of 1024 on five layers of every six) at a
// context of 32k, its weights as a Q4_K_M file's.
func gemma3Shape(windowGroup bool) hwprofile.ModelShape {
	c := model.Config{Layers: 34, KVHeads: 4, HeadDim: 256, SlidingWindow: 1024, SlidePattern: 6}
	s := hwprofile.ModelShape{Name: "gemma-3-4b-shaped", Layers: c.Layers, KVHeads: c.KVHeads, HeadDim: c.HeadDim,
		Dim: 2560, QDim: 2048, FFN: 10240, Vocab: 262144, Context: 32768, WeightBytes: 2489 << 20, KVLayers: c.Layers}
	if lay := c.Layout(windowGroup); lay.Tables > 0 {
		s.BlockLayers, s.WindowTables, s.Window = lay.Slots, lay.Tables, c.SlidingWindow
	}
	return s
}

// TestWindowGroupFitsFiveTimes measures what window groups buy at 32k: on
// machines of 24, 64 and 128 GiB (f16 K/V, max_num_seqs 256), sequences
// are grown to 32k tokens in the pool the planner sizes (512-token chunks,
// as the scheduler feeds them, each followed by Slide) until one no longer
// fits; against the all-layers pool of the same budget, about five times
// as many fit.
func TestWindowGroupFitsFiveTimes(t *testing.T) {
	for _, gib := range []uint64{24, 64, 128} {
		t.Run(fmt.Sprintf("%dGiB", gib), func(t *testing.T) { fitsFiveTimes(t, gib) })
	}
}

func fitsFiveTimes(t *testing.T, gib uint64) {
	det := hwprofile.Detection{CPU: hwprofile.CPU{Cores: 16, MemAvailable: gib << 30}}
	kv := hwprofile.KVStore{Type: "f16", Bytes32: 128}
	fits := map[bool]int{}
	for _, grouped := range []bool{false, true} {
		plan, err := hwprofile.MakePlan(det, hwprofile.BuiltinProfiles(), gemma3Shape(grouped), hwprofile.Requested{MaxNumSeqs: 256}, "cpu", kv)
		if err != nil {
			t.Fatal(err)
		}
		kvBytes := int64(plan.KVBlocks) * int64(plan.BlockSize) * int64(plan.KVBytesPerToken)
		if kvBytes > plan.KVBudget {
			t.Fatalf("the plan's pool takes %d bytes of a %d budget", kvBytes, plan.KVBudget)
		}
		pool, err := kvcache.New(kvcache.Options{NumBlocks: plan.KVBlocks, BlockSize: plan.BlockSize, PrefixCaching: true,
			Window: plan.SlidingWindow, WindowTables: plan.KVWindowTables})
		if err != nil {
			t.Fatal(err)
		}
		n := fill(t, pool, 32768, plan.MaxNumBatchedTokens)
		fits[grouped] = n
		t.Logf("window groups %v: %d blocks of %d layers x %d B/token (%d MiB of K/V): %d sequences of 32k tokens (the plan says %d)",
			grouped, plan.KVBlocks, cmp.Or(plan.KVBlockLayers, 34), plan.KVBytesPerToken, kvBytes>>20, n, plan.FullContextSeqs)
		if n != plan.FullContextSeqs {
			t.Errorf("window group %v: %d sequences fit, the plan says %d", grouped, n, plan.FullContextSeqs)
		}
	}
	ratio := float64(fits[true]) / float64(fits[false])
	t.Logf("%d GiB: %.2fx", gib, ratio)
	if ratio < 4.5 {
		t.Errorf("window groups fit %.1fx the sequences of the all-layers pool, want about 5x", ratio)
	}
}

// fill grows sequences to n tokens each, chunk by chunk, one after the
// other, and returns how many were whole when one no longer fit.
func fill(t *testing.T, p *kvcache.Pool, n, chunk int) int {
	for seq := kvcache.SeqID(0); ; seq++ {
		for at := 0; at < n; at += chunk {
			err := p.Allocate(seq, nil, min(at+chunk, n))
			if nb := (*kvcache.ErrNoBlocks)(nil); errors.As(err, &nb) {
				return int(seq)
			} else if err != nil {
				t.Fatal(err)
			}
			p.Slide(seq, min(at+chunk, n))
		}
		if err := p.Check(); err != nil {
			t.Fatal(err)
		}
	}
}
