package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batchd/batchd/config"
	"github.com/batchd/batchd/daemon"
	"github.com/batchd/batchd/daemon/daemontest"

	client "github.com/batchd/batchd/clients/go"
	"github.com/batchd/batchd/testing/synth"
	"github.com/batchd/batchd/testing/testmodels"
	"github.com/batchd/batchd/tune"
	"github.com/batchd/batchd/tune/remote"
)

// TestTuneCommand: a small matrix in process prints the table and the
// knee and writes the TOML fragment (which loads as a config) and both SVGs.
func TestTuneCommand(t *testing.T) {
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"tune", "--model", synth.TinyFile(t, 512), "--sizes", "2,4,8", "--windows", "0,10ms",
		"--concurrency", "2,6", "--requests", "12", "--rounds", "2", "--max-tokens", "4", "--out", out},
		&runEnv{stdout: &stdout, stderr: &stderr})
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	for _, want := range []string{"knee of throughput over batch size", "realtime (p95 TTFT", "[engine]", "max_num_seqs = "} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, stdout.String())
		}
	}
	if n := strings.Count(stderr.String(), "round "); n != 2*3*2*2 {
		t.Errorf("%d cells run, want 24 (2 rounds of 12)", n)
	}
	frag, err := os.ReadFile(filepath.Join(out, "tune.toml"))
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(t.TempDir(), "batchd.toml")
	if err := os.WriteFile(cfgPath, append([]byte(fmt.Sprintf("[model]\npath = %q\n", synth.TinyFile(t, 512))), frag...), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := config.LoadFile(cfgPath); err != nil {
		t.Errorf("the fragment does not load: %v\n%s", err, frag)
	}
	for _, f := range []string{"throughput.svg", "heatmap.svg"} {
		if b, err := os.ReadFile(filepath.Join(out, f)); err != nil || !bytes.HasPrefix(b, []byte("<svg")) {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// TestApplyRollsBackUnderLoad: under a running load, a deliberately worse
// setting (one sequence at a time) is applied through the config file,
// judged worse and rolled back; the config file and the daemon are as
// before, and every request of the load ended exactly once, none failed.
func TestApplyRollsBackUnderLoad(t *testing.T) {
	conf := "[engine]\nmax_num_seqs = 8\nadaptive = false\n"
	td := daemontest.Start(t, daemontest.Options{Config: conf, Flags: daemon.ServeFlags{Model: testmodels.Path(t, "stories260K.bin"),
		Tokenizer: testmodels.Path(t, "tok512.bin")}})
	c := td.Dial(t)
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var mu sync.Mutex
	submitted, done, failed := 0, 0, 0
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				mu.Lock()
				submitted++
				mu.Unlock()
				r, err := c.Generate(context.Background(), client.Request{Prompt: "Once upon a time", MaxTokens: 48, IgnoreEOS: true}, nil)
				mu.Lock()
				if err != nil || r.FinishReason != "length" {
					failed++
				} else {
					done++
				}
				mu.Unlock()
			}
		}()
	}
	target, err := remote.NewTarget(context.Background(), td.Dial(t), td.ConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	var log []string
	keep, why, err := tune.Rollout(context.Background(), target, tune.Setting{Size: 1}, 1500*time.Millisecond, tune.DefaultTolerance,
		func(s string) { log = append(log, s) })
	stop()
	wg.Wait()
	if err != nil || keep {
		t.Fatalf("a worse setting: kept %v (%s), %v\n%s", keep, why, err, strings.Join(log, "\n"))
	}
	t.Logf("rolled back: %s", why)
	if b, _ := os.ReadFile(td.ConfigPath); string(b) != conf {
		t.Errorf("the config file after the rollback:\n%s", b)
	}
	if s, err := td.Dial(t).Stats(context.Background()); err != nil || s.Config.MaxNumSeqs != 8 {
		t.Errorf("the daemon after the rollback: max_num_seqs %d, %v", s.Config.MaxNumSeqs, err)
	}
	if failed != 0 || done != submitted {
		t.Errorf("load: %d submitted, %d done, %d failed", submitted, done, failed)
	}
}

func TestSetEngineKeys(t *testing.T) {
	in := "# top\n[server]\nsocket = \"x\"\n[engine]\n# keep me\nmax_num_seqs = 4 # old\npolicy = \"fcfs\"\n[routing]\n"
	got := remote.SetEngineKeys(in, map[string]string{"max_num_seqs": "16", "mode": `"dynamic"`})
	want := "# top\n[server]\nsocket = \"x\"\n[engine]\nmode = \"dynamic\"\n# keep me\nmax_num_seqs = 16\npolicy = \"fcfs\"\n[routing]\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if got := remote.SetEngineKeys("log_level = \"info\"\n", map[string]string{"max_num_seqs": "2"}); !strings.HasSuffix(got, "[engine]\nmax_num_seqs = 2") {
		t.Errorf("no [engine]: %q", got)
	}
}
