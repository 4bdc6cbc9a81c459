package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"sort"
	"time"
)

// traceReq is one request of a workload trace.
type traceReq struct {
	Arrival   time.Duration
	Prompt    []int
	MaxTokens int
	Priority  int
	Channel   string
}

// lengthClass is a band of prompt and output lengths.
type lengthClass struct {
	weight           int
	promptLo, promHi int
	outLo, outHi     int
}

// mix is short:medium:long = 7:2:1, chat-shaped: outputs at least as long
// as prompts and widely spread (ShareGPT-like), which is what separates
// request-level from iteration-level batching.
var mix = []lengthClass{
	{7, 16, 64, 16, 96},
	{2, 64, 160, 96, 256},
	{1, 160, 320, 256, 448},
}

// rateFn gives the arrival rate (per second) at a time into the trace.
type rateFn func(at float64) float64

// poissonTrace draws n requests with exponential inter-arrival gaps at rate
// per second and lengths from the 7:2:1 mix, clipped to fit ctx.
func poissonTrace(rng *rand.Rand, n int, rate float64, vocab, ctx int) []traceReq {
	return shapedTrace(rng, n, func(float64) float64 { return rate }, rate, mix, nil, vocab, ctx)
}

// burstyTrace is Poisson at rate with a 3x surge through the middle third
// of the expected duration.
func burstyTrace(rng *rand.Rand, n int, rate float64, vocab, ctx int) []traceReq {
	dur := float64(n) / rate / (1 + 2.0/3) // the surge brings more requests
	return shapedTrace(rng, n, func(at float64) float64 {
		if at > dur/3 && at < 2*dur/3 {
			return 3 * rate
		}
		return rate
	}, 3*rate, mix, nil, vocab, ctx)
}

// dayNightTrace swings the rate between 0.2x and 1.8x over one "day", the
// expected duration of the trace.
func dayNightTrace(rng *rand.Rand, n int, rate float64, vocab, ctx int) []traceReq {
	day := float64(n) / rate
	return shapedTrace(rng, n, func(at float64) float64 {
		return rate * (1 - 0.8*math.Cos(2*math.Pi*at/day))
	}, 1.8*rate, mix, nil, vocab, ctx)
}

// channelMix: realtime is short and chatty, bulk long; weights 4:3:3.
var channelMix = []struct {
	name  string
	class lengthClass
}{
	{"realtime", lengthClass{4, 8, 48, 16, 64}},
	{"standard", lengthClass{3, 32, 160, 48, 160}},
	{"bulk", lengthClass{3, 192, 384, 128, 256}},
}

// mixedTrace draws requests from the three channels (channelMix); only, if
// set, keeps one channel's requests (the "alone" baseline), at their times.
func mixedTrace(rng *rand.Rand, n int, rate float64, vocab, ctx int, only string) []traceReq {
	var classes []lengthClass
	var names []string
	for _, c := range channelMix {
		classes = append(classes, c.class)
		names = append(names, c.name)
	}
	all := shapedTrace(rng, n, func(float64) float64 { return rate }, rate, classes, names, vocab, ctx)
	if only == "" {
		return all
	}
	var out []traceReq
	for _, r := range all {
		if r.Channel == only {
			out = append(out, r)
		}
	}
	return out
}

// shapedTrace draws n requests: arrivals from a Poisson process whose rate
// follows rate, never above peak (thinning); lengths and channels from classes.
func shapedTrace(rng *rand.Rand, n int, rate rateFn, peak float64, classes []lengthClass, names []string, vocab, ctx int) []traceReq {
	total := 0
	for _, c := range classes {
		total += c.weight
	}
	var out []traceReq
	var at float64
	for len(out) < n {
		at += rng.ExpFloat64() / peak
		if rng.Float64() > rate(at)/peak {
			continue
		}
		pick := rng.IntN(total)
		c, name := classes[0], ""
		for i, m := range classes {
			if pick < m.weight {
				c = m
				if names != nil {
					name = names[i]
				}
				break
			}
			pick -= m.weight
		}
		pl := c.promptLo + rng.IntN(c.promHi-c.promptLo+1)
		ol := c.outLo + rng.IntN(c.outHi-c.outLo+1)
		pl, ol = clip(pl, ol, ctx)
		out = append(out, traceReq{Arrival: time.Duration(at * float64(time.Second)),
			Prompt: randomPrompt(rng, pl, vocab), MaxTokens: ol, Channel: name})
	}
	return out
}

func clip(prompt, out, ctx int) (int, int) {
	prompt = min(prompt, ctx/2)
	out = max(1, min(out, ctx-prompt))
	return prompt, out
}

// randomPrompt is BOS then random ids above the special tokens, so that
// prompts share no prefix beyond BOS (no accidental prefix-cache hits).
func randomPrompt(rng *rand.Rand, n, vocab int) []int {
	p := make([]int, n)
	p[0] = 1
	for i := 1; i < n; i++ {
		p[i] = 3 + rng.IntN(vocab-3)
	}
	return p
}

// traceLine is one JSONL line of a trace file. prompt_tokens is a count (the
// tokens are drawn at random) or a list of ids.
type traceLine struct {
	Arrival   float64         `json:"arrival_s"`
	Prompt    json.RawMessage `json:"prompt_tokens"`
	MaxTokens int             `json:"max_tokens"`
	Priority  int             `json:"priority"`
	Channel   string          `json:"channel"`
}

func loadTrace(path string, rng *rand.Rand, vocab, ctx int) ([]traceReq, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []traceReq
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for line := 1; sc.Scan(); line++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var tl traceLine
		if err := json.Unmarshal(sc.Bytes(), &tl); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		var prompt []int
		var count int
		if err := json.Unmarshal(tl.Prompt, &count); err == nil {
			pl, ol := clip(max(count, 1), tl.MaxTokens, ctx)
			prompt, tl.MaxTokens = randomPrompt(rng, pl, vocab), ol
		} else if err := json.Unmarshal(tl.Prompt, &prompt); err != nil || len(prompt) == 0 {
			return nil, fmt.Errorf("%s:%d: prompt_tokens must be a count or a non-empty list of ids", path, line)
		}
		out = append(out, traceReq{Arrival: time.Duration(tl.Arrival * float64(time.Second)), Prompt: prompt,
			MaxTokens: max(tl.MaxTokens, 1), Priority: tl.Priority, Channel: tl.Channel})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Arrival < out[j].Arrival })
	return out, sc.Err()
}
