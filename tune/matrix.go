package tune

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Matrix is the test matrix: every batch size with every window, under
// every load, Rounds times, the cells of a round in a fresh order so that
// a noisy neighbour does not pick the winner.
type Matrix struct {
	Sizes        []int           // max_num_seqs of a cell
	Windows      []time.Duration // the batch window (mode dynamic); 0 is continuous batching
	Concurrency  []int           // clients at once
	Mix          [3]int          // short, medium, long requests per sum(Mix): 7:2:1
	PromptTokens [3]int          // about this many prompt tokens for each kind
	MaxTokens    int             // tokens generated per request
	Requests     int             // requests per cell
	Rounds       int
}

// Default is the matrix at this scale: sizes 4 to 32, windows 10
// to 200 ms, two loads, prompts 7:2:1 short:medium:long.
func Default() Matrix {
	return Matrix{Sizes: []int{4, 8, 16, 32}, Windows: []time.Duration{10 * time.Millisecond, 50 * time.Millisecond,
		100 * time.Millisecond, 200 * time.Millisecond}, Concurrency: []int{8, 32}, Mix: [3]int{7, 2, 1},
		PromptTokens: [3]int{16, 64, 256}, MaxTokens: 64, Requests: 24, Rounds: 3}
}

// Cell is one configuration under one load.
type Cell struct {
	Size        int
	Window      time.Duration
	Concurrency int
}

func (c Cell) String() string {
	return fmt.Sprintf("size %d, window %v, %d clients", c.Size, c.Window, c.Concurrency)
}

// Percentiles are p50, p95 and p99, in seconds.
type Percentiles struct{ P50, P95, P99 float64 }

// Sample is what one run of a cell measured.
type Sample struct {
	Cell
	TokensPerSec float64 // generated
	TTFT, ITL    Percentiles
	// FillRate: mean running sequences / Size per step; Efficiency:
	// compute / (wait + compute) of the requests; Utilization: forward
	// time / wall time.
	FillRate, Efficiency, Utilization float64
	Requests                          int
}

// Runner runs one cell and measures it.
type Runner func(ctx context.Context, c Cell, m Matrix) (Sample, error)

// Result is a cell's median sample over the rounds, with the spread of
// its throughput.
type Result struct {
	Sample
	MinTokensPerSec, MaxTokensPerSec float64
}

// Cells lists the matrix's cells in a fixed order.
func (m Matrix) Cells() []Cell {
	var out []Cell
	for _, c := range m.Concurrency {
		for _, s := range m.Sizes {
			for _, w := range m.Windows {
				out = append(out, Cell{s, w, c})
			}
		}
	}
	return out
}

// Run runs every cell Rounds times, each round in its own shuffled order,
// and returns the cells' medians in Cells order. progress (if set) sees
// each sample as it comes.
func Run(ctx context.Context, m Matrix, run Runner, progress func(round int, s Sample)) ([]Result, error) {
	cells := m.Cells()
	samples := make(map[Cell][]Sample, len(cells))
	for r := range max(1, m.Rounds) {
		order := slices.Clone(cells)
		rand.New(rand.NewPCG(uint64(r), 0x74756e65)).Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for _, c := range order {
			s, err := run(ctx, c, m)
			if err != nil {
				return nil, fmt.Errorf("%v: %w", c, err)
			}
			s.Cell = c
			samples[c] = append(samples[c], s)
			if progress != nil {
				progress(r+1, s)
			}
		}
	}
	out := make([]Result, 0, len(cells))
	for _, c := range cells {
		out = append(out, median(samples[c]))
	}
	return out, nil
}

// median is the sample of median throughput (the lower one of an even
// count: a lucky round does not win), with the spread.
func median(ss []Sample) Result {
	sorted := slices.Clone(ss)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].TokensPerSec < sorted[j].TokensPerSec })
	return Result{Sample: sorted[(len(sorted)-1)/2], MinTokensPerSec: sorted[0].TokensPerSec,
		MaxTokensPerSec: sorted[len(sorted)-1].TokensPerSec}
}

// ParseInts reads a comma-separated list of positive integers (a flag).
func ParseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 1 {
			return nil, fmt.Errorf("%q: want positive integers", s)
		}
		out = append(out, v)
	}
	return out, nil
}

// ParseDurations reads a comma-separated list of durations, 0 allowed.
func ParseDurations(s string) ([]time.Duration, error) {
	var out []time.Duration
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "0" {
			out = append(out, 0)
			continue
		}
		v, err := time.ParseDuration(f)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("%q: want durations such as 50ms, or 0", s)
		}
		out = append(out, v)
	}
	return out, nil
}
