package fleet

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/batchd/batchd/testing/synth"
)

// buildBatchd builds the daemon for the test's processes.
func buildBatchd(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "batchd")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/batchd")
	cmd.Dir = "../.."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestFleetReplay is the loopback fleet simulation in CI's reduced form:
// the same RAG-like trace against two fresh replicas behind round robin and
// behind the scoring picker. Every request is served by both; the picker,
// which learns each replica's prefixes from its KV events (every message
// decoded by llm-d's adapter) and the prompt's ids from its render
// endpoint, serves more of the prompts from a prefix cache than round
// robin, which computes each document once per replica.
func TestFleetReplay(t *testing.T) {
	if testing.Short() {
		t.Skip("starts batchd processes")
	}
	bin := buildBatchd(t)
	model := synth.TinyFile(t, 512)
	trace := Trace(TraceOptions{Requests: 64, Docs: 8, DocTokens: 64, SuffixTokens: 8, OutTokens: 8, Vocab: 256, Rate: 40, Seed: 3})
	run := func(name string, picker func([]*Instance) (Picker, error)) Result {
		ins, err := Start(context.Background(), 2, InstanceOptions{Bin: bin, Model: model, Dir: t.TempDir(), Threads: 1})
		if err != nil {
			t.Fatal(err)
		}
		defer Stop(ins)
		p, err := picker(ins)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		r := Replay(context.Background(), ins, p, trace)
		t.Logf("%-11s served %v, failed %d, TTFT p50 %v p95 %v, %.0f tok/s, cached %.0f%% of prompt tokens",
			name, r.PerReplica, r.Failed, r.TTFTp50, r.TTFTp95, r.Throughput, 100*r.CachedShare)
		if r.Failed != 0 {
			t.Errorf("%s: %d of %d requests failed", name, r.Failed, r.Requests)
		}
		if sc, ok := p.(*Scorer); ok && sc.Undecoded() != 0 {
			t.Errorf("llm-d's adapter refused %d KV-event messages", sc.Undecoded())
		}
		return r
	}
	rr := run("round robin", func(ins []*Instance) (Picker, error) { return &RoundRobin{N: len(ins)}, nil })
	sc := run("picker", func(ins []*Instance) (Picker, error) { return NewScorer(ins, 1) })
	if sc.CachedShare <= rr.CachedShare {
		t.Errorf("the picker served %.2f of prompt tokens from cache, round robin %.2f: it should keep documents together",
			sc.CachedShare, rr.CachedShare)
	}
}
