// Command grammarbench measures what structured output costs: decode
// tokens/s without and with a JSON Schema, at batch 1 (one schema) and at
// batch 32 (every sequence under a different schema), batchd and
// llama.cpp v0.5.0 (batch 1, testing/llamacpp) on the same file in the
// same run, rounds interleaved;
// and the cost of one step's token mask (median and p99, built fresh and
// from the cache), by replaying the constrained outputs.
//
//	go run ./testing/cmd/grammarbench --model ../shared/models/arch/tiny-qwen2.gguf \
//	    --cases ../shared/models/grammar/grammar-cases.json --llama
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/batchd/batchd/engine"
	"github.com/batchd/batchd/grammar"
	"github.com/batchd/batchd/serve"
	"github.com/batchd/batchd/testing/cpuprof"
	"github.com/batchd/batchd/testing/llamacpp"
	"github.com/batchd/batchd/tokenizer"
)

type refCase struct {
	ID     string          `json:"id"`
	Schema json.RawMessage `json:"json_schema"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "grammarbench:", err)
		os.Exit(1)
	}
}

func run() error {
	modelPath := flag.String("model", "../shared/models/arch/tiny-qwen2.gguf", "model file (the Qwen vocabulary: 151,936 tokens)")
	casesPath := flag.String("cases", "../shared/models/grammar/grammar-cases.json", "llama.cpp's grammar references: their schemas")
	llama := flag.Bool("llama", false, "measure llama.cpp v0.5.0 (testing/llamacpp) beside batchd")
	rounds := flag.Int("rounds", 3, "interleaved rounds")
	tokens := flag.Int("tokens", 30, "tokens per request")
	profile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.Parse()
	stop, err := cpuprof.Start(*profile)
	if err != nil {
		return err
	}
	defer stop()
	schemas, err := readSchemas(*casesPath)
	if err != nil {
		return err
	}
	rt, err := serve.Open(serve.LoadSpec{Model: *modelPath, KVCacheType: "f32", QuantDot: "float"},
		slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	defer rt.Close()
	prompt := rt.Model.Tokenizer.Encode("Give me a JSON object describing a person:", true)
	b := &bench{cache: grammar.NewCache(64), e: rt.Engine, tok: rt.Model.Tokenizer, prompt: prompt, n: *tokens}
	var srv *llamaRef
	if *llama {
		if srv, err = startLlama(*modelPath); err != nil {
			return err
		}
		defer srv.stop()
	}
	typical := schemas[0] // s01: required and optional properties, maxLength
	var rows []row
	for r := range *rounds {
		// Each constrained run first; the free run then makes each request
		// as many tokens as its constrained twin did, so that both keep the
		// same batch, step by step, and the ratio is the grammar's cost.
		cons1, lens1, err := b.rate(1, func(int) []byte { return typical }, nil)
		if err != nil {
			return err
		}
		free1, _, err := b.rate(1, nil, lens1)
		if err != nil {
			return err
		}
		cons32, lens32, err := b.rate(32, func(i int) []byte { return variant(schemas, i) }, nil)
		if err != nil {
			return err
		}
		free32, _, err := b.rate(32, nil, lens32)
		if err != nil {
			return err
		}
		x := row{round: r + 1, free1: free1, cons1: cons1, free32: free32, cons32: cons32}
		if srv != nil {
			if x.llamaFree, err = srv.rate(*tokens, nil); err != nil {
				return err
			}
			if x.llamaCons, err = srv.rate(*tokens, typical); err != nil {
				return err
			}
		}
		rows = append(rows, x)
	}
	printRows(rows, srv != nil)
	return b.maskCost(typical, schemas)
}

type row struct {
	round                        int
	free1, cons1, free32, cons32 float64
	llamaFree, llamaCons         float64
}

func printRows(rows []row, llama bool) {
	fmt.Println("| round | batchd b1 free | b1 schema | b1 cost | batchd b32 free | b32 32 schemas | b32 cost | llama.cpp free | llama.cpp schema | llama.cpp cost |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|")
	for _, x := range rows {
		lc := "-"
		if llama {
			lc = fmt.Sprintf("%.0f | %.0f | %.0f%%", x.llamaFree, x.llamaCons, 100*(1-x.llamaCons/x.llamaFree))
		}
		fmt.Printf("| %d | %.0f | %.0f | %.1f%% | %.0f | %.0f | %.1f%% | %s |\n", x.round, x.free1, x.cons1, 100*(1-x.cons1/x.free1),
			x.free32, x.cons32, 100*(1-x.cons32/x.free32), lc)
	}
}

func readSchemas(path string) ([][]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var cs []refCase
	if err := json.Unmarshal(b, &cs); err != nil {
		return nil, err
	}
	var out [][]byte
	for _, c := range cs {
		if c.Schema != nil && c.ID != "s08-number-min-max-not-enforced" {
			out = append(out, c.Schema)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no schemas", path)
	}
	return out, nil
}

// variant is schema i of the references, made distinct per sequence (a
// grammar of its own) by another alternative: a constant with its index.
func variant(schemas [][]byte, i int) []byte {
	var s map[string]any
	_ = json.Unmarshal(schemas[i%len(schemas)], &s)
	w := map[string]any{"anyOf": []any{s, map[string]any{"const": fmt.Sprintf("variant %d", i)}}}
	if defs, ok := s["$defs"]; ok { // references resolve from the root
		w["$defs"] = defs
	}
	b, _ := json.Marshal(w)
	return b
}

type bench struct {
	cache  *grammar.Cache // as the daemon keeps one: a schema compiles once
	e      *engine.Engine
	tok    *tokenizer.Tokenizer
	prompt []int
	n      int
}

// rate runs batch requests at once (schema(i) constrains request i, nil
// none) and returns generated tokens per second of wall time and each
// request's token count. Unconstrained requests run to lens[i] tokens (n
// when lens is nil); constrained ones until their grammar ends or n.
func (b *bench) rate(batch int, schema func(int) []byte, lens []int) (float64, []int, error) {
	reqs := make([]engine.Request, batch)
	for i := range reqs {
		reqs[i] = engine.Request{Tokens: b.prompt, MaxTokens: b.n, IgnoreEOS: schema == nil}
		if lens != nil {
			reqs[i].MaxTokens = max(lens[i], 1)
		}
		if schema != nil {
			g, err := b.cache.Get(context.Background(), grammar.Spec{Schema: schema(i), Strict: true})
			if err != nil {
				return 0, nil, err
			}
			reqs[i].Grammar = g
		}
	}
	start := time.Now()
	var wg sync.WaitGroup
	var mu sync.Mutex
	total := 0
	counts := make([]int, batch)
	var firstErr error
	for i, r := range reqs {
		st, err := b.e.Submit(context.Background(), r)
		if err != nil {
			return 0, nil, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, toks, done, err := st.Wait(context.Background())
			mu.Lock()
			defer mu.Unlock()
			total += len(toks)
			counts[i] = len(toks)
			if err == nil && done.Err != nil {
				err = done.Err
			}
			if err != nil && firstErr == nil {
				firstErr = err
			}
		}()
	}
	wg.Wait()
	return float64(total) / time.Since(start).Seconds(), counts, firstErr
}

// maskCost replays constrained outputs and times each step's mask: built
// on a fresh grammar (no state seen before), then again from the cache.
func (b *bench) maskCost(typical []byte, schemas [][]byte) error {
	tok := b.tok
	texts := make([][]byte, tok.VocabSize())
	for id := range texts {
		texts[id] = tok.TokenBytes(-1, id)
	}
	v := grammar.NewVocab(texts)
	var fresh, cached []time.Duration
	for _, s := range append([][]byte{typical}, schemas...) {
		g, err := grammar.FromSchema(context.Background(), s, grammar.SchemaOptions{Strict: true})
		if err != nil {
			return err
		}
		st, err := b.e.Submit(context.Background(), engine.Request{Tokens: b.prompt, MaxTokens: b.n, Grammar: g})
		if err != nil {
			return err
		}
		_, toks, _, err := st.Wait(context.Background())
		if err != nil {
			return err
		}
		// A grammar of its own: the engine's run cached masks for its
		// vocabulary, not for this one.
		g2, err := grammar.FromSchema(context.Background(), s, grammar.SchemaOptions{Strict: true})
		if err != nil {
			return err
		}
		for _, out := range []*[]time.Duration{&fresh, &cached} {
			m := g2.NewMatcher()
			for _, id := range toks {
				t0 := time.Now()
				if _, err := v.Allowed(m); err != nil {
					return err
				}
				*out = append(*out, time.Since(t0))
				if err := m.Accept(texts[id]); err != nil {
					return err
				}
			}
		}
	}
	for name, d := range map[string][]time.Duration{"fresh": fresh, "cached": cached} {
		slices.Sort(d)
		fmt.Printf("mask %s: %d steps, median %.1f us, p99 %.1f us, max %.1f us\n", name, len(d),
			us(d[len(d)/2]), us(d[len(d)*99/100]), us(d[len(d)-1]))
	}
	return nil
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// llamaRef is llama.cpp v0.5.0 (testing/llamacpp) on the same file.
type llamaRef struct {
	ref    *llamacpp.Ref
	prompt []int
}

func startLlama(model string) (*llamaRef, error) {
	dir, err := llamacpp.CacheDir()
	if err != nil {
		return nil, err
	}
	in, err := llamacpp.Ensure(context.Background(), dir)
	if err != nil {
		return nil, err
	}
	ref, err := llamacpp.Start(in, llamacpp.Options{})
	if err != nil {
		return nil, err
	}
	if _, err := ref.LoadModel(model, false); err != nil {
		return nil, err
	}
	if err := ref.Context(llamacpp.ContextOptions{TypeK: llamacpp.F32, TypeV: llamacpp.F32}); err != nil {
		return nil, err
	}
	prompt, err := ref.Tokenize("Give me a JSON object describing a person:", true, true)
	if err != nil {
		return nil, err
	}
	fmt.Printf("llama.cpp %s (%s), CPU build: %s\n", llamacpp.Release, llamacpp.Package, strings.TrimSpace(ref.System))
	return &llamaRef{ref: ref, prompt: prompt}, nil
}

func (s *llamaRef) stop() { _ = s.ref.Close() }

// rate is llama.cpp's decode speed for one request, greedy, with a schema
// (through its own json_schema_to_grammar and grammar sampler) or none.
func (s *llamaRef) rate(n int, schema []byte) (float64, error) {
	gbnf := ""
	if schema != nil {
		var err error
		if gbnf, err = s.ref.SchemaGBNF(schema); err != nil {
			return 0, err
		}
	}
	toks, secs, err := s.ref.TimedConstrained(gbnf, s.prompt, n)
	if err != nil || secs <= 0 {
		return 0, err
	}
	return float64(len(toks)) / secs, nil
}
