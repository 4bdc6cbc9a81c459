package remote

import (
	"context"
	"fmt"
	"strings"
	"time"

	client "github.com/batchd/batchd/clients/go"
	"github.com/batchd/batchd/ipc/wire"
	"github.com/batchd/batchd/tune"
)

// Runner runs each cell against the daemon: its setting through the
// config file (Apply), then the load as requests in the bulk channel, so
// that live traffic keeps its objectives; Restore puts the baseline back
// when the matrix is done.
func (t *Target) Runner() tune.Runner {
	return func(ctx context.Context, c tune.Cell, m tune.Matrix) (tune.Sample, error) {
		if err := t.Apply(tune.Setting{Size: c.Size, Window: c.Window}); err != nil {
			return tune.Sample{}, err
		}
		a, err := t.c.Stats(ctx)
		if err != nil {
			return tune.Sample{}, err
		}
		start := time.Now()
		s, err := tune.RunLoad(ctx, c, m, func(ctx context.Context, _, i int) (tune.Request, error) {
			return t.request(ctx, m, c, i)
		})
		wall := time.Since(start)
		b, berr := t.c.Stats(ctx)
		if err == nil {
			err = berr
		}
		s.Engine(counters(a), counters(b), wall)
		return s, err
	}
}

func counters(s *wire.StatsReport) tune.Counters {
	if s == nil {
		return tune.Counters{}
	}
	return tune.Counters{Steps: s.Steps, MeanBatchSize: s.MeanBatchSize, ForwardSeconds: s.ForwardSeconds}
}

// request sends request i of the mix: a distinct text of about the
// kind's prompt length in words.
func (t *Target) request(ctx context.Context, m tune.Matrix, c tune.Cell, i int) (tune.Request, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "Tuning request %d of cell %d/%v/%d:", i, c.Size, c.Window, c.Concurrency)
	for w := 0; w < m.PromptTokens[m.Kind(i)]; w++ {
		b.WriteString([]string{" river", " stone", " quiet", " market", " lantern", " orbit"}[(i+w*5)%6])
	}
	var r tune.Request
	begin := time.Now()
	last := begin
	res, err := t.c.Generate(ctx, client.Request{Prompt: b.String(), MaxTokens: m.MaxTokens, IgnoreEOS: true, Channel: "bulk"},
		func(client.Delta) error {
			now := time.Now()
			if r.Tokens == 0 {
				r.TTFT = now.Sub(begin).Seconds()
			} else {
				r.Gaps = append(r.Gaps, now.Sub(last).Seconds())
			}
			r.Tokens++
			last = now
			return nil
		})
	if err != nil {
		return r, err
	}
	r.Total = time.Since(begin)
	r.Compute = r.Total - time.Duration(res.Timings.QueueS*float64(time.Second))
	return r, nil
}
