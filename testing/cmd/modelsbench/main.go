// Command modelsbench measures what serving several models costs, on a
// daemon it starts in process with two model files:
//
//	go run ./testing/cmd/modelsbench --a build/l110-q4_k_m.gguf --b build/l110-q8_0.gguf --rounds 3
//
// cold: time from a request for an unloaded model to its first token (its
// load plus the prefill), beside a warm request's first token (prefill
// alone), the model unloaded between rounds. busy: --streams streams of
// --tokens greedy tokens on A alone, on B alone, then on both at once:
// tokens/s of each and together, and each model's share, so that neither
// starving shows. prefill: A's inter-token gaps while B prefills a long
// prompt, beside A's gaps alone (the compute gate alternates their steps).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	client "github.com/batchd/batchd/clients/go"
	"github.com/batchd/batchd/daemon"
	"github.com/batchd/batchd/ipc/wire"
)

func main() {
	a := flag.String("a", "build/l110-q4_k_m.gguf", "model A (the default model)")
	b := flag.String("b", "build/l110-q8_0.gguf", "model B (loaded on demand)")
	tokenizer := flag.String("tokenizer", "", "llama2.c tokenizer, for .bin checkpoints")
	rounds := flag.Int("rounds", 3, "rounds of each measurement")
	streams := flag.Int("streams", 8, "concurrent streams per model (busy)")
	tokens := flag.Int("tokens", 64, "tokens per stream")
	longPrompt := flag.Int("long-prompt", 800, "words of B's long prompt (prefill)")
	flag.Parse()
	if err := run(*a, *b, *tokenizer, *rounds, *streams, *tokens, *longPrompt); err != nil {
		fmt.Fprintln(os.Stderr, "modelsbench:", err)
		os.Exit(1)
	}
}

func run(a, b, tokenizer string, rounds, streams, tokens, longPrompt int) error {
	dir, err := os.MkdirTemp("", "modelsbench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	sock, cfg := filepath.Join(dir, "b.sock"), filepath.Join(dir, "batchd.toml")
	bAbs, _ := filepath.Abs(b)
	conf := fmt.Sprintf("[models.b]\npath = %q\nkeep_alive = -1\n", bAbs)
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	args := []string{"--model", a, "--config", cfg, "--socket", sock, "--log-level", "error"}
	if tokenizer != "" {
		args = append(args, "--tokenizer", tokenizer)
	}
	done := make(chan error, 1)
	go func() { done <- daemon.Serve(ctx, args, os.Stderr) }()
	c, err := waitReady(ctx, sock, done)
	if err != nil {
		return err
	}
	defer c.Close()
	aName := strings.TrimSuffix(filepath.Base(a), filepath.Ext(a))
	fmt.Printf("A = %s (default), B = %s; %d rounds\n\n", a, b, rounds)
	if err := cold(ctx, c, rounds); err != nil {
		return err
	}
	if err := busy(ctx, c, aName, rounds, streams, tokens); err != nil {
		return err
	}
	return prefill(ctx, c, aName, rounds, longPrompt)
}

func waitReady(ctx context.Context, sock string, done chan error) (*client.Client, error) {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		select {
		case err := <-done:
			return nil, fmt.Errorf("daemon exited: %v", err)
		default:
		}
		if c, err := client.Dial(ctx, sock); err == nil {
			if h, err := c.Health(ctx); err == nil && h.State == "ready" {
				return c, nil
			}
			c.Close()
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil, fmt.Errorf("daemon not ready after 2 minutes")
}

// firstToken streams one request and returns its time to first token.
func firstToken(ctx context.Context, c *client.Client, model, prompt string) (time.Duration, error) {
	start := time.Now()
	var ttft time.Duration
	_, err := c.Generate(ctx, client.Request{Model: model, Prompt: prompt, MaxTokens: 4, IgnoreEOS: true}, func(d client.Delta) error {
		if ttft == 0 && len(d.Tokens) > 0 {
			ttft = time.Since(start)
		}
		return nil
	})
	return ttft, err
}

func cold(ctx context.Context, c *client.Client, rounds int) error {
	fmt.Println("cold start of B: first token after a request for the unloaded model, and warm")
	fmt.Println("| round | cold TTFT (load + prefill) | warm TTFT (prefill) |")
	fmt.Println("|---|---|---|")
	for r := 1; r <= rounds; r++ {
		if err := c.Unload(ctx, "b"); err != nil {
			return err
		}
		for i := 0; ; i++ { // unloading finishes when its engine has stopped
			list, err := c.Running(ctx)
			if err != nil {
				return err
			}
			if !slices.ContainsFunc(list, func(m wire.ModelEntry) bool { return m.Name == "b" }) || i > 200 {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		coldT, err := firstToken(ctx, c, "b", "Once upon a time there was a little")
		if err != nil {
			return err
		}
		warmT, err := firstToken(ctx, c, "b", "Once upon a time there was a little")
		if err != nil {
			return err
		}
		fmt.Printf("| %d | %.0f ms | %.1f ms |\n", r, ms(coldT), ms(warmT))
	}
	fmt.Println()
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// load runs n streams of tokens each on every model at once; tokens/s per
// model over the phase's wall time.
func load(ctx context.Context, c *client.Client, models []string, n, tokens int) (map[string]float64, error) {
	var mu sync.Mutex
	got := map[string]int{}
	var wg sync.WaitGroup
	errs := make(chan error, n*len(models))
	start := time.Now()
	for _, m := range models {
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := c.Generate(ctx, client.Request{Model: m, Prompt: fmt.Sprintf("Story %d of %s:", i, m),
					MaxTokens: tokens, IgnoreEOS: true}, nil)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				got[m] += len(res.Tokens)
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return nil, err
	}
	wall := time.Since(start).Seconds()
	out := map[string]float64{}
	for m, t := range got {
		out[m] = float64(t) / wall
	}
	return out, nil
}

func busy(ctx context.Context, c *client.Client, a string, rounds, n, tokens int) error {
	fmt.Printf("busy: %d streams x %d tokens per model; tokens/s (each model's share of its alone figure)\n", n, tokens)
	fmt.Println("| round | A alone | B alone | A together | B together | together total | A share | B share |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	for r := 1; r <= rounds; r++ {
		alone, err := load(ctx, c, []string{a}, n, tokens)
		if err != nil {
			return err
		}
		aloneB, err := load(ctx, c, []string{"b"}, n, tokens)
		if err != nil {
			return err
		}
		both, err := load(ctx, c, []string{a, "b"}, n, tokens)
		if err != nil {
			return err
		}
		fmt.Printf("| %d | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f%% | %.0f%% |\n", r, alone[a], aloneB["b"], both[a], both["b"],
			both[a]+both["b"], 100*both[a]/alone[a], 100*both["b"]/aloneB["b"])
	}
	fmt.Println()
	return nil
}

// gaps streams one request on model and returns its inter-token gaps.
func gaps(ctx context.Context, c *client.Client, model string, tokens int) ([]time.Duration, error) {
	var out []time.Duration
	last := time.Time{}
	_, err := c.Generate(ctx, client.Request{Model: model, Prompt: "Once upon a time", MaxTokens: tokens, IgnoreEOS: true},
		func(d client.Delta) error {
			now := time.Now()
			if !last.IsZero() {
				out = append(out, now.Sub(last))
			}
			last = now
			return nil
		})
	return out, err
}

func pct(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

// rate is tokens per second over a stream's gaps.
func rate(gaps []time.Duration) float64 {
	var sum time.Duration
	for _, g := range gaps {
		sum += g
	}
	if sum == 0 {
		return 0
	}
	return float64(len(gaps)) / sum.Seconds()
}

func prefill(ctx context.Context, c *client.Client, a string, rounds, words int) error {

	fmt.Printf("prefill: A's inter-token gaps (one stream) alone, and while B prefills a %d-word prompt\n", words)
	fmt.Println("| round | A alone: tok/s | max gap | A beside B's prefill: tok/s | max gap | B's TTFT |")
	fmt.Println("|---|---|---|---|---|---|")
	for r := 1; r <= rounds; r++ {
		alone, err := gaps(ctx, c, a, 48)
		if err != nil {
			return err
		}
		var wg sync.WaitGroup
		var bTTFT time.Duration
		var bErr error
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(30 * time.Millisecond) // A is decoding when B's prompt arrives
			long := fmt.Sprintf("Round %d. ", r) + strings.Repeat(fmt.Sprintf("the little dog %d ran to the park and ", r), words/8+1)
			bTTFT, bErr = firstToken(ctx, c, "b", long) // a new prompt each round: no prefix cache
		}()
		beside, err := gaps(ctx, c, a, 48)
		wg.Wait()
		if err != nil {
			return err
		}
		if bErr != nil {
			return bErr
		}
		fmt.Printf("| %d | %.0f | %.1f ms | %.0f | %.1f ms | %.0f ms |\n", r, rate(alone), ms(pct(alone, 1)),
			rate(beside), ms(pct(beside, 1)), ms(bTTFT))
	}
	return nil
}
