// Command kernelbench measures, in one run, this machine's read bandwidth
// and FMA peak, then the CPU backend's prefill and batched decode speed on a
// model, and prints one JSON object:
//
//	go run ./testing/cmd/kernelbench --model FILE [--tokenizer FILE] [--threads N] --json
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/batchd/batchd/backend"
	"github.com/batchd/batchd/backend/cpu"
	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/testing/cpuprof"
)

type report struct {
	Model          string             `json:"model"`
	DType          string             `json:"dtype"`
	Threads        int                `json:"threads"`
	SIMD           bool               `json:"simd"`
	Kernels        string             `json:"kernels"`
	MemBWGBs       float64            `json:"mem_bw_gbs"`
	PeakGFLOPs     float64            `json:"peak_gflops"`
	Int8Peak       cpu.Int8Peak       `json:"int8_peak_gmacs"` // the plain AVX2 int8 inner loops alone
	WeightBytes    int                `json:"weight_bytes"`
	PrefillTokens  int                `json:"prefill_tokens"`
	PrefillTokS    float64            `json:"prefill_tok_s"`
	DecodeContext  int                `json:"decode_context"`
	DecodeTokS     map[string]float64 `json:"decode_tok_s"`
	RooflineFracB1 float64            `json:"roofline_frac_b1"`
	// A mixture of experts: how many experts a decode step touched per
	// layer on average, by batch size, and of how many.
	Experts        int                `json:"experts,omitempty"`
	ExpertsTouched map[string]float64 `json:"experts_touched,omitempty"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "kernelbench:", err)
		os.Exit(1)
	}
}

func run() error {
	path := flag.String("model", "", "model file (required)")
	tok := flag.String("tokenizer", "", "llama2.c tokenizer file")
	threads := flag.Int("threads", runtime.GOMAXPROCS(0), "CPU threads")
	prefill := flag.Int("prefill", 512, "prompt tokens for the prefill measure")
	ctxLen := flag.Int("context", 128, "tokens already in each sequence's KV for the decode measure")
	batches := flag.String("batches", "1,8,32,64", "decode batch sizes")
	steps := flag.Int("steps", 16, "decode steps timed per batch size")
	asJSON := flag.Bool("json", false, "print JSON (the default prints it indented)")
	family := flag.String("kernels", "", "kernels: amx, avx512 (without AMX), avx2 or go (default: the best this CPU has)")
	kvName := flag.String("kv-cache-type", "f16", "how K and V are stored: f16, f32, q8_0, q4_0, q5_0, iq4_nl, or K/V (q8_0/q4_0)")
	quantDot := flag.String("quant-dot", backend.DefaultQuantDot, "quantized weights: auto (the daemon's default: int8 with AVX512-VNNI, else prompts float, generated tokens int8), float (exact dequantization) or int8 (quantized activations)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.Parse()
	stopProfile, err := cpuprof.Start(*cpuProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	if *path == "" {
		return fmt.Errorf("--model is required")
	}
	m, err := model.Load(*path, model.LoadOptions{Tokenizer: *tok})
	if err != nil {
		return err
	}
	defer m.Close()
	c := m.Config
	r := report{Model: *path, DType: ffnType(m.Layers[len(m.Layers)-1]), Threads: *threads,
		WeightBytes: m.WeightBytes(), DecodeTokS: map[string]float64{}, DecodeContext: *ctxLen}
	fmt.Fprintln(os.Stderr, "kernelbench: measuring memory bandwidth and FMA peak...")
	r.MemBWGBs = cpu.MeasureReadBandwidth(1<<30, *threads)
	r.PeakGFLOPs = cpu.MeasureFMAPeak(*threads)
	r.Int8Peak = cpu.MeasureInt8Peak(*threads)

	var bs []int
	maxB := 1
	for _, f := range strings.Split(*batches, ",") {
		b, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || b < 1 {
			return fmt.Errorf("bad batch size %q", f)
		}
		bs = append(bs, b)
		maxB = max(maxB, b)
	}
	const blockSize = 16
	perSeq := (max(*prefill, *ctxLen+*steps+1) + blockSize) / blockSize
	kn, vn, _ := strings.Cut(*kvName, "/")
	kvType, err := backend.ParseKV(kn, "", vn)
	if err != nil {
		return err
	}
	cpu, err := cpu.New(m, backend.Options{NumBlocks: perSeq * maxB, BlockSize: blockSize, Threads: *threads, KV: kvType,
		Kernels: *family, QuantDot: *quantDot})
	if err != nil {
		return err
	}
	r.Kernels = cpu.Kernels()
	r.SIMD = r.Kernels != "pure-go"
	defer cpu.Close()
	rng := rand.New(rand.NewPCG(1, 1))
	tokens := func(n int) []int {
		t := make([]int, n)
		for i := range t {
			t[i] = 3 + rng.IntN(c.Vocab-3)
		}
		return t
	}
	table := func(seq int) []int {
		b := make([]int, perSeq)
		for i := range b {
			b[i] = seq*perSeq + i
		}
		return b
	}

	// Prefill: one prompt, in chunks of up to 512 tokens (the default token budget).
	n := min(*prefill, c.Context)
	prompt := tokens(n)
	fmt.Fprintf(os.Stderr, "kernelbench: prefill %d tokens...\n", n)
	best := 0.0
	for range 2 {
		start := time.Now()
		for pos := 0; pos < n; pos += 512 {
			end := min(pos+512, n)
			if _, err := cpu.Forward(&backend.Batch{Seqs: []backend.SeqInput{{Tokens: prompt[pos:end], Pos: pos,
				Blocks: table(0), Logits: end == n, PromptLen: n, Seq: 1 << 20}}}); err != nil {
				return err
			}
		}
		best = max(best, float64(n)/time.Since(start).Seconds())
	}
	r.PrefillTokens, r.PrefillTokS = n, best

	// Decode: B sequences holding ctxLen tokens each, one token per step.
	ctx := min(*ctxLen, c.Context-*steps-1)
	for _, b := range bs {
		fmt.Fprintf(os.Stderr, "kernelbench: decode batch %d...\n", b)
		batch := &backend.Batch{}
		for s := range b {
			batch.Seqs = append(batch.Seqs, backend.SeqInput{Tokens: tokens(ctx), Pos: 0, Blocks: table(s), PromptLen: ctx, Seq: uint64(s)})
		}
		for s := 0; s < b; s += 8 { // fill the KV a few sequences at a time
			sub := &backend.Batch{Seqs: batch.Seqs[s:min(s+8, b)]}
			if _, err := cpu.Forward(sub); err != nil {
				return err
			}
		}
		for i := range batch.Seqs {
			batch.Seqs[i] = backend.SeqInput{Tokens: tokens(1), Pos: ctx, Blocks: table(i), Logits: true, PromptLen: ctx, Seq: uint64(i)}
		}
		var load backend.ExpertLoad
		start := time.Now()
		for step := range *steps {
			for i := range batch.Seqs {
				batch.Seqs[i].Pos = ctx + step
			}
			if _, err := cpu.Forward(batch); err != nil {
				return err
			}
			if ec, ok := any(cpu).(backend.ExpertCounter); ok {
				l := ec.ExpertLoad()
				load.Layers, load.Touched = load.Layers+l.Layers, load.Touched+l.Touched
			}
		}
		r.DecodeTokS[strconv.Itoa(b)] = float64(b**steps) / time.Since(start).Seconds()
		if load.Layers > 0 {
			if r.ExpertsTouched == nil {
				r.ExpertsTouched, r.Experts = map[string]float64{}, c.MoE.Experts
			}
			r.ExpertsTouched[strconv.Itoa(b)] = float64(load.Touched) / float64(load.Layers)
		}
	}
	if r.MemBWGBs > 0 {
		r.RooflineFracB1 = r.DecodeTokS["1"] * float64(r.WeightBytes) / (r.MemBWGBs * 1e9)
	}
	enc := json.NewEncoder(os.Stdout)
	if !*asJSON {
		enc.SetIndent("", "  ")
	}
	return enc.Encode(r)
}

// ffnType names the type of a layer's FFN down matrix (an expert's in a
// mixture), the report's "dtype".
func ffnType(l model.Layer) string {
	switch {
	case l.W2 != nil:
		return l.W2.Type.String()
	case len(l.ExpDown) > 0:
		return l.ExpDown[0].Type.String()
	}
	return "?"
}
