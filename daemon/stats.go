package daemon

import (
	"os/user"
	"strconv"

	"github.com/batchd/batchd/engine"
	"github.com/batchd/batchd/ipc/wire"
)

// maxListedRequests bounds the requests listed in stats (the frame's size).
const maxListedRequests = 100

// statsReport is the stats reply: the engine's figures, then the daemon's.
func (d *Daemon) statsReport() *wire.StatsReport {
	r := &wire.StatsReport{}
	if rt := d.runtime(); rt != nil {
		s := rt.Engine.Stats()
		engineFigures(r, s)
		r.Health = healthOf(s, d.ttftTarget(healthChannel))
	}
	for _, rt := range d.loadedRuntimes() {
		s := rt.Engine.Stats()
		var finished uint64
		for _, n := range s.Finished {
			finished += n
		}
		r.Models = append(r.Models, wire.ModelStats{Name: rt.Name, Running: s.Running, Waiting: s.Waiting, KVUsage: s.KVUsage,
			KVBlocksTotal: s.KVBlocksTotal, PromptTokens: s.PromptTokens, GeneratedTokens: s.GeneratedTokens,
			TokensPerSec: s.TokensPerSec, Finished: finished})
		if room := maxListedRequests - len(r.Requests); room > 0 {
			for _, ri := range requestList(rt.Engine.Requests(room)) {
				ri.Model = rt.Name
				r.Requests = append(r.Requests, ri)
			}
		}
	}
	if r.Requests == nil {
		r.Requests = []wire.RequestInfo{}
	}
	d.daemonFigures(r)
	return r
}

func dist(d engine.Dist) wire.Dist {
	return wire.Dist{Count: d.Count, Mean: d.Mean, P50: d.P50, P95: d.P95, P99: d.P99}
}

// engineFigures copies the engine's snapshot into the wire report.
func engineFigures(r *wire.StatsReport, s engine.Stats) {
	r.Mode, r.Policy, r.MaxNumSeqs, r.MaxNumBatchedTokens = s.Mode, s.Policy, s.MaxNumSeqs, s.MaxNumBatchedTokens
	r.Running, r.Waiting, r.RunningByChannel, r.WaitingByChannel = s.Running, s.Waiting, s.RunningByChannel, s.WaitingByChannel
	r.KVBlocksTotal, r.KVBlocksUsed, r.KVBlocksCached, r.KVUsage = s.KVBlocksTotal, s.KVBlocksUsed, s.KVBlocksCached, s.KVUsage
	r.BlockSize, r.PrefixQueries, r.PrefixHits, r.Preemptions = s.BlockSize, s.PrefixQueries, s.PrefixHits, s.Preemptions
	r.Steps, r.PromptTokens, r.GeneratedTokens = s.Steps, s.PromptTokens, s.GeneratedTokens
	r.SpecDrafted, r.SpecAccepted, r.SpecShares = s.SpecDrafted, s.SpecAccepted, s.SpecShares
	r.ForwardTokens, r.ForwardSeconds, r.TokensPerSec = s.ForwardTokens, s.ForwardSeconds, s.TokensPerSec
	r.BatchSizes, r.MeanBatchSize = s.BatchSizes, s.MeanBatchSize
	r.Sleeping, r.Sleeps, r.Wakes, r.LastWakeSeconds = s.Sleeping, s.Sleeps, s.Wakes, s.LastWakeSeconds
	r.Submitted, r.Rejected, r.Finished = s.Submitted, s.Rejected, s.Finished
	if c := s.Controller; c != nil {
		r.Controller = &wire.Controller{Level: c.Level, MaxNumSeqs: c.MaxNumSeqs, MaxNumBatchedTokens: c.MaxNumBatchedTokens,
			Moves: c.Moves, LastDecision: c.LastDecision}
	}
	r.TTFT, r.InterToken, r.QueueTime, r.E2E = dist(s.TTFT), dist(s.InterToken), dist(s.QueueTime), dist(s.E2E)
	r.FillRate, r.FillRateByChannel, r.Efficiency, r.EfficiencyByChannel = s.FillRate, s.FillRateByChannel, s.Efficiency, s.EfficiencyByChannel
}

// daemonFigures adds the lifecycle state, the plan and the live config.
func (d *Daemon) daemonFigures(r *wire.StatsReport) {
	r.State = d.State().String() // before d.mu: State takes it
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.rt != nil {
		p := d.rt.Plan
		r.Plan = wire.Plan{Device: p.Device, Profile: p.Profile, KVBlocks: p.KVBlocks, BlockSize: p.BlockSize,
			MaxContext: p.MaxContext, MaxNumSeqs: p.MaxNumSeqs, MaxNumBatchedTokens: p.MaxNumBatchedTokens,
			Threads: p.Threads, Warnings: append([]string{}, p.Warnings...)}
	}
	c := d.cfg.Engine
	r.Config = wire.ConfigSummary{MaxNumSeqs: c.MaxNumSeqs, MaxNumBatchedTokens: c.MaxNumBatchedTokens,
		MaxPartialPrefills: c.MaxPartialPrefills, Policy: c.Policy, MaxQueue: c.MaxQueue,
		MaxRequestsPerUser: d.cfg.Server.MaxRequestsPerUser, LogLevel: d.cfg.LogLevel}
	r.Reloads, r.ReloadErrors, r.LastReloadError = d.reloads, d.reloadErrs, d.lastErr
	r.RestartNeeded = append([]string{}, d.restart...)
	r.ReloadHeld = append([]string{}, d.held...)
	if d.conns != nil {
		c := d.conns.Stats()
		r.Connections = wire.Connections{Max: c.Max, MaxPending: c.MaxPending, PerUser: c.PerUser, Open: c.Open,
			Pending: c.Pending, Refused: c.Refused, Evicted: c.Evicted}
	}
}

// requestList is the stats view of the live requests: ids, users and
// progress, never prompt text.
func requestList(reqs []engine.RequestInfo) []wire.RequestInfo {
	names := map[uint32]string{}
	out := make([]wire.RequestInfo, 0, len(reqs))
	for _, r := range reqs {
		name, ok := names[r.Owner]
		if !ok {
			name = strconv.FormatUint(uint64(r.Owner), 10)
			if u, err := user.LookupId(name); err == nil {
				name = u.Username
			}
			names[r.Owner] = name
		}
		out = append(out, wire.RequestInfo{ID: r.ID, UID: r.Owner, User: name, Channel: r.Channel, State: r.State,
			AgeS: r.Age.Seconds(), PromptTokens: r.PromptTokens, GeneratedTokens: r.GeneratedTokens,
			MaxTokens: r.MaxTokens, CancelRequested: r.CancelRequested})
	}
	return out
}
