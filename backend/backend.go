// Package backend is the contract between the engine and what runs the
// model: a Backend runs one forward step over a Batch of sequences whose
// K/V live in a paged store addressed by block ids from package kvcache.
// Backends live in subpackages (cpu today); package backends opens one by
// name, and backendtest is the suite every backend must pass.
//
// Invariants every backend keeps:
//   - a token's logits depend only on its own sequence's tokens: what else is
//     in the batch, how prompts are chunked and where blocks sit change nothing;
//   - Forward writes K/V only into the blocks a sequence's table names.
package backend

import (
	"errors"
	"fmt"
	"strings"

	"github.com/batchd/batchd/quant"
)

// Backend runs forward passes over the paged KV store.
type Backend interface {
	// Forward runs one step; it returns the last-token logits of every
	// sequence that asked (nil for the others), or with Hidden the final
	// hidden state of each of its tokens (len(Tokens) rows of the model's
	// dim, row-major), valid until the next call.
	Forward(*Batch) ([][]float32, error)
	Close() error
}

// Sleeper is implemented by backends that can drop their KV memory while the
// engine sleeps and get it back on wake.
type Sleeper interface {
	Release(weights bool) error // free KV memory (and drop resident weight pages when weights)
	Restore() error             // reallocate it, empty
}

// ExpertCounter is implemented by backends that run mixtures of experts:
// what the last forward pass routed, for the engine's stats.
type ExpertCounter interface {
	ExpertLoad() ExpertLoad
}

// ExpertLoad is what one forward pass routed, summed over its layers:
// token-expert pairs, and the experts they touched (an expert touched in
// two layers counts twice).
type ExpertLoad struct {
	Layers, Pairs, Touched int
}

// ErrBadBatch reports a step batch the backend cannot run (bad token id,
// position past the context, block table too short or out of range).
var ErrBadBatch = errors.New("invalid batch")

// SeqInput is one sequence's share of a step: Tokens at positions Pos,
// Pos+1, ...; Blocks is its block table, covering at least Pos+len(Tokens)
// slots. The K/V of positions before Pos must already be in those blocks.
type SeqInput struct {
	Tokens []int
	Pos    int
	Blocks []int
	Logits bool // return logits for the last token
	// Rows, with Logits, is how many trailing tokens get logits (0 is 1):
	// speculative verification scores every drafted token at once. The
	// rows come back as one slice, oldest first, each the same as a share
	// ending at that token would give.
	Rows int
	// Hidden returns instead the final hidden state (after the output norm,
	// before the classifier) of every token of this share: what embedding
	// models pool. Not with Logits.
	Hidden bool
	// PromptLen: positions below it hold the request's prompt, the rest
	// tokens it generated. A backend that computes the two alike ignores
	// it; one that does not (RoleAware) must decide by position alone.
	PromptLen int
	// Seq names the sequence while it runs (never reused): a Recurrent
	// backend keeps its state under it.
	Seq uint64
	// Window, with window groups (Options.Windowed), is the sequence's
	// table for each sliding group (model.KVLayout): entry i holds block
	// i's positions for that group's layers, -1 where no query of the share
	// sees it (kvcache.Pool.Window). Blocks then hold the main group's.
	Window [][]int
	// Recurrent backends: Snapshots ask for the state as it stands after
	// At positions (Pos < At <= Pos+len(Tokens)) to be kept under Key, for
	// a later sequence whose cached prefix ends there; a Rolling one
	// replaces the sequence's previous rolling one. Restore, on the first
	// share of a sequence that starts at Pos > 0 (its prefix cached),
	// starts its state from the one kept under that key.
	Snapshots []StateKey
	Restore   *StateID
}

// StateID names a kept recurrent state: the prefix-cache hash of the block
// that ends where the state stands.
type StateID [16]byte

// StateKey asks for the state after At positions to be kept as Key.
type StateKey struct {
	At      int
	Key     StateID
	Rolling bool
}

// Recurrent is a backend whose model keeps a state per sequence besides
// its K/V (Gated DeltaNet layers): a share at position 0 starts the
// sequence's state afresh, a later share continues it and must start
// where the last one ended (or from a kept snapshot, SeqInput.Restore),
// so the engine reuses a cached prefix only up to a block whose state is
// kept, verifies no drafts on it, and drops a sequence's state when it
// stops running. At most MaxStates live at once, and MaxSnapshots kept.
type Recurrent interface {
	Recurrent() bool
	DropState(seq uint64)
	// HasSnapshot reports whether a state is kept under key; Snapshots
	// how many are kept.
	HasSnapshot(key StateID) bool
	Snapshots() int
}

// SnapshotStore is a Recurrent backend whose kept states can be read and
// written whole, so that they outlive the process beside the prefix
// cache's blocks (a cached prefix of a recurrent model resumes only from
// a kept state).
type SnapshotStore interface {
	SnapshotBytes() int                        // one state's bytes (0: the model keeps none)
	KeptStates() []StateID                     // least recently used first
	ReadSnapshot(key StateID, dst []byte) bool // len(dst) == SnapshotBytes()
	WriteSnapshot(key StateID, src []byte)     // kept as the most recently used
}

// RoleAware is a backend whose numerics for a token depend on whether it
// is a prompt or a generated token (SeqInput.PromptLen), never on its
// batch. The engine then shares cached KV blocks only within prompts and
// puts prompt chunks first in a step, so that each role is one run of tokens.
type RoleAware interface {
	ByRole() bool
}

// Bidirectional is a backend that runs non-causal models (encoders,
// model.Config.NonCausal): each token of a share attends to every token of
// it. The engine then gives each text one share from position 0.
type Bidirectional interface {
	Bidirectional() bool
}

// BlockStore is a backend whose KV blocks can be read and written whole,
// so that the prefix cache outlives the process (saved at drain or sleep,
// read back at start or wake).
// A block holds its layer group's K and V, whichever group uses it.
type BlockStore interface {
	BlockBytes() int               // one block's K and V over its layers
	ReadBlock(id int, dst []byte)  // len(dst) == BlockBytes()
	WriteBlock(id int, src []byte) // the inverse
}

// Batch is one forward step over any mix of prefill chunks and decode tokens.
type Batch struct {
	Seqs []SeqInput
}

// Options size a backend's paged KV store and threads.
type Options struct {
	NumBlocks int // KV blocks; required
	BlockSize int // token slots per block; default 16
	Threads   int // worker threads; default GOMAXPROCS
	// Windowed lays K and V out in window groups (model.Config.Layout): a
	// block holds one group's layers, and a sequence holds the sliding
	// groups' blocks (SeqInput.Window) only for its window. Without it (or
	// for a model without sliding-window layers) a block holds every layer.
	Windowed bool
	// KV is how K and V are stored (KVTypes). The zero value is F32.
	KV KVTypes
	// Kernels picks a SIMD kernel family by name ("avx2", "avxvnni", "avx512",
	// "amx"; "" is the best the machine has). Backends without families
	// ignore it.
	Kernels string
	// QuantDot is how quantized weights meet activations: "float" (the
	// default; the reference mode): weights dequantized exactly, dots in
	// float32; "int8": each token's activations quantized to 8 bits (ggml's
	// q8_0 blocks) and dotted in integers, as llama.cpp does, for the
	// formats that have int8 kernels; "auto": the faster of the two for
	// each role, which the backend decides (the CPU one: with AVX512-VNNI
	// "int8" for every token, else prompt tokens as "float" and generated
	// ones as "int8"). Either way batching stays invisible.
	QuantDot string
	// MaxStates bounds the per-sequence states a Recurrent backend keeps
	// (the engine's running sequences); 0: 256. MaxSnapshots bounds the
	// states kept for cached prefixes, least recently used out; 0:
	// MaxStates.
	MaxStates, MaxSnapshots int
	// ShareThreads, when set, is a backend of the same kind whose worker
	// threads this one runs on (a draft model's beside its target's), so
	// that two idle pools do not spin against each other. The two must
	// never Forward at once, and this one closes first. Backends of
	// another kind ignore it.
	ShareThreads Backend
}

// DefaultQuantDot is the product's quant_dot: what the daemon runs when
// the config says nothing, and so what its tools and benchmarks default to.
const DefaultQuantDot = "auto"

// ParseQuantDot checks a QuantDot name: "float" (also "") or "int8".
func ParseQuantDot(s string) (string, error) {
	switch s {
	case "", "float":
		return "float", nil
	case "int8", "auto":
		return s, nil
	}
	return "", fmt.Errorf("quant dot %q: want float, int8 or auto", s)
}

// KVTypes is how a backend stores K and V, each on its own as llama.cpp's
// -ctk and -ctv allow: F32, F16 (llama.cpp's default, half the memory and
// bandwidth) or one of ggml's 32-value block formats (KVFormats), whose
// blocks hold the bytes llama.cpp would store for the same values.
type KVTypes struct{ K, V quant.DType }

// SameKV stores K and V alike.
func SameKV(t quant.DType) KVTypes { return KVTypes{t, t} }

// String names the types as the config does: "q8_0", or "q8_0/q4_0" (K/V)
// where they differ.
func (kv KVTypes) String() string {
	k := strings.ToLower(kv.K.String())
	if kv.V == kv.K {
		return k
	}
	return k + "/" + strings.ToLower(kv.V.String())
}

// Bytes32 is the bytes 32 values of K and 32 of V take.
func (kv KVTypes) Bytes32() int { return kv.K.RowBytes(32) + kv.V.RowBytes(32) }

// Quantized reports whether either is a block format.
func (kv KVTypes) Quantized() bool {
	return quant.Lookup(kv.K).BlockElems > 1 || quant.Lookup(kv.V).BlockElems > 1
}

// KVFormats are the K/V types, as llama.cpp's -ctk/-ctv name them: its
// own but bf16, q4_1 and q5_1 (a K in those meets the query as ggml's
// q8_1, whose fp16 sums batchd's int8 kernels do not reproduce).
var KVFormats = []quant.DType{quant.F32, quant.F16, quant.Q8_0, quant.Q4_0, quant.Q5_0, quant.IQ4_NL}

// ParseKVType parses a KV cache type name: "f16" (also ""), "f32", "q8_0",
// "q4_0", "q5_0" or "iq4_nl".
func ParseKVType(s string) (quant.DType, error) {
	if s == "" {
		return quant.F16, nil
	}
	for _, t := range KVFormats {
		if strings.EqualFold(t.String(), s) {
			return t, nil
		}
	}
	return 0, fmt.Errorf("KV cache type %q: want one of f16, f32, q8_0, q4_0, q5_0, iq4_nl", s)
}

// ParseKV parses the K and V types: each of k and v as ParseKVType; an
// empty one takes kv's (the type for both), and that defaults to f16.
func ParseKV(kv, k, v string) (KVTypes, error) {
	both, err := ParseKVType(kv)
	if err != nil {
		return KVTypes{}, err
	}
	out := SameKV(both)
	if k != "" {
		if out.K, err = ParseKVType(k); err != nil {
			return KVTypes{}, fmt.Errorf("K: %w", err)
		}
	}
	if v != "" {
		if out.V, err = ParseKVType(v); err != nil {
			return KVTypes{}, fmt.Errorf("V: %w", err)
		}
	}
	return out, nil
}
