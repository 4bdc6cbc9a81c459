// Command quantbench puts batchd and llama.cpp side by side on the same
// quantized files. llama.cpp is the reference of testing/llamacpp
// (v0.5.0 as node-llama-cpp@3.22.1 ships it, installed from npm into its
// cache folder): for each format it quantizes an F32 model with
// llama_model_quantize, then alternates llama.cpp's measures with batchd's
// kernelbench on the same file, round by round, and prints each figure
// and the batchd/llama.cpp ratio per round and as medians:
//
//	go run ./testing/cmd/quantbench --f32 build/l110-f32.gguf --formats Q4_K_M,Q8_0 --rounds 3 [--isa avx2]
//	go run ./testing/cmd/quantbench --files a.gguf,b.gguf --rounds 3
//
// (--files measures files written elsewhere, e.g. by testing/modelgen,
// as they are.)
// Measures: prefill of 512 tokens (pp512), and decode of one token per
// sequence per step at 1, 8 and 32 sequences (batch 1 is llama-bench's
// tg), each with 128 tokens of KV, timed inside the decode calls on both
// sides. llama.cpp runs with its defaults (F16 K and V, flash attention
// where it can), batchd with F16 K and V. --isa avx2 runs batchd with
// AVX-512 off (its avx2 kernels) and llama.cpp's haswell build: what an
// AVX2-only CPU runs; --isa avxvnni adds AVX-VNNI on both sides (batchd's
// avxvnni kernels, llama.cpp's alderlake build), as Alder Lake and later
// run. A --quant-dot mode written MODE@FAMILY runs batchd on
// that kernel family (auto,auto@avx512: with and without AMX, in one run).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/batchd/batchd/backend"
	"github.com/batchd/batchd/testing/llamacpp"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "quantbench:", err)
		os.Exit(1)
	}
}

type measure struct {
	name         string
	batchd, llcp []float64
	touched      []float64 // a mixture's experts touched per layer and step
}

// roofline is batchd's batch-1 decode as a fraction of this machine's
// read bandwidth over the bytes a token reads, per round.
type roofline struct {
	frac, bwGBs []float64
	active      int
	experts     int
}

// ftypes are llama.cpp's enum llama_ftype values by llama-quantize's names.
var ftypes = map[string]int{"F16": 1, "Q4_0": 2, "Q4_1": 3, "Q8_0": 7, "Q5_0": 8, "Q5_1": 9, "Q2_K": 10,
	"Q3_K_S": 11, "Q3_K_M": 12, "Q3_K_L": 13, "Q4_K_S": 14, "Q4_K_M": 15, "Q5_K_S": 16, "Q5_K_M": 17, "Q6_K": 18,
	"IQ4_NL": 25, "IQ4_XS": 30, "BF16": 32}

func run() error {
	f32 := flag.String("f32", "build/l110-f32.gguf", "F32 model to quantize")
	formats := flag.String("formats", "Q4_K_M,Q4_0,Q5_K_M,Q6_K,Q8_0", "llama-quantize types")
	rounds := flag.Int("rounds", 3, "interleaved rounds per format")
	threads := flag.Int("threads", 2, "threads for both engines")
	batches := flag.String("batches", "1,8,32", "decode batch sizes (sequences)")
	isa := flag.String("isa", "", `"" the best this CPU has; avx2: AVX-512 off on both sides; avxvnni: and AVX-VNNI on (Alder Lake)`)
	out := flag.String("dir", "build/quantbench", "where the quantized files go")
	files := flag.String("files", "", "measure these GGUF files as they are (comma-separated) instead of quantizing --f32")
	kvTypes := flag.String("kv", "f16", "K/V types to measure, comma-separated (f16, q8_0, q4_0, q8_0/q4_0, ...): llama.cpp runs each with -ctk/-ctv")
	kvCtx := flag.Int("kv-context", 128, "tokens of KV each sequence holds when its decode is timed")
	quantDots := flag.String("quant-dot", backend.DefaultQuantDot, "batchd's quantized matmul modes to measure, comma-separated: auto (the daemon's default), float, int8; MODE@FAMILY runs it on a kernel family (auto@avx512: without AMX)")
	flag.Parse()
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	kb := filepath.Join(*out, "kernelbench")
	if err := sh("go", "build", "-o", kb, "./testing/cmd/kernelbench"); err != nil {
		return err
	}
	dir, err := llamacpp.CacheDir()
	if err != nil {
		return err
	}
	in, err := llamacpp.Ensure(context.Background(), dir)
	if err != nil {
		return err
	}
	o := llamacpp.Options{}
	kernels := ""
	switch *isa {
	case "avx2":
		o.Variant, kernels = "haswell", "avx2"
	case "avxvnni":
		o.Variant, kernels = "alderlake", "avxvnni"
	}
	ref, err := llamacpp.Start(in, o)
	if err != nil {
		return err
	}
	defer func() { _ = ref.Close() }()
	fmt.Printf("llama.cpp %s (%s, commit %s), CPU build: %s\n\n", llamacpp.Release, llamacpp.Package, llamacpp.Commit,
		strings.TrimSpace(ref.System))
	var bs []int
	for _, b := range strings.Split(*batches, ",") {
		n, err := strconv.Atoi(b)
		if err != nil {
			return fmt.Errorf("--batches %q: %w", *batches, err)
		}
		bs = append(bs, n)
	}
	modes := strings.Split(*quantDots, ",")
	fmt.Printf("| format | measure | batchd mode | llama.cpp | batchd | batchd/llama.cpp (each round) | median | experts touched a layer (batchd) |\n|---|---|---|---|---|---|---|---|\n")
	list := strings.Split(*formats, ",")
	if *files != "" {
		list = strings.Split(*files, ",")
	}
	var roofs, crashes []string
	for _, f := range list {
		file := f
		if *files != "" {
			f = strings.TrimSuffix(filepath.Base(f), ".gguf")
		} else {
			ft, ok := ftypes[f]
			if !ok {
				return fmt.Errorf("format %q: want one of llama-quantize's names", f)
			}
			file = filepath.Join(*out, "l110-"+strings.ToLower(f)+".gguf")
			if _, err := os.Stat(file); err != nil {
				if err := ref.Quantize(*f32, file, ft, *threads, false); err != nil {
					return fmt.Errorf("quantize %s: %w", f, err)
				}
			}
		}
		for _, kvName := range strings.Split(*kvTypes, ",") {
			kv, err := parseKV(kvName)
			if err != nil {
				return err
			}
			label := f
			if kvName != "f16" {
				label += " kv " + kvName
			}
			roof := make([]roofline, len(modes))
			byMode := make([][]*measure, len(modes))
			for i := range modes {
				byMode[i] = []*measure{{name: "pp512 tok/s"}}
				for _, b := range bs {
					byMode[i] = append(byMode[i], &measure{name: fmt.Sprintf("decode at %d tok/s", b)})
				}
			}
			for range *rounds {
				llcp, err := llamaCpp(ref, file, *threads, bs, kv, *kvCtx)
				if errors.Is(err, llamacpp.ErrExited) {
					// v0.5.0's AMX matmul segfaults on some files from 24
					// sequences: keep batchd's figures, say so, go on.
					crashes = append(crashes, fmt.Sprintf("%s: %v", label, err))
					_ = ref.Close()
					if ref, err = llamacpp.Start(in, o); err != nil {
						return err
					}
				} else if err != nil {
					return err
				}
				for mi, mode := range modes {
					for i, m := range byMode[mi] {
						m.llcp = append(m.llcp, llcp[i])
					}
					mode, kernels := mode, kernels
					if i := strings.Index(mode, "@"); i >= 0 { // auto@avx512: a mode on a kernel family
						mode, kernels = mode[:i], mode[i+1:]
					}
					if err := batchd(kb, file, mode, kernels, *threads, bs, byMode[mi], &roof[mi], kvName, *kvCtx); err != nil {
						return err
					}
				}
			}
			for i := range byMode[0] {
				for mi, mode := range modes {
					m := byMode[mi][i]
					var ratios []string
					var rs []float64
					for j := range m.batchd {
						r := m.batchd[j] / m.llcp[j]
						if math.IsNaN(r) {
							ratios = append(ratios, "n/a")
							continue
						}
						rs = append(rs, r)
						ratios = append(ratios, fmt.Sprintf("x%.2f", r))
					}
					touched := ""
					if len(m.touched) > 0 {
						touched = fmt.Sprintf("%.1f of %d", median(m.touched), roof[mi].experts)
					}
					fmt.Printf("| %s | %s | %s | %s | %.0f | %s | %s | %s |\n", label, m.name, mode, num("%.0f", median(m.llcp)), median(m.batchd),
						strings.Join(ratios, " "), num("x%.2f", median(rs)), touched)
				}
			}
			for mi, mode := range modes {
				if !slices.Contains(bs, 1) {
					break // no batch-1 decode, no roofline to report
				}
				r := roof[mi]
				roofs = append(roofs, fmt.Sprintf("%s, %s: batch-1 decode reads %.1f MiB a token; at %.0f GB/s read bandwidth (median) that is %.0f%% of the roofline (rounds %s)",
					label, mode, float64(r.active)/(1<<20), median(r.bwGBs), 100*median(r.frac), percents(r.frac)))
			}
		}
	}
	fmt.Println()
	for _, r := range roofs {
		fmt.Println(r)
	}
	for _, c := range crashes {
		fmt.Printf("llama.cpp's process died (its cells there are n/a): %s\n", c)
	}
	return nil
}

func percents(v []float64) string {
	var s []string
	for _, x := range v {
		s = append(s, fmt.Sprintf("%.0f%%", 100*x))
	}
	return strings.Join(s, " ")
}

// genSteps is how many decode steps both engines time at each batch size
// (the same count: a first step's one-off costs weigh the same in both).
const genSteps = 64

// llamaCpp measures the file in llama.cpp: pp512, then decode at each
// batch size after 128 tokens of KV per sequence, inside llama_decode.
// Where its process dies (llamacpp.ErrExited), that measure and the
// ones after it are NaN, returned with the error.
func llamaCpp(ref *llamacpp.Ref, file string, threads int, bs []int, kv backend.KVTypes, kvCtx int) ([]float64, error) {
	out := make([]float64, 0, 1+len(bs))
	fail := func(err error) ([]float64, error) {
		for len(out) < 1+len(bs) {
			out = append(out, math.NaN())
		}
		return out, err
	}
	if _, err := ref.LoadModel(file, false); err != nil {
		return fail(err)
	}
	defaults := llamacpp.ContextOptions{TypeK: int(kv.K), TypeV: int(kv.V), Flash: llamacpp.FlashAuto, Threads: threads}
	if kv.Quantized() {
		defaults.Flash = llamacpp.FlashOn
	}
	c := defaults
	c.Ctx, c.Batch = 1024, 512
	if err := ref.Context(c); err != nil {
		return fail(err)
	}
	pp, err := ref.BenchPrefill(512, 2)
	if err != nil {
		return fail(err)
	}
	out = append(out, 512/slices.Min(pp))
	for _, b := range bs {
		c := defaults
		c.Ctx, c.Batch, c.Seqs = b*(kvCtx+64), 512, b
		if err := ref.Context(c); err != nil {
			return fail(err)
		}
		g, err := ref.BenchGenerate(b, kvCtx, genSteps)
		if err != nil {
			return fail(fmt.Errorf("decode at %d: %w", b, err))
		}
		out = append(out, float64(g.Tokens)/g.DecodeS)
	}
	return out, nil
}

// batchd runs kernelbench: prefill of 512 and decode at each batch size
// (KV of 128 tokens).
func batchd(kb, file, mode, kernels string, threads int, bs []int, ms []*measure, roof *roofline, kv string, kvCtx int) error {
	var names []string
	for _, b := range bs {
		names = append(names, strconv.Itoa(b))
	}
	args := []string{"--model", file, "--threads", strconv.Itoa(threads), "--batches", strings.Join(names, ","),
		"--quant-dot", mode, "--kv-cache-type", kv, "--context", strconv.Itoa(kvCtx), "--steps", strconv.Itoa(genSteps), "--json"}
	if kernels != "" {
		args = append(args, "--kernels", kernels)
	}
	b, err := output(kb, args...)
	if err != nil {
		return err
	}
	var r struct {
		Prefill float64            `json:"prefill_tok_s"`
		Decode  map[string]float64 `json:"decode_tok_s"`
		Touched map[string]float64 `json:"experts_touched"`
		Experts int                `json:"experts"`
		Frac    float64            `json:"roofline_frac_b1"`
		BW      float64            `json:"mem_bw_gbs"`
		Active  int                `json:"weight_bytes"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("kernelbench output: %w", err)
	}
	ms[0].batchd = append(ms[0].batchd, r.Prefill)
	for i, n := range names {
		ms[i+1].batchd = append(ms[i+1].batchd, r.Decode[n])
		if t, ok := r.Touched[n]; ok {
			ms[i+1].touched = append(ms[i+1].touched, t)
		}
	}
	roof.frac, roof.bwGBs = append(roof.frac, r.Frac), append(roof.bwGBs, r.BW)
	roof.active, roof.experts = r.Active, r.Experts
	return nil
}

func sh(name string, args ...string) error {
	cmd := exec.Command(name, args...)
	var e bytes.Buffer
	cmd.Stderr = &e
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w\n%s", name, err, e.String())
	}
	return nil
}

func output(name string, args ...string) ([]byte, error) {
	cmd := exec.Command(name, args...)
	var e bytes.Buffer
	cmd.Stderr = &e
	b, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s: %w\n%s", name, err, e.String())
	}
	return b, nil
}

// num formats v, or says n/a where it was not measured (NaN).
func num(format string, v float64) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	return fmt.Sprintf(format, v)
}

// median of v's numbers, NaNs (not measured) left out; NaN if none.
func median(v []float64) float64 {
	s := slices.DeleteFunc(slices.Clone(v), math.IsNaN)
	if len(s) == 0 {
		return math.NaN()
	}
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// parseKV reads "q8_0" (K and V) or "q8_0/q4_0" (K/V).
func parseKV(s string) (backend.KVTypes, error) {
	k, v, _ := strings.Cut(s, "/")
	return backend.ParseKV(k, "", v)
}
