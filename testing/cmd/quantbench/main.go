// Command quantbench puts batchd and llama.cpp side by side on the same
// quantized files: for each format it quantizes an F32 model with
// llama.cpp's llama-quantize, then alternates llama.cpp's measures
// (llama-bench pp512 and tg128, llama-batched-bench S_TG at 32 sequences)
// with batchd's kernelbench on the same file, and prints each figure and the
// batchd/llama.cpp ratio, round by round and as medians:
//
//	go run ./testing/cmd/quantbench --f32 build/l110-f32.gguf \
//	    --llama ../shared/tools/llama.cpp/bin --formats Q4_K_M,Q4_0,Q5_K_M,Q6_K,Q8_0 --rounds 3
//
// The F32 file comes from modelgen (make build/l110-f32.gguf is the L110
// shape ../shared/BENCHMARKS.md measures).
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/batchd/batchd/engine/backend"
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
}

func run() error {
	f32 := flag.String("f32", "build/l110-f32.gguf", "F32 model to quantize")
	llama := flag.String("llama", "../shared/tools/llama.cpp/bin", "llama.cpp's bin directory")
	formats := flag.String("formats", "Q4_K_M,Q4_0,Q5_K_M,Q6_K,Q8_0", "llama-quantize types")
	rounds := flag.Int("rounds", 3, "interleaved rounds per format")
	threads := flag.Int("threads", 2, "threads for both engines")
	out := flag.String("dir", "build/quantbench", "where the quantized files go")
	quantDots := flag.String("quant-dot", backend.DefaultQuantDot, "batchd's quantized matmul modes to measure, comma-separated: auto (the daemon's default), float, int8")
	flag.Parse()
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	kb := filepath.Join(*out, "kernelbench")
	if err := sh("go", "build", "-o", kb, "./testing/cmd/kernelbench"); err != nil {
		return err
	}
	modes := strings.Split(*quantDots, ",")
	fmt.Printf("| format | measure | batchd mode | llama.cpp | batchd | batchd/llama.cpp (each round) | median |\n|---|---|---|---|---|---|---|\n")
	for _, f := range strings.Split(*formats, ",") {
		file := filepath.Join(*out, "l110-"+strings.ToLower(f)+".gguf")
		if _, err := os.Stat(file); err != nil {
			if err := sh(filepath.Join(*llama, "llama-quantize"), *f32, file, f, "2"); err != nil {
				return fmt.Errorf("quantize %s: %w", f, err)
			}
		}
		byMode := make([][]*measure, len(modes))
		for i := range modes {
			byMode[i] = []*measure{{name: "pp512 tok/s"}, {name: "tg128 (b1) tok/s"}, {name: "S_TG at 32 tok/s"}}
		}
		for range *rounds {
			var llcp [3][]float64
			ms := []*measure{{}, {}, {}}
			if err := llamaCpp(*llama, file, *threads, ms); err != nil {
				return err
			}
			for i := range ms {
				llcp[i] = ms[i].llcp
			}
			for mi, mode := range modes {
				for i, m := range byMode[mi] {
					m.llcp = append(m.llcp, llcp[i]...)
				}
				if err := batchd(kb, file, mode, *threads, byMode[mi]); err != nil {
					return err
				}
			}
		}
		for i := range 3 {
			for mi, mode := range modes {
				m := byMode[mi][i]
				var ratios []string
				var rs []float64
				for j := range m.batchd {
					r := m.batchd[j] / m.llcp[j]
					rs = append(rs, r)
					ratios = append(ratios, fmt.Sprintf("x%.2f", r))
				}
				fmt.Printf("| %s | %s | %s | %.0f | %.0f | %s | x%.2f |\n", f, m.name, mode, median(m.llcp), median(m.batchd),
					strings.Join(ratios, " "), median(rs))
			}
		}
	}
	return nil
}

// llamaCpp runs llama-bench (pp512, tg128) and llama-batched-bench (32 sequences).
func llamaCpp(bin, file string, threads int, ms []*measure) error {
	b, err := output(filepath.Join(bin, "llama-bench"), "-m", file, "-t", strconv.Itoa(threads), "-r", "2",
		"-p", "512", "-n", "128", "-o", "json")
	if err != nil {
		return err
	}
	var rows []struct {
		NPrompt int     `json:"n_prompt"`
		NGen    int     `json:"n_gen"`
		AvgTS   float64 `json:"avg_ts"`
	}
	if err := json.Unmarshal(b, &rows); err != nil {
		return fmt.Errorf("llama-bench output: %w", err)
	}
	for _, r := range rows {
		switch {
		case r.NPrompt == 512:
			ms[0].llcp = append(ms[0].llcp, r.AvgTS)
		case r.NGen == 128:
			ms[1].llcp = append(ms[1].llcp, r.AvgTS)
		}
	}
	b, err = output(filepath.Join(bin, "llama-batched-bench"), "-m", file, "-c", "16384", "-b", "2048", "-ub", "512",
		"-npp", "128", "-ntg", "128", "-npl", "32", "-t", strconv.Itoa(threads))
	if err != nil {
		return err
	}
	// | PP | TG | B | N_KV | T_PP s | S_PP t/s | T_TG s | S_TG t/s | ...
	row := regexp.MustCompile(`(?m)^\|\s*128\s*\|\s*128\s*\|\s*32\s*\|([^\n]*)$`).FindSubmatch(b)
	if row == nil {
		return fmt.Errorf("no 32-sequence row in llama-batched-bench output")
	}
	cells := strings.Split(string(row[1]), "|")
	if len(cells) < 6 {
		return fmt.Errorf("short llama-batched-bench row %q", row[0])
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(cells[5]), 64)
	if err != nil {
		return err
	}
	ms[2].llcp = append(ms[2].llcp, v)
	return nil
}

// batchd runs kernelbench: prefill of 512 and decode at batch 1 and 32 (KV of 128 tokens).
func batchd(kb, file, mode string, threads int, ms []*measure) error {
	b, err := output(kb, "--model", file, "--threads", strconv.Itoa(threads), "--batches", "1,32", "--quant-dot", mode, "--json")
	if err != nil {
		return err
	}
	var r struct {
		Prefill float64            `json:"prefill_tok_s"`
		Decode  map[string]float64 `json:"decode_tok_s"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("kernelbench output: %w", err)
	}
	ms[0].batchd = append(ms[0].batchd, r.Prefill)
	ms[1].batchd = append(ms[1].batchd, r.Decode["1"])
	ms[2].batchd = append(ms[2].batchd, r.Decode["32"])
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

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
