package fleet

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// Request is one trace entry.
type Request struct {
	At        time.Duration // arrival, from the replay's start
	Prompt    []int
	MaxTokens int
}

// TraceOptions shapes a RAG-like trace: Docs shared prefixes (a system
// prompt and a document) of DocTokens each, picked by a Zipf-like law, each
// request adding SuffixTokens of its own and asking OutTokens, arriving as
// a Poisson process of Rate per second.
type TraceOptions struct {
	Requests, Docs, DocTokens, SuffixTokens, OutTokens, Vocab int
	Rate                                                      float64
	Seed                                                      uint64
}

// Trace draws a trace.
func Trace(o TraceOptions) []Request {
	rng := rand.New(rand.NewPCG(o.Seed, 7))
	ids := func(n int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = 3 + rng.IntN(o.Vocab-3) // past the control ids of a llama2.c vocabulary
		}
		return out
	}
	docs := make([][]int, o.Docs)
	weights := make([]float64, o.Docs)
	total := 0.0
	for i := range docs {
		docs[i] = ids(o.DocTokens)
		weights[i] = 1 / float64(i+1)
		total += weights[i]
	}
	var out []Request
	at := time.Duration(0)
	for range o.Requests {
		at += time.Duration(rng.ExpFloat64() / o.Rate * float64(time.Second))
		x, d := rng.Float64()*total, 0
		for d < o.Docs-1 && x > weights[d] {
			x -= weights[d]
			d++
		}
		out = append(out, Request{At: at, Prompt: append(slices.Clone(docs[d]), ids(o.SuffixTokens)...), MaxTokens: o.OutTokens})
	}
	return out
}

// Result is one replay's figures.
type Result struct {
	Requests, Failed        int
	TTFTp50, TTFTp95        time.Duration
	Throughput              float64 // completion tokens per second of wall time
	CachedShare             float64 // prompt tokens served from a prefix cache
	Wall                    time.Duration
	PerReplica              []int // requests each replica served
	promptTokens, cachedTok int
}

type outcome struct {
	ttft           time.Duration
	tokens, cached int
	prompt         int
	err            error
}

// Replay sends trace to the replicas p picks, each request as a streamed
// completion, and waits for every answer.
func Replay(ctx context.Context, ins []*Instance, p Picker, trace []Request) Result {
	res := Result{Requests: len(trace), PerReplica: make([]int, len(ins))}
	outs := make([]outcome, len(trace))
	var wg sync.WaitGroup
	start := time.Now()
	for i, r := range trace {
		if d := time.Until(start.Add(r.At)); d > 0 {
			time.Sleep(d)
		}
		k := p.Pick(ctx, r.Prompt)
		res.PerReplica[k]++
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i] = send(ctx, ins[k].HTTP, r)
		}()
	}
	wg.Wait()
	res.Wall = time.Since(start)
	var ttfts []time.Duration
	tokens := 0
	for _, o := range outs {
		if o.err != nil {
			res.Failed++
			continue
		}
		ttfts = append(ttfts, o.ttft)
		tokens += o.tokens
		res.promptTokens += o.prompt
		res.cachedTok += o.cached
	}
	slices.Sort(ttfts)
	if len(ttfts) > 0 {
		res.TTFTp50 = ttfts[len(ttfts)/2]
		res.TTFTp95 = ttfts[int(math.Ceil(0.95*float64(len(ttfts))))-1]
	}
	res.Throughput = float64(tokens) / res.Wall.Seconds()
	if res.promptTokens > 0 {
		res.CachedShare = float64(res.cachedTok) / float64(res.promptTokens)
	}
	return res
}

func send(ctx context.Context, hc *http.Client, r Request) outcome {
	body, _ := json.Marshal(map[string]any{"prompt": r.Prompt, "max_tokens": r.MaxTokens, "ignore_eos": true,
		"temperature": 0, "stream": true, "stream_options": map[string]bool{"include_usage": true}})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://batchd/v1/completions", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	t0 := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		return outcome{err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return outcome{err: fmt.Errorf("status %d", resp.StatusCode)}
	}
	var o outcome
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || line == "[DONE]" {
			continue
		}
		var chunk struct {
			Choices []json.RawMessage `json:"choices"`
			Usage   *struct {
				PromptTokens     int `json:"prompt_tokens"`
				CompletionTokens int `json:"completion_tokens"`
				Details          *struct {
					Cached int `json:"cached_tokens"`
				} `json:"prompt_tokens_details"`
			} `json:"usage"`
		}
		if json.Unmarshal([]byte(line), &chunk) != nil {
			continue
		}
		if o.ttft == 0 && len(chunk.Choices) > 0 {
			o.ttft = time.Since(t0)
		}
		if u := chunk.Usage; u != nil {
			o.tokens, o.prompt = u.CompletionTokens, u.PromptTokens
			if u.Details != nil {
				o.cached = u.Details.Cached
			}
		}
	}
	if o.tokens == 0 {
		o.err = fmt.Errorf("no usage in the stream (%v)", sc.Err())
	}
	return o
}
