package tune

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Request is what one request of a cell's load measured.
type Request struct {
	TTFT           float64   // seconds to the first token
	Gaps           []float64 // seconds between tokens
	Compute, Total time.Duration
	Tokens         int // generated
}

// Kind is which prompt of the mix request i gets: 0 short, 1 medium, 2 long.
func (m Matrix) Kind(i int) int {
	sum := max(1, m.Mix[0]+m.Mix[1]+m.Mix[2])
	switch r := i % sum; {
	case r >= m.Mix[0]+m.Mix[1]:
		return 2
	case r >= m.Mix[0]:
		return 1
	}
	return 0
}

// RunLoad runs a cell's load: Concurrency clients, each calling one(i)
// for the next request index until Requests have run, and summarises it
// (throughput, TTFT and ITL percentiles, efficiency); the caller adds
// what its engine reports (fill rate, utilisation).
func RunLoad(ctx context.Context, c Cell, m Matrix, one func(ctx context.Context, client, i int) (Request, error)) (Sample, error) {
	var mu sync.Mutex
	var ttft, itl []float64
	var compute, total time.Duration
	next, generated := 0, 0
	var firstErr error
	start := time.Now()
	var wg sync.WaitGroup
	for w := range c.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= m.Requests || ctx.Err() != nil {
					return
				}
				r, err := one(ctx, w, i)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				ttft, itl = append(ttft, r.TTFT), append(itl, r.Gaps...)
				compute, total, generated = compute+r.Compute, total+r.Total, generated+r.Tokens
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	s := Sample{Cell: c, TokensPerSec: float64(generated) / time.Since(start).Seconds(), TTFT: Pct(ttft), ITL: Pct(itl),
		Requests: m.Requests}
	if total > 0 {
		s.Efficiency = compute.Seconds() / total.Seconds()
	}
	return s, firstErr
}

// Pct is v's p50, p95 and p99 (zero when empty).
func Pct(v []float64) Percentiles {
	if len(v) == 0 {
		return Percentiles{}
	}
	s := slices.Clone(v)
	slices.Sort(s)
	q := func(p float64) float64 { return s[min(len(s)-1, int(p*float64(len(s))))] }
	return Percentiles{P50: q(0.5), P95: q(0.95), P99: q(0.99)}
}

// Counters are an engine's running totals, read before and after a cell.
type Counters struct {
	Steps          uint64
	MeanBatchSize  float64
	ForwardSeconds float64
}

// Engine adds the fill rate and utilisation of a cell that ran for wall
// between the counters a and b.
func (s *Sample) Engine(a, b Counters, wall time.Duration) {
	if steps := b.Steps - a.Steps; steps > 0 && s.Size > 0 {
		seqs := b.MeanBatchSize*float64(b.Steps) - a.MeanBatchSize*float64(a.Steps)
		s.FillRate = seqs / float64(steps) / float64(s.Size)
	}
	if wall > 0 {
		s.Utilization = min(1, (b.ForwardSeconds-a.ForwardSeconds)/wall.Seconds())
	}
}
