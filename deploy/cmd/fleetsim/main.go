// Command fleetsim is the loopback fleet simulation of docs/FLEET.md: a
// RAG-like trace replayed against N = 1..4 batchd processes behind round
// robin and behind a picker that scores as llm-d's default profile
// (testing/fleet), each (N, picker) on fresh processes, rounds interleaved.
//
//	go run ./testing/cmd/fleetsim --model build/l110-q4_k_m.gguf --vocab 32000
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/batchd/batchd/deploy/fleet"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "fleetsim:", err)
		os.Exit(1)
	}
}

func run() error {
	model := flag.String("model", "", "model file every replica serves")
	bin := flag.String("bin", "", "batchd binary (default: built from this tree)")
	ns := flag.String("n", "1,2,3,4", "replica counts")
	rounds := flag.Int("rounds", 2, "rounds; each runs every (N, picker) in turn")
	threads := flag.Int("threads", 1, "CPU threads per replica")
	var to fleet.TraceOptions
	flag.IntVar(&to.Requests, "requests", 120, "requests in the trace")
	flag.Float64Var(&to.Rate, "rate", 2, "arrivals per second (Poisson)")
	flag.IntVar(&to.Docs, "docs", 8, "shared prefixes (documents)")
	flag.IntVar(&to.DocTokens, "doc-tokens", 256, "tokens per document")
	flag.IntVar(&to.SuffixTokens, "suffix-tokens", 32, "tokens of each request's own")
	flag.IntVar(&to.OutTokens, "out-tokens", 32, "tokens generated per request")
	flag.IntVar(&to.Vocab, "vocab", 32000, "the model's vocabulary size")
	seed := flag.Uint64("seed", 1, "trace seed")
	flag.Parse()
	to.Seed = *seed
	if *model == "" {
		return fmt.Errorf("--model is required")
	}
	if *bin == "" {
		dir, err := os.MkdirTemp("", "fleetsim")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		*bin = filepath.Join(dir, "batchd")
		build := exec.Command("go", "build", "-o", *bin, "./cmd/batchd")
		build.Dir = ".." // run from deploy/: the daemon's module is the repository's
		if out, err := build.CombinedOutput(); err != nil {
			return fmt.Errorf("go build: %v\n%s", err, out)
		}
	}
	var counts []int
	for _, f := range strings.Split(*ns, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return fmt.Errorf("--n %q", *ns)
		}
		counts = append(counts, n)
	}
	trace := fleet.Trace(to)
	fmt.Printf("trace: %d requests at %.1f/s, %d documents of %d tokens (Zipf), +%d own tokens, %d out; %d thread(s) per replica\n\n",
		to.Requests, to.Rate, to.Docs, to.DocTokens, to.SuffixTokens, to.OutTokens, *threads)
	fmt.Println("| round | N | picker | TTFT p50 | TTFT p95 | tok/s | prompt tokens cached | requests per replica | failed |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|")
	for r := 1; r <= *rounds; r++ {
		for _, n := range counts {
			for _, name := range []string{"round robin", "picker"} {
				res, err := once(n, name, *bin, *model, *threads, trace, uint64(r))
				if err != nil {
					return err
				}
				fmt.Printf("| %d | %d | %s | %.0f ms | %.0f ms | %.1f | %.0f%% | %v | %d |\n", r, n, name,
					res.TTFTp50.Seconds()*1000, res.TTFTp95.Seconds()*1000, res.Throughput, 100*res.CachedShare, res.PerReplica, res.Failed)
			}
		}
	}
	return nil
}

func once(n int, name, bin, model string, threads int, trace []fleet.Request, seed uint64) (fleet.Result, error) {
	dir, err := os.MkdirTemp("", "fleetsim-run")
	if err != nil {
		return fleet.Result{}, err
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	ins, err := fleet.Start(ctx, n, fleet.InstanceOptions{Bin: bin, Model: model, Dir: dir, Threads: threads})
	if err != nil {
		return fleet.Result{}, err
	}
	defer fleet.Stop(ins)
	var p fleet.Picker = &fleet.RoundRobin{N: n}
	if name == "picker" {
		if p, err = fleet.NewScorer(ins, seed); err != nil {
			return fleet.Result{}, err
		}
	}
	defer p.Close()
	return fleet.Replay(ctx, ins, p, trace), nil
}
