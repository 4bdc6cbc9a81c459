package llamacpp

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// Ref is a running llamaref: one model and one context at a time.
type Ref struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	mu     sync.Mutex
	wait   sync.Once
	waited error  // the process's exit, once waited for
	System string // llama.cpp's system info: the CPU features its ggml variant uses
}

// ErrExited: the llama.cpp process ended (a crash inside ggml, or killed)
// before it answered. The error wrapping it says how the process ended;
// the Ref is dead, so start another to go on.
var ErrExited = errors.New("llama.cpp exited")

// Options start a Ref.
type Options struct {
	// Variant loads one CPU build of ggml ("haswell": AVX2 without
	// AVX-512) instead of the best this CPU allows.
	Variant string
}

// Start runs llamaref of in.
func Start(in *Install, o Options) (*Ref, error) {
	variant := ""
	if o.Variant != "" {
		variant = filepath.Join(in.Bins, "libggml-cpu-"+o.Variant+".so")
	}
	cmd := exec.Command(in.Tool, in.Bins, variant)
	cmd.Stderr = os.Stderr
	w, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	r, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	ref := &Ref{cmd: cmd, in: w, out: bufio.NewReaderSize(r, 1<<20)}
	var ready struct {
		Ready  bool   `json:"ready"`
		System string `json:"system"`
	}
	if err := ref.read(&ready); err != nil || !ready.Ready {
		ref.Close()
		return nil, fmt.Errorf("llamaref did not start: %v", err)
	}
	ref.System = ready.System
	return ref, nil
}

// Close stops the process.
func (r *Ref) Close() error {
	_ = r.in.Close()
	return r.exit()
}

// exit waits for the process once and returns how it ended.
func (r *Ref) exit() error {
	r.wait.Do(func() { r.waited = r.cmd.Wait() })
	return r.waited
}

func (r *Ref) read(v any) error {
	line, err := r.out.ReadBytes('\n')
	if errors.Is(err, io.EOF) {
		how := r.exit()
		if how == nil {
			how = errors.New("exit status 0")
		}
		return fmt.Errorf("%w (%v)", ErrExited, how)
	}
	if err != nil {
		return err
	}
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(line, &e) == nil && e.Error != "" {
		return errors.New("llama.cpp: " + e.Error)
	}
	return json.Unmarshal(line, v)
}

// call sends one command and reads its answer into v.
func (r *Ref) call(v any, op string, args ...any) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	b.WriteString(op)
	for _, a := range args {
		b.WriteByte(' ')
		switch x := a.(type) {
		case string:
			b.WriteString(hex.EncodeToString([]byte(x)))
		case bool:
			if x {
				b.WriteByte('1')
			} else {
				b.WriteByte('0')
			}
		case []int:
			b.WriteString(strconv.Itoa(len(x)))
			for _, t := range x {
				b.WriteByte(' ')
				b.WriteString(strconv.Itoa(t))
			}
		default:
			fmt.Fprint(&b, x)
		}
	}
	b.WriteByte('\n')
	if _, err := io.WriteString(r.in, b.String()); err != nil {
		if errors.Is(err, os.ErrClosed) || errors.Is(err, syscall.EPIPE) {
			return fmt.Errorf("%w (%v)", ErrExited, r.exit())
		}
		return err
	}
	return r.read(v)
}

// LoadModel loads a GGUF file (vocabOnly: just its vocabulary).
func (r *Ref) LoadModel(path string, vocabOnly bool) (nVocab int, err error) {
	var out struct {
		NVocab int `json:"n_vocab"`
	}
	err = r.call(&out, "model", path, vocabOnly)
	return out.NVocab, err
}

// KV cache types, as ggml numbers them.
const (
	F32  = 0
	F16  = 1
	Q4_0 = 2
	Q8_0 = 8
)

// Flash attention, as llama.cpp's enum llama_flash_attn_type.
const (
	FlashAuto = -1
	FlashOff  = 0
	FlashOn   = 1
)

// Pooling types, as llama.cpp's enum llama_pooling_type.
const (
	PoolingModel = -1 // what the file says
	PoolingNone  = 0
	PoolingMean  = 1
	PoolingCLS   = 2
	PoolingLast  = 3
)

// ContextOptions make a context.
type ContextOptions struct {
	Ctx, Batch, Seqs int
	TypeK, TypeV     int  // F32, F16, Q8_0, Q4_0
	Flash            int  // FlashOff, FlashOn, FlashAuto
	Threads          int  // default 2
	Embeddings       bool // pooled embeddings (Pooling)
	Pooling          int
	Unified          bool // one KV buffer for every sequence
}

// Context makes the model's context. The exactness references use F32 K
// and V with flash attention off (as the stored goldens were made); a
// zero ContextOptions means those.
func (r *Ref) Context(o ContextOptions) error {
	if o.Ctx == 0 {
		o.Ctx = 2048
	}
	if o.Batch == 0 {
		o.Batch = 512
	}
	if o.Seqs == 0 {
		o.Seqs = 1
	}
	if o.Threads == 0 {
		o.Threads = 2
	}
	var out struct {
		NCtx int `json:"n_ctx"`
	}
	return r.call(&out, "context", o.Ctx, o.Batch, o.Seqs, o.TypeK, o.TypeV, o.Flash, o.Threads, o.Embeddings, o.Pooling, o.Unified)
}

// Specials returns the loaded vocabulary's end-of-generation tokens and
// its control tokens, as llama.cpp derives them.
func (r *Ref) Specials() (eog, control []int, err error) {
	var out struct {
		EOG     []int `json:"eog"`
		Control []int `json:"control"`
	}
	err = r.call(&out, "eog")
	return out.EOG, out.Control, err
}

// Tokenize returns llama_tokenize's ids for text.
func (r *Ref) Tokenize(text string, addSpecial, parseSpecial bool) ([]int, error) {
	var out struct {
		IDs []int `json:"ids"`
	}
	err := r.call(&out, "tokenize", addSpecial, parseSpecial, text)
	return out.IDs, err
}

// RerankTokens pairs a query and a document as llama-server's rerank
// route does (the file's rerank template, or [BOS] query [EOS] [SEP]
// document [EOS] as its vocabulary's flags say). Neither may be empty:
// the line protocol cannot carry an empty string.
func (r *Ref) RerankTokens(query, doc string) ([]int, error) {
	var out struct {
		IDs []int `json:"ids"`
	}
	err := r.call(&out, "rerank_tokens", query, doc)
	return out.IDs, err
}

// Top is a step's k best tokens as [id, log-probability] (softmax of the
// raw logits over the whole vocabulary).
type Top [][2]float64

// Greedy evaluates prompt in sequence seq (cleared first) and returns the
// next n greedy tokens (stopping at an end-of-generation token unless
// ignoreEOS) and each step's top k.
func (r *Ref) Greedy(seq int, prompt []int, n, k int, ignoreEOS bool) ([]int, []Top, error) {
	var out struct {
		Tokens []int `json:"tokens"`
		Top    []Top `json:"top"`
	}
	err := r.call(&out, "greedy", seq, n, k, ignoreEOS, prompt)
	return out.Tokens, out.Top, err
}

// Constrained is Greedy under a GBNF grammar (root "root"), as
// llama.cpp's grammar sampler then its greedy one.
func (r *Ref) Constrained(gbnf string, prompt []int, n int) ([]int, error) {
	toks, _, err := r.TimedConstrained(gbnf, prompt, n)
	return toks, err
}

// TimedConstrained is Constrained (gbnf "": Greedy, to the end of n) and
// the seconds its generation took (each step's sampling and decode, the
// prompt's not).
func (r *Ref) TimedConstrained(gbnf string, prompt []int, n int) ([]int, float64, error) {
	var out struct {
		Tokens []int   `json:"tokens"`
		GenS   float64 `json:"gen_s"`
	}
	var err error
	if gbnf == "" {
		err = r.call(&out, "greedy", 0, n, 1, true, prompt)
	} else {
		err = r.call(&out, "grammar", gbnf, 0, n, 1, false, prompt)
	}
	return out.Tokens, out.GenS, err
}

// SchemaGBNF is llama.cpp's json_schema_to_grammar of a schema.
func (r *Ref) SchemaGBNF(schema []byte) (string, error) {
	var out struct {
		GBNF string `json:"gbnf"`
	}
	err := r.call(&out, "schema", string(schema))
	return out.GBNF, err
}

// Embed returns the pooled embedding of tokens (a context made with
// Embeddings).
func (r *Ref) Embed(tokens []int) ([]float32, error) {
	var out struct {
		Embedding []float32 `json:"embedding"`
	}
	err := r.call(&out, "embed", tokens)
	return out.Embedding, err
}

// EmbedMany embeds the token lists together, one sequence each, in one
// decode (a context made with Embeddings, Seqs and Batch to hold them),
// and returns the seconds the decode took.
func (r *Ref) EmbedMany(seqs [][]int) (float64, error) {
	args := []any{len(seqs)}
	for _, s := range seqs {
		args = append(args, s)
	}
	var out struct {
		S float64 `json:"s"`
	}
	err := r.call(&out, "embed_many", args...)
	return out.S, err
}

// Quantize writes src quantized to ftype (llama.cpp's enum llama_ftype:
// 0 F32, 7 Q8_0, 2 Q4_0, 15 Q4_K_M, ...) as llama-quantize does without an
// importance matrix; requantize lets quantized tensors be converted too
// (to F32: llama.cpp's own dequantization).
func (r *Ref) Quantize(src, dst string, ftype, threads int, requantize bool) error {
	var out struct{}
	return r.call(&out, "quantize", src, dst, ftype, threads, requantize)
}

// BenchPrefill times reps prefills of n tokens (a fresh cache each),
// inside the decode calls.
func (r *Ref) BenchPrefill(n, reps int) ([]float64, error) {
	var out struct {
		S []float64 `json:"s"`
	}
	err := r.call(&out, "bench_pp", n, reps)
	return out.S, err
}

// GenTiming is one run of BenchGenerate.
type GenTiming struct {
	PrefillS float64 `json:"prefill_s"` // the prompts, inside llama_decode
	DecodeS  float64 `json:"decode_s"`  // the steps, inside llama_decode
	TotalS   float64 `json:"total_s"`   // the steps, end to end
	Tokens   int     `json:"tokens"`    // generated: sequences x steps
}

// BenchGenerate prefills seqs sequences of prompt tokens, then times steps
// of one token for every sequence in one batch (seqs 1: batch-1 decode).
// The context needs Seqs >= seqs.
func (r *Ref) BenchGenerate(seqs, prompt, steps int) (GenTiming, error) {
	var out GenTiming
	err := r.call(&out, "bench_gen", seqs, prompt, steps)
	return out, err
}

// For tests: the reference installed and started once per test binary,
// shared by its tests (one process; calls are serialised).
var shared struct {
	once sync.Once
	in   *Install
	err  error
}

// Installed returns the installed reference, or skips tb with the reason
// it could not be installed.
func Installed(tb testing.TB) *Install {
	tb.Helper()
	shared.once.Do(func() {
		dir, err := CacheDir()
		if err == nil {
			shared.in, err = Ensure(context.Background(), dir)
		}
		shared.err = err
	})
	if shared.err != nil {
		tb.Skipf("llama.cpp %s (%s) is not available: %v", Release, Package, shared.err)
	}
	return shared.in
}

// New starts a Ref for tb, stopped when the test ends, or skips tb.
func New(tb testing.TB, o Options) *Ref {
	tb.Helper()
	r, err := Start(Installed(tb), o)
	if err != nil {
		tb.Skipf("llama.cpp %s: %v", Release, err)
	}
	tb.Cleanup(func() { _ = r.Close() })
	return r
}

// Embeddings loads model with pooled embeddings on (pooling: PoolingModel
// for the file's) and returns, per text, llama.cpp's token ids (special
// tokens added and parsed, as llama-server embeds) and its vector,
// normalised as llama-server's /v1/embeddings returns it.
func (r *Ref) Embeddings(model string, pooling int, texts []string) ([][]float32, [][]int, error) {
	if _, err := r.LoadModel(model, false); err != nil {
		return nil, nil, err
	}
	longest := 0
	toks := make([][]int, len(texts))
	for i, tx := range texts {
		var err error
		if toks[i], err = r.Tokenize(tx, true, true); err != nil {
			return nil, nil, err
		}
		longest = max(longest, len(toks[i]))
	}
	n := max(512, longest) // an encoder's text must fit one batch
	if err := r.Context(ContextOptions{Ctx: n, Batch: n, Embeddings: true, Pooling: pooling}); err != nil {
		return nil, nil, err
	}
	vecs := make([][]float32, len(texts))
	for i, t := range toks {
		v, err := r.Embed(t)
		if err != nil {
			return nil, nil, err
		}
		var ss float64
		for _, x := range v {
			ss += float64(x) * float64(x)
		}
		if ss > 0 {
			scale := 1 / math.Sqrt(ss)
			for j := range v {
				v[j] = float32(float64(v[j]) * scale)
			}
		}
		vecs[i] = v
	}
	return vecs, toks, nil
}
