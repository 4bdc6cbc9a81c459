package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/batchd/batchd/ipc/wire"
)

// topCmd is a live terminal view of the daemon, refreshed every
// --interval: requests and queue by channel, KV use, tokens/s, the
// dashboard and the adaptive controller's last move. --count stops after
// that many frames (0: until interrupted).
func topCmd(fs *flag.FlagSet) runFunc {
	interval := fs.Duration("interval", time.Second, "time between refreshes")
	frames := fs.Int("count", 0, "stop after this many frames (0: until interrupted)")
	return func(ctx context.Context, socket string, args []string, stdout, _ io.Writer) error {
		if *interval < 100*time.Millisecond {
			return usageErr{fmt.Errorf("--interval %v: at least 100ms", *interval)}
		}
		c, err := dialNoArgs(ctx, socket, args)
		if err != nil {
			return err
		}
		defer c.Close()
		for n := 0; *frames == 0 || n < *frames; n++ {
			if n > 0 {
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(*interval):
				}
			}
			s, err := c.Stats(ctx)
			if err != nil {
				return err
			}
			fmt.Fprint(stdout, "\x1b[H\x1b[2J") // home, clear
			printTop(stdout, s, time.Now())
		}
		return nil
	}
}

func printTop(w io.Writer, s *wire.StatsReport, now time.Time) {
	fmt.Fprintf(w, "batchd %s  %s  %s batching, policy %s\n\n", s.State, now.Format("15:04:05"), s.Mode, s.Policy)
	fmt.Fprintf(w, "requests  %d running, %d waiting   (%s)\n", s.Running, s.Waiting, channelCounts(s))
	fmt.Fprintf(w, "tokens/s  %.1f generated        batch: up to %d seqs, %d tokens a step\n", s.TokensPerSec,
		s.MaxNumSeqs, s.MaxNumBatchedTokens)
	fmt.Fprintf(w, "KV        %s %.0f%% of %d blocks (%d cached)\n", bar(s.KVUsage, 20), 100*s.KVUsage, s.KVBlocksTotal, s.KVBlocksCached)
	fmt.Fprintf(w, "fill      %s %.0f%%   efficiency %.0f%%\n", bar(s.FillRate, 20), 100*s.FillRate, 100*s.Efficiency)
	h := s.Health
	fmt.Fprintf(w, "health    %s %.2f   throughput %.2f  latency %.2f  utilization %.2f  memory %.2f\n", bar(h.Score, 20),
		h.Score, h.Throughput, h.Latency, h.Utilization, h.MemoryHeadroom)
	fmt.Fprintf(w, "latency   first token p50 %s p99 %s   between tokens p50 %s p99 %s\n", dur(s.TTFT.P50), dur(s.TTFT.P99),
		dur(s.InterToken.P50), dur(s.InterToken.P99))
	if ct := s.Controller; ct != nil {
		fmt.Fprintf(w, "control   level %s, %d moves; last: %s\n", ct.Level, ct.Moves, ct.LastDecision)
	}
	printRequests(w, s.Requests)
}

func channelCounts(s *wire.StatsReport) string {
	var parts []string
	for _, c := range []string{"realtime", "standard", "bulk"} {
		parts = append(parts, fmt.Sprintf("%s %d/%d", c, s.RunningByChannel[c], s.WaitingByChannel[c]))
	}
	return strings.Join(parts, ", ") + " running/waiting"
}

// bar draws a fraction as a bar of width cells.
func bar(f float64, width int) string {
	n := int(max(0, min(1, f))*float64(width) + 0.5)
	return "[" + strings.Repeat("#", n) + strings.Repeat(".", width-n) + "]"
}
