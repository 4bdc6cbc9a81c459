// Command modelgen writes a deterministic random-weight Llama GGUF of any
// shape and dtype, for benchmarks and for a demo model when no real one is
// configured:
//
//	go run ./testing/modelgen --out FILE --dim D --layers L --heads H --kv-heads K \
//	    --ffn F --vocab V --ctx C --dtype T --seed S [--tied] [--tokenizer FILE]
//
// T is any type batchd computes with (f32, f16, bf16, q8_0, q4_0, q4_1,
// q5_0, q5_1, q2_k, q3_k, q4_k, q5_k, q6_k, iq4_nl, iq4_xs), written by
// quantizers that give llama-quantize's bytes (no importance matrix), or
// the mix q4_k_m or q5_k_m (llama-quantize's choice of Q6_K tensors).
// K-quants and IQ4_XS need dim and ffn that are multiples of 256. With
// --arch bert or nomic-bert it writes an encoder (a BGE-small shape:
// --dim 384 --layers 12 --heads 12 --ffn 1536 --ctx 512 --dtype f16
// --vocab-from ../shared/models/embed/ggml-vocab-bert-bge.gguf). With
// --experts N it writes a mixture of experts under --arch qwen3moe
// (Qwen3-30B-A3B's shape: --dim 2048 --heads 32 --kv-heads 4 --head-dim
// 128 --experts 128 --experts-used 8 --expert-ffn 768 --vocab 151936 --ctx
// 40960), qwen2moe (with --shared-ffn), olmoe (OLMoE-1B-7B: --dim 2048
// --heads 16 --kv-heads 16 --experts 64 --experts-used 8 --expert-ffn 1024
// --vocab 50304), granitemoe, llama (Mixtral) or gpt-oss (MXFP4 experts
// whatever --dtype; gpt-oss-20b: --dim 2880 --heads 64 --kv-heads 8
// --head-dim 64 --experts 32 --experts-used 4 --expert-ffn 2880 --vocab
// 201088). --arch qwen35 (or qwen35moe, with --experts and --shared-ffn)
// writes a Gated DeltaNet hybrid, three recurrent layers to one of gated
// attention (a Qwen3.5-4B-like shape: --dim 2560 --heads 16 --kv-heads 4
// --head-dim 256 --ffn 9216 --ssm-state 128 --ssm-groups 16 --ssm-v-heads 32
// --vocab 151936).
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/batchd/batchd/gguf"
	"github.com/batchd/batchd/quant"
	"github.com/batchd/batchd/testing/synth"
	"github.com/batchd/batchd/tokenizer"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "modelgen:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("modelgen", flag.ContinueOnError)
	out := fs.String("out", "", "output GGUF file (required)")
	o := synth.Options{}
	fs.IntVar(&o.Dim, "dim", 768, "embedding width")
	fs.IntVar(&o.Layers, "layers", 12, "transformer blocks")
	fs.IntVar(&o.Heads, "heads", 12, "attention heads")
	fs.IntVar(&o.KVHeads, "kv-heads", 0, "key/value heads (default: heads)")
	fs.IntVar(&o.FFN, "ffn", 2048, "feed-forward width")
	fs.IntVar(&o.Vocab, "vocab", 32000, "vocabulary size")
	fs.IntVar(&o.Context, "ctx", 1024, "context length")
	dtype := fs.String("dtype", "f32", "matrix type ("+strings.ToLower(synth.WritableNames())+") or mix (q4_k_m, q5_k_m)")
	fs.Uint64Var(&o.Seed, "seed", 1, "random seed")
	fs.BoolVar(&o.Tied, "tied", false, "share the token embedding as classifier")
	fs.StringVar(&o.Arch, "arch", "llama", "general.architecture: llama, qwen2 (Q/K/V biases, NeoX RoPE), qwen3, "+
		"qwen3moe, qwen2moe, olmoe, granitemoe, gpt-oss (with --experts; llama too), qwen35, qwen35moe, gemma3, gemma-embedding, "+
		"gemma4 (the --g4-* flags), "+
		"or the encoders bert and nomic-bert (need --vocab-from)")
	fs.IntVar(&o.HeadDim, "head-dim", 0, "each head's width (default: dim / heads)")
	fs.IntVar(&o.Experts, "experts", 0, "experts of a mixture in every FFN (qwen3moe, qwen2moe, olmoe, llama)")
	fs.IntVar(&o.SharedFFN, "shared-ffn", 0, "qwen2moe: the shared expert's width")
	fs.IntVar(&o.ExpertsUsed, "experts-used", 8, "experts chosen per token")
	fs.IntVar(&o.ExpertFFN, "expert-ffn", 768, "one expert's feed-forward width")
	fs.IntVar(&o.SSM.State, "ssm-state", 128, "qwen35: a DeltaNet head's width (ssm.state_size)")
	fs.IntVar(&o.SSM.Groups, "ssm-groups", 16, "qwen35: DeltaNet Q and K heads (ssm.group_count)")
	fs.IntVar(&o.SSM.VHeads, "ssm-v-heads", 32, "qwen35: DeltaNet V heads (ssm.time_step_rank)")
	fs.IntVar(&o.SSM.RopeDim, "rope-dim", 0, "qwen35: rotated dims of an attention head (default: a quarter)")
	fs.IntVar(&o.Gemma.Window, "window", 1024, "gemma3, gemma-embedding: the sliding layers' window (five layers in six)")
	fs.IntVar(&o.Gemma.Dense, "dense", 0, "gemma-embedding: the dense projections' width after pooling (0: none)")
	g4 := synth.Gemma4Options{}
	fs.IntVar(&g4.HeadFull, "g4-head-full", 512, "gemma4: the full layers' head width (--head-dim is the sliding layers')")
	fs.IntVar(&g4.KVFull, "g4-kv-full", 0, "gemma4: the full layers' KV heads (default: --kv-heads)")
	fs.IntVar(&g4.KVShared, "g4-kv-shared", 0, "gemma4: the last layers that read earlier layers' K and V (E2B's layout)")
	fs.IntVar(&g4.PerLayer, "g4-per-layer", 0, "gemma4: the per-layer embeddings' width (E2B's 256; 0: none)")
	g4Every := fs.Int("g4-full-every", 5, "gemma4: every n-th layer is full, the others slide")
	fs.BoolVar(&g4.KEqV, "g4-k-eq-v", false, "gemma4: full layers without a V projection (31B's layout)")
	vocabFrom := fs.String("vocab-from", "", "encoders: a WordPiece GGUF whose tokenizer keys the file takes "+
		"(llama.cpp's ggml-vocab-bert-bge.gguf)")
	tokPath := fs.String("tokenizer", "", "llama2.c tokenizer file for the vocab (default: synthesized)")
	rank := fs.String("rank", "", "make a reranker (rank pooling, a classification head): \"logit\" (a cross-encoder's dense "+
		"layer and one logit) or comma-separated output labels (Qwen3-Reranker's \"yes,no\")")
	rankTemplate := fs.String("rank-template", "", "with --rank: tokenizer.chat_template.rerank, with {query} and {document}")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" {
		return fmt.Errorf("--out is required")
	}
	if o.KVHeads == 0 {
		o.KVHeads = o.Heads
	}
	if o.Experts == 0 {
		o.ExpertsUsed, o.ExpertFFN = 0, 0
	}
	var err error
	if t, ok := synth.MixType(strings.ToLower(*dtype)); ok {
		o.Mix, o.DType = strings.ToLower(*dtype), t
	} else if o.DType, err = quant.Parse(*dtype); err != nil {
		return err
	}
	if *tokPath != "" {
		if o.Tokenizer, err = tokenizer.LoadLlama2c(*tokPath, o.Vocab); err != nil {
			return err
		}
	}
	f, err := os.CreateTemp(filepath.Dir(*out), ".modelgen-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	bw := bufio.NewWriterSize(f, 1<<20)
	write := func(w io.Writer) error { return synth.Write(w, o) }
	if o.Arch == "gemma4" {
		write = func(w io.Writer) error { return synth.WriteGemma4(w, gemma4Options(o, g4, *g4Every)) }
	}
	if o.Arch == "bert" || o.Arch == "nomic-bert" {
		write = func(w io.Writer) error { return writeEncoder(w, o, *vocabFrom) }
	}
	if *rank != "" {
		model := write
		write = func(w io.Writer) error {
			var base bytes.Buffer
			if err := model(&base); err != nil {
				return err
			}
			ro := synth.RankOptions{Template: *rankTemplate, DType: quant.F32, Seed: o.Seed}
			if *rank == "logit" {
				ro.Dense = true
			} else {
				ro.Labels = strings.Split(*rank, ",")
			}
			if o.DType == quant.F16 { // as a converter's --outtype f16 writes the head
				ro.DType = quant.F16
			}
			return synth.WriteReranker(w, base.Bytes(), ro)
		}
	}
	if err := write(bw); err != nil {
		f.Close()
		return err
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), *out)
}

func writeEncoder(w io.Writer, o synth.Options, vocabPath string) error {
	data, err := os.ReadFile(vocabPath)
	if err != nil {
		return fmt.Errorf("--vocab-from: %w", err)
	}
	vocab, err := gguf.Parse(data)
	if err != nil {
		return fmt.Errorf("--vocab-from: %w", err)
	}
	return synth.WriteEncoder(w, o, vocab)
}

// gemma4Options are gemma4's from the common flags and the --g4-* ones:
// every n-th layer full (the last one too, as Gemma 4's are), the
// doubled FFN on sharing layers where they exist (E2B's).
func gemma4Options(o synth.Options, g synth.Gemma4Options, every int) synth.Gemma4Options {
	g.Dim, g.Layers, g.Heads, g.FFN, g.Vocab, g.Context = o.Dim, o.Layers, o.Heads, o.FFN, o.Vocab, o.Context
	g.Window, g.DType, g.Seed, g.Softcap = o.Gemma.Window, o.DType, o.Seed, 30
	g.HeadSWA, g.KVSWA = o.HeadDim, o.KVHeads
	if g.HeadSWA == 0 {
		g.HeadSWA = o.Dim / o.Heads
	}
	if g.KVFull == 0 {
		g.KVFull = o.KVHeads
	}
	g.Experts, g.Used, g.ExpertFFN, g.FusedGateUp = o.Experts, o.ExpertsUsed, o.ExpertFFN, o.Experts > 0
	g.DoubleFFN = g.KVShared > 0
	g.Slide = make([]bool, o.Layers)
	for l := range g.Slide {
		g.Slide[l] = (l+1)%max(every, 1) != 0 && l != o.Layers-1
	}
	return g
}
