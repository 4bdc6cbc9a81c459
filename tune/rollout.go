package tune

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Window is the running daemon's figures over a watch window.
type Window struct {
	TokensPerSec float64
	P95TTFT      time.Duration
	Requests     int // that ended in the window
}

// Tolerance is how much worse a candidate may be than the baseline and
// still be kept: throughput may fall by Throughput (a fraction), p95 TTFT
// rise by Latency (a fraction). MinRequests is the least the window must
// hold to judge at all.
type Tolerance struct {
	Throughput, Latency float64
	MinRequests         int
}

// DefaultTolerance: 10% either way, 8 requests.
var DefaultTolerance = Tolerance{Throughput: 0.10, Latency: 0.10, MinRequests: 8}

// Judge decides a rollout: keep the candidate only when its window holds
// enough requests and neither its throughput nor its p95 TTFT is worse
// than the baseline's beyond the tolerance; why says which figure decided.
func Judge(base, cand Window, tol Tolerance) (keep bool, why string) {
	switch {
	case cand.Requests < tol.MinRequests:
		return false, fmt.Sprintf("only %d requests ended under the candidate (need %d): not enough to judge, rolled back",
			cand.Requests, tol.MinRequests)
	case base.TokensPerSec > 0 && cand.TokensPerSec < base.TokensPerSec*(1-tol.Throughput):
		return false, fmt.Sprintf("throughput %.1f tok/s is %.0f%% under the baseline's %.1f (tolerance %.0f%%)",
			cand.TokensPerSec, 100*(1-cand.TokensPerSec/base.TokensPerSec), base.TokensPerSec, 100*tol.Throughput)
	case base.P95TTFT > 0 && float64(cand.P95TTFT) > float64(base.P95TTFT)*(1+tol.Latency):
		return false, fmt.Sprintf("p95 time to first token %v is %.0f%% over the baseline's %v (tolerance %.0f%%)",
			cand.P95TTFT, 100*(float64(cand.P95TTFT)/float64(base.P95TTFT)-1), base.P95TTFT, 100*tol.Latency)
	}
	return true, fmt.Sprintf("throughput %.1f tok/s (baseline %.1f), p95 TTFT %v (baseline %v): within tolerance, kept",
		cand.TokensPerSec, base.TokensPerSec, cand.P95TTFT, base.P95TTFT)
}

// Target is a running daemon that a setting rolls out to.
type Target interface {
	Apply(Setting) error                                        // through its hot-reload path
	Restore() error                                             // the baseline back, the same way
	Watch(ctx context.Context, d time.Duration) (Window, error) // its figures over d
}

// Rollout is the gradual rollout: watch the baseline, apply the
// candidate, watch it as long, and keep it only if Judge says so, else put
// the baseline back. Every step is logged with its reason. A config
// reload changes the scheduler's limits between steps, so no request is
// lost or run twice either way.
func Rollout(ctx context.Context, t Target, cand Setting, watch time.Duration, tol Tolerance, log func(string)) (bool, string, error) {
	base, err := t.Watch(ctx, watch)
	if err != nil {
		return false, "", fmt.Errorf("watching the baseline: %w", err)
	}
	log(fmt.Sprintf("baseline: %.1f tok/s, p95 TTFT %v over %d requests", base.TokensPerSec, base.P95TTFT, base.Requests))
	if err := t.Apply(cand); err != nil {
		return false, "", fmt.Errorf("applying max_num_seqs %d, window %v: %w", cand.Size, cand.Window, err)
	}
	log(fmt.Sprintf("applied max_num_seqs %d, window %v; watching for %v", cand.Size, cand.Window, watch))
	got, err := t.Watch(ctx, watch)
	if err != nil {
		return false, "", errors.Join(fmt.Errorf("watching the candidate: %w", err), t.Restore())
	}
	keep, why := Judge(base, got, tol)
	if keep {
		log("kept: " + why)
		return true, why, nil
	}
	log("rolling back: " + why)
	return false, why, t.Restore()
}
