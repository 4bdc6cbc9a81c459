package hwprofile

import (
	"errors"
	"fmt"
)

// ModelShape is what planning needs to know of a model.
type ModelShape struct {
	Name        string
	Layers      int
	KVHeads     int
	HeadDim     int
	Dim, QDim   int
	FFN, Vocab  int
	Context     int
	WeightBytes int64 // resident weights (the mapped file)
	// WholeText: an encoder, whose text runs in one step however long, so
	// a step may hold a whole context past the token budget.
	WholeText bool
	// A mixture of experts: Used of Experts run on a token, each ExpertFFN
	// wide (plus a shared expert SharedFFN wide); ActiveBytes is what one
	// token reads of the weights (all but the unchosen experts).
	Experts, Used, ExpertFFN, SharedFFN int
	ActiveBytes                         int64
	// Recurrent layers (qwen35): KVLayers keep K and V (0: every layer);
	// StateBytes is one sequence's recurrent state, held while it runs.
	KVLayers   int
	StateBytes int64
	// Window groups (model.KVLayout): a block holds BlockLayers layers (0:
	// every KV layer), and a sequence holds WindowTables more blocks a
	// block for its last Window positions only (the sliding layers').
	BlockLayers, WindowTables, Window int
}

// ffnActivations is the floats one token's FFN holds in a step: the
// gate and up outputs, or under a mixture its gathered inputs, hidden
// rows and outputs for each chosen expert, the router's scores and the
// shared expert's.
func (m ModelShape) ffnActivations() int {
	if m.Experts == 0 {
		return 2 * m.FFN
	}
	return m.Used*(2*m.Dim+2*m.ExpertFFN) + 2*m.Experts + 2*m.SharedFFN + m.Dim
}

// KVStore is how the backend stores K and V: the type's name ("f16",
// "q8_0", "q8_0/q4_0" for K/V) and the bytes that 32 values of K and 32 of
// V take together (a block format's head dim is a multiple of 32).
type KVStore struct {
	Type    string
	Bytes32 int
}

// KVFloat32 is float32 K and V.
var KVFloat32 = KVStore{Type: "f32", Bytes32: 256}

// KVBytesPerToken is layers with K and V x KV heads x head dim x the
// bytes of one K and one V value.
func (m ModelShape) KVBytesPerToken(kv KVStore) int {
	layers := m.Layers
	if m.KVLayers > 0 {
		layers = m.KVLayers
	}
	if m.BlockLayers > 0 {
		layers = m.BlockLayers
	}
	return layers * m.KVHeads * m.HeadDim * kv.Bytes32 / 32
}

// Requested holds what the user set; zero fields take the profile's value.
type Requested struct {
	BlockSize, KVBlocks, MaxNumSeqs, MaxNumBatchedTokens, Threads int
}

// Plan is how batchd sizes itself on this machine, and why.
type Plan struct {
	Backend           string  `json:"backend"` // the backend that runs: "cpu"
	Device            string  `json:"device"`
	Profile           string  `json:"profile"`
	MemoryBytes       uint64  `json:"memory_bytes"` // memory available to plan with
	MemoryUtilization float64 `json:"memory_utilization"`
	Headroom          float64 `json:"headroom"`
	WeightBytes       int64   `json:"weight_bytes"`
	ActiveBytes       int64   `json:"active_weight_bytes,omitempty"` // read per token: a mixture's chosen experts
	Experts           string  `json:"experts,omitempty"`             // "8 of 128": a mixture's chosen and all
	ActivationReserve int64   `json:"activation_reserve_bytes"`
	StateReserve      int64   `json:"recurrent_state_bytes,omitempty"` // recurrent layers' states (qwen35)
	KVBudget          int64   `json:"kv_budget_bytes"`
	KVCacheType       string  `json:"kv_cache_type"`      // K and V's type ("q8_0/q4_0": K's, V's)
	KVBytesPerToken   int     `json:"kv_bytes_per_token"` // a block's (its layer group's) bytes a token
	// Window groups: a block holds KVBlockLayers layers, and a sequence
	// holds KVWindowTables more blocks a block for its last SlidingWindow
	// positions (windowed.go).
	SlidingWindow       int      `json:"sliding_window,omitempty"`
	KVWindowTables      int      `json:"kv_window_tables,omitempty"`
	KVBlockLayers       int      `json:"kv_block_layers,omitempty"`
	BlockSize           int      `json:"block_size"`
	KVBlocks            int      `json:"kv_blocks"`
	KVTokens            int      `json:"kv_tokens"`
	MaxContext          int      `json:"max_context"`       // the longest sequence the pool holds
	FullContextSeqs     int      `json:"full_context_seqs"` // sequences at MaxContext at once
	MaxNumSeqs          int      `json:"max_num_seqs"`
	MaxNumBatchedTokens int      `json:"max_num_batched_tokens"`
	Threads             int      `json:"threads"`
	Warnings            []string `json:"warnings,omitempty"` // clamps and fallbacks, also logged
}

// ErrDoesNotFit reports a model that leaves no room for a KV block.
var ErrDoesNotFit = errors.New("model does not fit in memory")

// MakePlan chooses the device and profile for backend ("cpu" is the only
// one this build runs; GPUs are planned for only with "cuda"), then sizes
// the KV pool and limits for the model, whose K and V the backend stores
// as kv says.
func MakePlan(det Detection, profiles []Profile, m ModelShape, req Requested, backend string, kv KVStore) (Plan, error) {
	p := Plan{Backend: backend, KVCacheType: kv.Type}
	var gpu *GPU
	if backend == "cuda" {
		for i := range det.GPUs {
			if gpu == nil || det.GPUs[i].MemFree > gpu.MemFree {
				gpu = &det.GPUs[i]
			}
		}
	} else if len(det.GPUs) > 0 {
		p.warn("%d GPU(s) detected (%s), but the %s backend runs: planning for the CPU", len(det.GPUs), det.GPUs[0].Name, backend)
	}
	prof := Choose(profiles, gpu)
	p.Profile, p.MemoryUtilization, p.Headroom = prof.Name, prof.MemoryUtilization, prof.Headroom
	if gpu != nil {
		p.Device = fmt.Sprintf("gpu%d %s (%s)", gpu.Index, gpu.Name, gpu.UUID)
		used := gpu.MemTotal - gpu.MemFree // by other processes
		p.MemoryBytes = uint64(float64(gpu.MemTotal)*prof.MemoryUtilization) - min(used, uint64(float64(gpu.MemTotal)*prof.MemoryUtilization))
		if len(det.GPUs) > 1 {
			p.warn("%d GPUs detected; batchd uses one (%s, the most free memory)", len(det.GPUs), gpu.Name)
		}
	} else {
		p.Device = "cpu " + det.CPU.Model
		if det.CPU.MemAvailable == 0 {
			p.warn("available memory unknown (%s); assuming 4 GiB", det.CPUProbeError)
		}
		p.MemoryBytes = cpuMemory(det, prof)
	}

	p.BlockSize = pick(req.BlockSize, prof.BlockSize)
	p.MaxNumSeqs = pick(req.MaxNumSeqs, prof.MaxNumSeqs)
	p.MaxNumBatchedTokens = pick(req.MaxNumBatchedTokens, prof.MaxNumBatchedTokens)
	p.Threads = pick(req.Threads, prof.Threads)
	if p.Threads == 0 {
		p.Threads = max(det.CPU.Cores, 1)
	}
	p.WeightBytes = m.WeightBytes
	// Scratch for a step: activations of every batched token, logits of every
	// sequence, and a fixed allowance for the runtime.
	stepTokens := p.MaxNumBatchedTokens
	if m.WholeText {
		stepTokens = max(stepTokens, m.Context)
	}
	if m.Experts > 0 {
		p.ActiveBytes, p.Experts = m.ActiveBytes, fmt.Sprintf("%d of %d", m.Used, m.Experts)
	}
	p.reserve(m, stepTokens, kv, prof.Headroom)
	p.SlidingWindow, p.KVWindowTables, p.KVBlockLayers = m.Window, m.WindowTables, m.BlockLayers
	blockBytes := int64(p.BlockSize) * int64(p.KVBytesPerToken)
	if p.KVBudget < blockBytes {
		return p, fmt.Errorf("%w: %d MiB usable, weights %d MiB, activations %d MiB leave no KV memory",
			ErrDoesNotFit, p.MemoryBytes>>20, p.WeightBytes>>20, p.ActivationReserve>>20)
	}
	maxBlocks := int(p.KVBudget / blockBytes)
	// No point holding more than every sequence at full context.
	maxBlocks = min(maxBlocks, p.seqBlocks(m.Context)*p.MaxNumSeqs)
	p.KVBlocks = maxBlocks
	if req.KVBlocks > 0 {
		p.KVBlocks = req.KVBlocks
		if req.KVBlocks > maxBlocks {
			p.KVBlocks = maxBlocks
			p.warn("kv_blocks %d does not fit the KV budget: clamped to %d", req.KVBlocks, maxBlocks)
		}
	}
	if p.MaxNumSeqs > p.KVBlocks {
		p.warn("max_num_seqs %d exceeds the %d KV blocks: clamped", p.MaxNumSeqs, p.KVBlocks)
		p.MaxNumSeqs = p.KVBlocks
	}
	p.KVTokens = p.KVBlocks * p.BlockSize
	p.MaxContext = min(m.Context, p.longest())
	if p.MaxContext < m.Context {
		p.warn("the KV pool holds %d tokens, less than the model's context of %d", p.KVTokens, m.Context)
	}
	if p.MaxContext <= 0 {
		return p, fmt.Errorf("%w: %d KV blocks hold no sequence's window and step", ErrDoesNotFit, p.KVBlocks)
	}
	p.FullContextSeqs = p.KVBlocks / p.seqBlocks(p.MaxContext)
	return p, nil
}

// reserve sets aside the step's activations and the recurrent states, and
// leaves the rest, less the headroom, to the KV blocks.
func (p *Plan) reserve(m ModelShape, stepTokens int, kv KVStore, headroom float64) {
	p.ActivationReserve = int64(stepTokens)*int64(4*m.Dim+m.QDim+m.ffnActivations())*4 +
		int64(p.MaxNumSeqs)*int64(m.Vocab)*4 + 64<<20
	p.KVBytesPerToken = m.KVBytesPerToken(kv)
	// Recurrent states: the backend holds up to two per running sequence
	// (backend.Options.MaxStates), and keeps as many for cached prefixes
	// (MaxSnapshots).
	p.StateReserve = 4 * int64(p.MaxNumSeqs) * m.StateBytes
	free := int64(p.MemoryBytes) - p.WeightBytes - p.ActivationReserve - p.StateReserve
	p.KVBudget = int64(float64(free) * (1 - headroom))
}

// cpuMemory is the memory a CPU plan may use: what is available now (4
// GiB when unknown) times the profile's utilization.
func cpuMemory(det Detection, prof Profile) uint64 {
	mem := det.CPU.MemAvailable
	if mem == 0 {
		mem = 4 << 30
	}
	return uint64(float64(mem) * prof.MemoryUtilization)
}

// MemoryBudget is the memory plans for backend may use on this machine
// (the CPU's for "cpu"), before any model is loaded: what a daemon of
// several models shares among them.
func MemoryBudget(det Detection, profiles []Profile, backend string) uint64 {
	if backend == "cuda" && len(det.GPUs) > 0 {
		gpu := &det.GPUs[0]
		for i := range det.GPUs {
			if det.GPUs[i].MemFree > gpu.MemFree {
				gpu = &det.GPUs[i]
			}
		}
		prof := Choose(profiles, gpu)
		limit := uint64(float64(gpu.MemTotal) * prof.MemoryUtilization)
		return limit - min(gpu.MemTotal-gpu.MemFree, limit)
	}
	return cpuMemory(det, Choose(profiles, nil))
}

func pick(requested, def int) int {
	if requested > 0 {
		return requested
	}
	return def
}

func (p *Plan) warn(format string, args ...any) {
	p.Warnings = append(p.Warnings, fmt.Sprintf(format, args...))
}
