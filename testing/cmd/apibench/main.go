// Command apibench puts the same streaming load on batchd's msgpack socket,
// its HTTP API and llama.cpp's server, in turn, and prints throughput and
// time to first token for each:
//
//	apibench --target msgpack=unix:/tmp/b.sock --target http=unix:/tmp/h.sock \
//	    --target llama=http://127.0.0.1:18081 --clients 32 --requests 64 --rounds 3
//
// Every request streams a distinct prompt (no shared prefix, so no target
// gains from a prefix cache) of about --prompt-words words and generates
// exactly --max-tokens tokens greedily (ignore_eos). HTTP targets get
// POST /v1/completions with stream true; a target named msgpack gets the
// Go client. Rounds interleave the targets (A B C A B C ...).
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	client "github.com/batchd/batchd/clients/go"
)

type target struct{ name, addr string }

type targets []target

func (t *targets) String() string { return fmt.Sprint(*t) }
func (t *targets) Set(v string) error {
	name, addr, ok := strings.Cut(v, "=")
	if !ok {
		return fmt.Errorf("want NAME=ADDRESS, got %q", v)
	}
	*t = append(*t, target{name, addr})
	return nil
}

type result struct {
	tokens int
	ttft   time.Duration
	err    error
}

func main() {
	var ts targets
	flag.Var(&ts, "target", "NAME=unix:PATH (msgpack socket when NAME is msgpack, else HTTP over a Unix socket) or NAME=http://HOST:PORT; repeatable")
	clients := flag.Int("clients", 32, "concurrent streaming clients")
	requests := flag.Int("requests", 64, "requests per round")
	words := flag.Int("prompt-words", 48, "words per prompt (about 64 tokens with the Llama 2 tokenizer)")
	maxTokens := flag.Int("max-tokens", 64, "tokens generated per request")
	rounds := flag.Int("rounds", 3, "rounds per target, interleaved")
	flag.Parse()
	if len(ts) == 0 {
		fmt.Fprintln(os.Stderr, "apibench: give at least one --target")
		os.Exit(2)
	}
	for r := range *rounds {
		for ti, t := range ts {
			start := time.Now()
			// Each round and target has prompts of its own: none is in a cache.
			res := load(t, *clients, *requests, *words, *maxTokens, r*len(ts)+ti)
			wall := time.Since(start)
			report(t.name, r, wall, res)
		}
	}
}

func report(name string, round int, wall time.Duration, res []result) {
	var toks, errs int
	var ttfts []time.Duration
	for _, r := range res {
		if r.err != nil {
			errs++
			if errs == 1 {
				fmt.Fprintf(os.Stderr, "%s: %v\n", name, r.err)
			}
			continue
		}
		toks += r.tokens
		ttfts = append(ttfts, r.ttft)
	}
	slices.Sort(ttfts)
	pct := func(p float64) float64 {
		if len(ttfts) == 0 {
			return 0
		}
		return ttfts[int(p*float64(len(ttfts)-1))].Seconds()
	}
	fmt.Printf("%-8s round %d: %7.1f tok/s  (%d tokens in %.2f s)  TTFT P50 %.2f s  P95 %.2f s  errors %d\n",
		name, round, float64(toks)/wall.Seconds(), toks, wall.Seconds(), pct(0.5), pct(0.95), errs)
}

// prompt is request i's text: its own opening, so prompts share no prefix.
// round numbers each target's round apart.
func prompt(i, round, words int) string {
	vocab := strings.Fields("the cat sat on a warm mat while rain fell over quiet hills and old roads " +
		"a small boat drifted past green fields under grey clouds with birds singing softly")
	var b strings.Builder
	fmt.Fprintf(&b, "Story %d of round %d:", i, round)
	for w := range words {
		b.WriteString(" " + vocab[(i*7+w*3+round)%len(vocab)])
	}
	return b.String()
}

func load(t target, clients, requests, words, maxTokens, round int) []result {
	res := make([]result, requests)
	next := make(chan int)
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			var mc *client.Client
			var hc *http.Client
			base := t.addr
			if path, ok := strings.CutPrefix(t.addr, "unix:"); ok {
				if t.name == "msgpack" {
					c, err := client.Dial(context.Background(), path)
					if err != nil {
						for i := range next {
							res[i].err = err
						}
						return
					}
					defer c.Close()
					mc = c
				} else {
					hc = &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
						return (&net.Dialer{}).DialContext(ctx, "unix", path)
					}}}
					base = "http://batchd"
				}
			} else {
				// No keep-alive: llama-server closes idle connections, and a
				// POST on one it just closed fails with EOF.
				hc = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
			}
			for i := range next {
				p := prompt(i, round, words)
				if mc != nil {
					res[i] = viaMsgpack(mc, p, maxTokens)
				} else {
					res[i] = viaHTTP(hc, base, p, maxTokens)
				}
			}
		})
	}
	for i := range requests {
		next <- i
	}
	close(next)
	wg.Wait()
	return res
}

func viaMsgpack(c *client.Client, p string, n int) result {
	start := time.Now()
	var r result
	res, err := c.Generate(context.Background(), client.Request{Prompt: p, MaxTokens: n, IgnoreEOS: true}, func(d client.Delta) error {
		if r.ttft == 0 {
			r.ttft = time.Since(start)
		}
		return nil
	})
	if err != nil {
		return result{err: err}
	}
	r.tokens = res.Usage.CompletionTokens
	return r
}

func viaHTTP(hc *http.Client, base, p string, n int) result {
	body, _ := json.Marshal(map[string]any{"prompt": p, "max_tokens": n, "temperature": 0, "stream": true,
		"ignore_eos": true, "stream_options": map[string]bool{"include_usage": true}, "cache_prompt": false})
	start := time.Now()
	resp, err := hc.Post(base+"/v1/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		return result{err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return result{err: fmt.Errorf("status %s", resp.Status)}
	}
	var r result
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	chunks := 0
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var ev struct {
			Choices []struct{ Text string } `json:"choices"`
			Usage   *struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		if json.Unmarshal([]byte(data), &ev) != nil {
			continue
		}
		if len(ev.Choices) > 0 && ev.Choices[0].Text != "" {
			chunks++
			if r.ttft == 0 {
				r.ttft = time.Since(start)
			}
		}
		if ev.Usage != nil && ev.Usage.CompletionTokens > 0 {
			r.tokens = ev.Usage.CompletionTokens
		}
	}
	if r.tokens == 0 {
		r.tokens = chunks // a server that sends no usage: one chunk per token
	}
	return r
}
