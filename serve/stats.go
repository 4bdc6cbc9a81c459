package serve

import (
	"os/user"
	"strconv"

	"github.com/batchd/batchd/engine"
	"github.com/batchd/batchd/ipc/wire"
)

// maxListedRequests bounds the requests listed in stats (the frame's size).
const maxListedRequests = 100

// Stats is the stats reply's engine part: the default model's figures
// (and its engine's stats, nil without one, for the daemon's health
// score), then every loaded model's and their live requests.
func (svc *Service) Stats() (*wire.StatsReport, *engine.Stats) {
	r := &wire.StatsReport{}
	var def *engine.Stats
	if lm := svc.Default(); lm != nil {
		s := lm.Engine.Stats()
		engineFigures(r, s)
		def = &s
		p := lm.Plan
		r.Plan = wire.Plan{Device: p.Device, Profile: p.Profile, KVBlocks: p.KVBlocks, BlockSize: p.BlockSize,
			KVCacheType: p.KVCacheType, KVBytesPerToken: p.KVBytesPerToken, SlidingWindow: p.SlidingWindow,
			KVWindowTables: p.KVWindowTables, KVBlockLayers: p.KVBlockLayers,
			MaxContext: p.MaxContext, MaxNumSeqs: p.MaxNumSeqs, MaxNumBatchedTokens: p.MaxNumBatchedTokens,
			Threads: p.Threads, Warnings: append([]string{}, p.Warnings...)}
	}
	for _, lm := range svc.Loaded() {
		s := lm.Engine.Stats()
		var finished uint64
		for _, n := range s.Finished {
			finished += n
		}
		r.Models = append(r.Models, wire.ModelStats{Name: lm.Name, Running: s.Running, Waiting: s.Waiting, KVUsage: s.KVUsage,
			KVBlocksTotal: s.KVBlocksTotal, KVCacheType: lm.Plan.KVCacheType, PromptTokens: s.PromptTokens, GeneratedTokens: s.GeneratedTokens,
			TokensPerSec: s.TokensPerSec, Finished: finished})
		if room := maxListedRequests - len(r.Requests); room > 0 {
			for _, ri := range requestList(lm.Engine.Requests(room)) {
				ri.Model = lm.Name
				r.Requests = append(r.Requests, ri)
			}
		}
	}
	if r.Requests == nil {
		r.Requests = []wire.RequestInfo{}
	}
	return r, def
}

func dist(d engine.Dist) wire.Dist {
	return wire.Dist{Count: d.Count, Mean: d.Mean, P50: d.P50, P95: d.P95, P99: d.P99}
}

// engineFigures copies the engine's snapshot into the wire report.
func engineFigures(r *wire.StatsReport, s engine.Stats) {
	r.Mode, r.Policy, r.MaxNumSeqs, r.MaxNumBatchedTokens = s.Mode, s.Policy, s.MaxNumSeqs, s.MaxNumBatchedTokens
	r.Running, r.Waiting, r.RunningByChannel, r.WaitingByChannel = s.Running, s.Waiting, s.RunningByChannel, s.WaitingByChannel
	r.KVBlocksTotal, r.KVBlocksUsed, r.KVBlocksCached, r.KVUsage = s.KVBlocksTotal, s.KVBlocksUsed, s.KVBlocksCached, s.KVUsage
	r.KVBlocksTouched = s.KVBlocksTouched
	r.KVWindowBlocksUsed, r.KVWindowBlocksCached = s.KVWindowBlocksUsed, s.KVWindowBlocksCached
	r.BlockSize, r.PrefixQueries, r.PrefixHits, r.Preemptions = s.BlockSize, s.PrefixQueries, s.PrefixHits, s.Preemptions
	r.Steps, r.PromptTokens, r.GeneratedTokens = s.Steps, s.PromptTokens, s.GeneratedTokens
	r.SpecDrafted, r.SpecAccepted, r.SpecShares = s.SpecDrafted, s.SpecAccepted, s.SpecShares
	r.MoELayerPasses, r.MoEPairs, r.MoETouched = s.ExpertLayers, s.ExpertPairs, s.ExpertTouched
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
