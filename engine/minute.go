package engine

import "time"

// dashWindow is how far back the dashboard's figures look.
const dashWindow = time.Minute

// The dashboard's figures: how full the batches are, how much of a
// request's life is compute rather than waiting, and how busy the model
// is, each over the last dashWindow.
type minute struct {
	steps []stepPoint
	ended []endPoint
	peak  float64 // the highest TokensPerSec seen
}

type stepPoint struct {
	at      time.Time
	seqs    int
	max     int
	channel [3]int // sequences per channel (channelIndex)
	fwd     time.Duration
}

type endPoint struct {
	at            time.Time
	channel       int
	wait, compute time.Duration
}

var dashChannels = [3]string{"realtime", "standard", "bulk"}

func channelIndex(c string) int {
	switch c {
	case "realtime":
		return 0
	case "bulk":
		return 2
	}
	return 1
}

func (d *minute) step(p stepPoint) {
	d.steps = append(d.steps, p)
	cut := 0
	for cut < len(d.steps) && p.at.Sub(d.steps[cut].at) > dashWindow {
		cut++
	}
	d.steps = d.steps[cut:]
}

// end records a request that ended: its wait (arrival to first scheduled,
// or its whole life if it never ran) and its compute (the rest).
func (d *minute) end(now time.Time, channel string, queue, total time.Duration, scheduled bool) {
	wait := total
	if scheduled {
		wait = min(queue, total)
	}
	d.ended = append(d.ended, endPoint{at: now, channel: channelIndex(channel), wait: wait, compute: total - wait})
	cut := 0
	for cut < len(d.ended) && now.Sub(d.ended[cut].at) > dashWindow {
		cut++
	}
	d.ended = d.ended[cut:]
}

// fill writes the figures into s as of now.
func (d *minute) fill(s *Stats, now time.Time) {
	d.peak = max(d.peak, s.TokensPerSec)
	s.PeakTokensPerSec = d.peak
	s.FillRateByChannel, s.EfficiencyByChannel = map[string]float64{}, map[string]float64{}
	var fill float64
	var byChan [3]float64
	var fwd time.Duration
	n := 0
	for _, p := range d.steps {
		if now.Sub(p.at) > dashWindow || p.max <= 0 {
			continue
		}
		n++
		fill += float64(p.seqs) / float64(p.max)
		for i, c := range p.channel {
			byChan[i] += float64(c) / float64(p.max)
		}
		fwd += p.fwd
	}
	if n > 0 {
		s.FillRate = fill / float64(n)
		for i, c := range dashChannels {
			s.FillRateByChannel[c] = byChan[i] / float64(n)
		}
		// Busy time over the window's wall time (from its first step, at
		// most dashWindow): 1 is a model that never idled.
		span := min(dashWindow, now.Sub(d.steps[0].at)+d.steps[0].fwd)
		if span > 0 {
			s.Utilization = min(1, fwd.Seconds()/span.Seconds())
		}
	}
	var all, busy [4]time.Duration
	for _, e := range d.ended {
		if now.Sub(e.at) > dashWindow {
			continue
		}
		all[e.channel] += e.wait + e.compute
		busy[e.channel] += e.compute
		all[3] += e.wait + e.compute
		busy[3] += e.compute
		s.EfficiencySamples++
	}
	for i, c := range dashChannels {
		if all[i] > 0 {
			s.EfficiencyByChannel[c] = busy[i].Seconds() / all[i].Seconds()
		}
	}
	if all[3] > 0 {
		s.Efficiency = busy[3].Seconds() / all[3].Seconds()
	}
}
