package hwprofile

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const gib = 1 << 30

type fakeGPU struct {
	name  string
	gpus  []GPU
	err   error
	delay time.Duration
}

func (f fakeGPU) Name() string { return f.name }
func (f fakeGPU) ProbeGPUs(ctx context.Context) ([]GPU, string, string, error) {
	if f.delay > 0 {
		select {
		case <-time.After(f.delay):
		case <-ctx.Done():
			return nil, "", "", ctx.Err()
		}
	}
	return f.gpus, "550.54", "12.4", f.err
}

type fakeCPU struct{ c CPU }

func (f fakeCPU) ProbeCPU(context.Context) (CPU, error) { return f.c, nil }

var host = CPU{Model: "AMD EPYC", Cores: 16, AVX2: true, MemTotal: 64 * gib, MemAvailable: 48 * gib}

// l110 is the benchmark shape: 12 layers, 12 KV heads of 64.
var l110 = ModelShape{Name: "l110", Layers: 12, KVHeads: 12, HeadDim: 64, Dim: 768, QDim: 768, FFN: 2048,
	Vocab: 32000, Context: 1024, WeightBytes: 116 << 20}

func gpu(i int, name string, totalGB, freeGB float64) GPU {
	return GPU{Index: i, Name: name, UUID: "GPU-" + name, MemTotal: uint64(totalGB * gib), MemFree: uint64(freeGB * gib)}
}

func TestDetectAndChoose(t *testing.T) {
	cases := []struct {
		name      string
		probers   []GPUProber
		backend   string
		profile   string
		device    string
		fallbacks int
		warnings  []string
	}{
		{"H200", []GPUProber{fakeGPU{name: "nvml", gpus: []GPU{gpu(0, "NVIDIA H200", 141, 140)}}}, "cuda", "h200-h100", "gpu0 NVIDIA H200", 0, nil},
		{"A100 40GB", []GPUProber{fakeGPU{name: "nvml", gpus: []GPU{gpu(0, "NVIDIA A100-SXM4-40GB", 40, 39)}}}, "cuda", "a100-40gb", "gpu0", 0, nil},
		{"A100 80GB", []GPUProber{fakeGPU{name: "nvml", gpus: []GPU{gpu(0, "NVIDIA A100-SXM4-80GB", 80, 79)}}}, "cuda", "a100-80gb", "gpu0", 0, nil},
		{"L4", []GPUProber{fakeGPU{name: "nvml", gpus: []GPU{gpu(0, "NVIDIA L4", 23, 22)}}}, "cuda", "l4-24gb", "gpu0", 0, nil},
		{"RTX 4090", []GPUProber{fakeGPU{name: "nvml", gpus: []GPU{gpu(0, "NVIDIA GeForce RTX 4090", 24, 23)}}}, "cuda", "consumer-24gb", "gpu0", 0, nil},
		{"16 GB card", []GPUProber{fakeGPU{name: "nvml", gpus: []GPU{gpu(0, "NVIDIA RTX A4000", 16, 15)}}}, "cuda", "gpu-16gb", "gpu0", 0, nil},
		{"Jetson Orin", []GPUProber{fakeGPU{name: "nvml", gpus: []GPU{gpu(0, "Orin (nvgpu)", 30, 20)}}}, "cuda", "jetson-unified", "gpu0", 0, nil},
		{"multi GPU picks most free", []GPUProber{fakeGPU{name: "nvml", gpus: []GPU{gpu(0, "NVIDIA L40S", 48, 2), gpu(1, "NVIDIA L40S", 48, 47)}}},
			"cuda", "l40s-48gb", "gpu1", 0, []string{"2 GPUs detected"}},
		{"NVML missing", []GPUProber{fakeGPU{name: "nvml", err: errors.New("nvml init: ERROR_LIBRARY_NOT_FOUND")}}, "cpu", "cpu", "cpu AMD EPYC", 1, nil},
		{"NVML errors mid-probe, next prober used", []GPUProber{
			fakeGPU{name: "nvml", gpus: []GPU{gpu(0, "NVIDIA H100", 80, 79)}, err: errors.New("nvml device 1 memory: ERROR_GPU_IS_LOST")},
			fakeGPU{name: "backup", gpus: []GPU{gpu(0, "NVIDIA A100 80GB", 80, 79)}}}, "cuda", "a100-80gb", "gpu0", 1, nil},
		{"NVML hangs", []GPUProber{fakeGPU{name: "nvml", delay: time.Hour}}, "cpu", "cpu", "cpu", 1, nil},
		{"CPU only", nil, "cpu", "cpu", "cpu AMD EPYC", 0, nil},
		{"GPU but CPU backend", []GPUProber{fakeGPU{name: "nvml", gpus: []GPU{gpu(0, "NVIDIA H200", 141, 140)}}}, "cpu", "cpu", "cpu",
			0, []string{"the cpu backend runs"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			det := Detect(context.Background(), tc.probers, fakeCPU{host}, 50*time.Millisecond)
			if len(det.Fallbacks) != tc.fallbacks {
				t.Fatalf("fallbacks %v, want %d", det.Fallbacks, tc.fallbacks)
			}
			plan, err := MakePlan(det, BuiltinProfiles(), l110, Requested{}, tc.backend, KVFloat32)
			if err != nil {
				t.Fatal(err)
			}
			if plan.Profile != tc.profile || !strings.HasPrefix(plan.Device, tc.device) {
				t.Fatalf("profile %q device %q, want %q %q", plan.Profile, plan.Device, tc.profile, tc.device)
			}
			for _, w := range tc.warnings {
				if !strings.Contains(strings.Join(plan.Warnings, "\n"), w) {
					t.Fatalf("warnings %v lack %q", plan.Warnings, w)
				}
			}
			if plan.KVBlocks <= 0 || plan.MaxNumSeqs > plan.KVBlocks || plan.MaxContext != 1024 {
				t.Fatalf("plan %+v", plan)
			}
		})
	}
}

func TestPlanArithmetic(t *testing.T) {
	det := Detection{CPU: CPU{Cores: 2, MemAvailable: 8 * gib}}
	p, err := MakePlan(det, BuiltinProfiles(), l110, Requested{}, "cpu", KVFloat32)
	if err != nil {
		t.Fatal(err)
	}
	// 2 x 12 layers x 12 heads x 64 x 4 bytes.
	if p.KVBytesPerToken != 73728 {
		t.Fatalf("kv bytes per token %d", p.KVBytesPerToken)
	}
	wantBudget := int64(float64(int64(4*gib)-p.WeightBytes-p.ActivationReserve) * 0.8)
	if p.KVBudget != wantBudget {
		t.Fatalf("budget %d, want %d", p.KVBudget, wantBudget)
	}
	// The budget holds more than 32 full contexts: capped at what they need.
	if p.KVBlocks != 32*64 || p.FullContextSeqs != 32 || p.Threads != 2 {
		t.Fatalf("plan %+v", p)
	}
	// An encoder's step holds a whole text past the token budget: its
	// activations are reserved for a context's worth of tokens.
	enc := l110
	enc.WholeText, enc.Context = true, 4*p.MaxNumBatchedTokens
	pe, err := MakePlan(det, BuiltinProfiles(), enc, Requested{}, "cpu", KVFloat32)
	if err != nil {
		t.Fatal(err)
	}
	perToken := int64(4*l110.Dim+l110.QDim+2*l110.FFN) * 4
	if got := pe.ActivationReserve - p.ActivationReserve; got != int64(3*p.MaxNumBatchedTokens)*perToken {
		t.Errorf("encoder reserve %d more than the decoder's, want %d", got, int64(3*p.MaxNumBatchedTokens)*perToken)
	}

	// A small machine: the pool is the budget, and a user's wish is clamped with a warning.
	det.CPU.MemAvailable = 1 * gib
	p, err = MakePlan(det, BuiltinProfiles(), l110, Requested{KVBlocks: 100000, MaxNumSeqs: 500}, "cpu", KVFloat32)
	if err != nil {
		t.Fatal(err)
	}
	if p.KVBlocks >= 100000 || p.MaxNumSeqs != 500 && p.MaxNumSeqs > p.KVBlocks || len(p.Warnings) == 0 {
		t.Fatalf("clamp: %+v", p)
	}
	if !strings.Contains(strings.Join(p.Warnings, "\n"), "kv_blocks 100000 does not fit") {
		t.Fatalf("warnings %v", p.Warnings)
	}

	// Too small for the weights: a typed error.
	det.CPU.MemAvailable = 64 << 20
	if _, err := MakePlan(det, BuiltinProfiles(), l110, Requested{}, "cpu", KVFloat32); !errors.Is(err, ErrDoesNotFit) {
		t.Fatalf("got %v, want ErrDoesNotFit", err)
	}
}

func TestProfileFilesOverride(t *testing.T) {
	dir := t.TempDir()
	_ = os.WriteFile(filepath.Join(dir, "site.toml"), []byte(`
[[profile]]
name = "site-h200"
device = "gpu"
names = ["H200"]
memory_utilization = 0.5
headroom = 0.1
block_size = 32
max_num_seqs = 8
max_num_batched_tokens = 1024
`), 0o644)
	profiles, err := LoadProfiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	if p := Choose(profiles, &GPU{Name: "NVIDIA H200", MemTotal: 141 * gib}); p.Name != "site-h200" || p.BlockSize != 32 {
		t.Fatalf("chose %+v", p)
	}
	_ = os.WriteFile(filepath.Join(dir, "bad.toml"), []byte("[[profile]]\nname = \"x\"\ndevice = \"tpu\"\n"), 0o644)
	if _, err := LoadProfiles(dir); err == nil {
		t.Fatal("accepted a bad profile file")
	}
	if p, err := LoadProfiles(filepath.Join(dir, "absent")); err != nil || len(p) != len(BuiltinProfiles()) {
		t.Fatalf("missing dir: %v %d", err, len(p))
	}
}

func TestHostCPUReadsProcAndCgroup(t *testing.T) {
	root := t.TempDir()
	_ = os.MkdirAll(filepath.Join(root, "proc"), 0o755)
	_ = os.MkdirAll(filepath.Join(root, "sys/fs/cgroup"), 0o755)
	_ = os.WriteFile(filepath.Join(root, "proc/cpuinfo"), []byte("processor\t: 0\nmodel name\t: Test CPU 9000\n"), 0o644)
	_ = os.WriteFile(filepath.Join(root, "proc/meminfo"), []byte("MemTotal:       16384000 kB\nMemAvailable:    8192000 kB\n"), 0o644)
	_ = os.WriteFile(filepath.Join(root, "sys/fs/cgroup/memory.max"), []byte("4294967296\n"), 0o644)
	_ = os.WriteFile(filepath.Join(root, "sys/fs/cgroup/memory.current"), []byte("1073741824\n"), 0o644)
	c, err := HostCPU{Root: root}.ProbeCPU(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if c.Model != "Test CPU 9000" || c.MemTotal != 4*gib || c.MemAvailable != 3*gib {
		t.Fatalf("cpu %+v", c)
	}
	if _, err := (HostCPU{}).ProbeCPU(context.Background()); err != nil {
		t.Fatalf("this host: %v", err)
	}
}

// TestMemoryBudgetIsThePlans: the budget a daemon of several models
// shares is the memory a plan would use (half of 8 GiB on the CPU).
func TestMemoryBudgetIsThePlans(t *testing.T) {
	det := Detection{CPU: CPU{Cores: 2, MemAvailable: 8 * gib}}
	p, err := MakePlan(det, BuiltinProfiles(), l110, Requested{}, "cpu", KVFloat32)
	if err != nil {
		t.Fatal(err)
	}
	if b := MemoryBudget(det, BuiltinProfiles(), "cpu"); b != p.MemoryBytes || b != 4*gib {
		t.Errorf("budget %d, plan %d, want 4 GiB", b, p.MemoryBytes)
	}
}

// TestPlanRecurrent: a hybrid's recurrent layers take no KV; their states,
// two per running sequence and as many kept for cached prefixes, come out
// of the budget first.
func TestPlanRecurrent(t *testing.T) {
	det := Detection{CPU: CPU{Cores: 2, MemAvailable: 8 * gib}}
	hy := l110
	hy.KVLayers, hy.StateBytes = 3, 4<<20 // a quarter of 12 layers attend
	p, err := MakePlan(det, BuiltinProfiles(), hy, Requested{}, "cpu", KVFloat32)
	if err != nil {
		t.Fatal(err)
	}
	if p.KVBytesPerToken != 73728/4 {
		t.Fatalf("kv bytes per token %d, want a quarter of 73728", p.KVBytesPerToken)
	}
	if p.StateReserve != 4*int64(p.MaxNumSeqs)*4<<20 {
		t.Fatalf("state reserve %d for %d sequences", p.StateReserve, p.MaxNumSeqs)
	}
	if want := int64(float64(int64(4*gib)-p.WeightBytes-p.ActivationReserve-p.StateReserve) * 0.8); p.KVBudget != want {
		t.Fatalf("budget %d, want %d", p.KVBudget, want)
	}
}

// TestPlanWindowGroups: with window groups a block holds one group (2 of
// 12 layers here, 5 sliding groups), a sequence at full context takes its
// main blocks and its window's in each sliding group, and the longest one
// leaves room for a step's chunk of window blocks.
func TestPlanWindowGroups(t *testing.T) {
	det := Detection{CPU: CPU{Cores: 2, MemAvailable: 8 * gib}}
	w := l110
	w.Context, w.BlockLayers, w.WindowTables, w.Window = 8192, 2, 5, 256
	p, err := MakePlan(det, BuiltinProfiles(), w, Requested{MaxNumSeqs: 4}, "cpu", KVFloat32)
	if err != nil {
		t.Fatal(err)
	}
	if p.KVBytesPerToken != 73728/6 || p.KVWindowTables != 5 || p.KVBlockLayers != 2 || p.SlidingWindow != 256 {
		t.Fatalf("plan %+v", p)
	}
	// 4 sequences of 8192 tokens: 512 main blocks and 5 x 17 window blocks each.
	if perSeq := 512 + 5*17; p.KVBlocks != 4*perSeq || p.FullContextSeqs != 4 || p.MaxContext != 8192 {
		t.Fatalf("%d blocks, %d sequences of %d: want %d blocks for 4 of 8192", p.KVBlocks, p.FullContextSeqs, p.MaxContext, 4*perSeq)
	}
	// A pool of 100 blocks, less than a sequence's window and a step's
	// chunk of 512 take (5 x 49): a sequence of 16 blocks holds as many
	// in each sliding group.
	p, err = MakePlan(det, BuiltinProfiles(), w, Requested{MaxNumSeqs: 4, KVBlocks: 100}, "cpu", KVFloat32)
	if err != nil || p.MaxContext != 16*16 || p.FullContextSeqs != 1 {
		t.Fatalf("100 blocks: %v, a longest sequence of %d tokens, %d of them", err, p.MaxContext, p.FullContextSeqs)
	}
	if _, err := MakePlan(det, BuiltinProfiles(), w, Requested{MaxNumSeqs: 4, KVBlocks: 5}, "cpu", KVFloat32); !errors.Is(err, ErrDoesNotFit) {
		t.Fatalf("5 blocks: %v, want ErrDoesNotFit", err)
	}
}
