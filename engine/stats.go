package engine

import (
	"slices"
	"time"

	"github.com/batchd/batchd/backend"
	"github.com/batchd/batchd/engine/sched"
)

// Dist summarizes a latency distribution over the most recent samples, in seconds.
type Dist struct {
	Count uint64  `json:"count"` // samples ever recorded
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
}

// Stats is a snapshot of the engine, cheap to take while it is busy.
type Stats struct {
	Mode                string `json:"mode"`
	Policy              string `json:"policy"`
	MaxNumSeqs          int    `json:"max_num_seqs"`           // effective
	MaxNumBatchedTokens int    `json:"max_num_batched_tokens"` // effective

	Running int `json:"running"`
	Waiting int `json:"waiting"`
	// By channel (realtime, standard, bulk).
	RunningByChannel map[string]int `json:"running_by_channel"`
	WaitingByChannel map[string]int `json:"waiting_by_channel"`

	KVBlocksTotal  int `json:"kv_blocks_total"`
	KVBlocksUsed   int `json:"kv_blocks_used"`
	KVBlocksCached int `json:"kv_blocks_cached"`
	// KVBlocksTouched: blocks whose memory the store has committed (ever
	// used since start or the last sleep); the rest is reserved address
	// space only.
	KVBlocksTouched int     `json:"kv_blocks_touched"`
	KVUsage         float64 `json:"kv_usage"` // used / total
	// Of the used and cached blocks, those of window blocks (a windowed
	// model's sliding groups, held only while a query sees them).
	KVWindowBlocksUsed   int `json:"kv_window_blocks_used,omitempty"`
	KVWindowBlocksCached int `json:"kv_window_blocks_cached,omitempty"`
	KVBlocksPinned       int `json:"kv_blocks_pinned"` // held by pinned prefixes (of the used)
	BlockSize            int `json:"block_size"`
	// RecurrentStates: sequences whose recurrent-layer state the backend
	// holds (hybrids such as qwen35; their KV blocks serve the attention
	// layers only, and no prefix is cached for them).
	RecurrentStates int `json:"recurrent_states,omitempty"`
	// RecurrentSnapshots: states kept at block boundaries for prefix-cache
	// hits on such models (backend.Recurrent.Snapshots).
	RecurrentSnapshots int `json:"recurrent_snapshots,omitempty"`

	PrefixQueries uint64 `json:"prefix_cache_queries"` // prompt tokens looked up
	PrefixHits    uint64 `json:"prefix_cache_hits"`    // of those, found cached
	Preemptions   uint64 `json:"preemptions"`

	// Speculative decoding: tokens drafted, those the sampler kept, and the
	// decode shares that verified a draft (each also draws one token of its
	// own, so a share's tokens are 1 + kept / shares on average).
	SpecDrafted  uint64 `json:"spec_drafted_tokens"`
	SpecAccepted uint64 `json:"spec_accepted_tokens"`
	SpecShares   uint64 `json:"spec_verify_shares"`

	Steps           uint64 `json:"steps"`
	PromptTokens    uint64 `json:"prompt_tokens"`    // prompt tokens computed (cache hits excluded)
	GeneratedTokens uint64 `json:"generated_tokens"` // tokens sampled
	// ForwardTokens counts every token run through the model (prompt chunks,
	// decodes, padded rows) and ForwardSeconds the time spent in those passes:
	// their ratio is the model's raw speed, apart from the scheduling.
	ForwardTokens  uint64  `json:"forward_tokens"`
	ForwardSeconds float64 `json:"forward_seconds"`
	TokensPerSec   float64 `json:"tokens_per_sec"` // generated, over the last 10 s

	// Mixtures of experts: token-expert pairs and experts touched, each
	// summed over the layers of every step (ExpertLayers: the layer passes
	// counted). Per step and layer, Pairs/ExpertLayers tokens were routed
	// and Touched/ExpertLayers experts read, Pairs/Touched tokens each.
	ExpertLayers  uint64 `json:"moe_layer_passes,omitempty"`
	ExpertPairs   uint64 `json:"moe_token_expert_pairs,omitempty"`
	ExpertTouched uint64 `json:"moe_experts_touched,omitempty"`

	// BatchSizes counts steps by how many sequences they ran, in power-of-two
	// buckets: [1], [2,3], [4,7], ... ; MeanBatchSize averages all steps.
	BatchSizes    []uint64 `json:"batch_sizes"`
	MeanBatchSize float64  `json:"mean_batch_size"`

	Sleeping        bool    `json:"sleeping"` // KV memory released until the next request
	Sleeps          uint64  `json:"sleeps"`
	Wakes           uint64  `json:"wakes"`
	LastWakeSeconds float64 `json:"last_wake_seconds"` // time to restore memory on the last wake

	Submitted uint64            `json:"submitted"`
	Rejected  uint64            `json:"rejected"` // queue full or invalid at admission
	Finished  map[string]uint64 `json:"finished"` // by finish reason

	// Controller is the adaptive controller's state (when adaptive control is on).
	Controller *sched.ControllerState `json:"controller,omitempty"`

	TTFT       Dist `json:"ttft"`
	InterToken Dist `json:"inter_token"`
	QueueTime  Dist `json:"queue_time"`
	E2E        Dist `json:"e2e"`

	// The dashboard's figures, over the last minute. FillRate: the mean of
	// running sequences / max_num_seqs per step (by channel, their shares
	// of it); Efficiency: compute / (queue wait + compute) summed over the
	// requests that ended (EfficiencySamples of them; 0 when none; a
	// request that never ran is all wait); Utilization: forward time over
	// wall time; PeakTokensPerSec: the highest TokensPerSec seen.
	FillRate            float64            `json:"fill_rate"`
	FillRateByChannel   map[string]float64 `json:"fill_rate_by_channel"`
	Efficiency          float64            `json:"efficiency"`
	EfficiencyByChannel map[string]float64 `json:"efficiency_by_channel"`
	EfficiencySamples   int                `json:"efficiency_samples"`
	Utilization         float64            `json:"utilization"`
	PeakTokensPerSec    float64            `json:"peak_tokens_per_sec"`
}

// window keeps the most recent samples for percentiles.
type window struct {
	buf   []float64
	next  int
	count uint64
	sum   float64
}

const windowSize = 4096

func (w *window) add(v float64) {
	if len(w.buf) < windowSize {
		w.buf = append(w.buf, v)
	} else {
		w.buf[w.next] = v
		w.next = (w.next + 1) % windowSize
	}
	w.count++
	w.sum += v
}

// recentP95 is the 95th percentile of the last n samples (0 if none).
func (w *window) recentP95(n int) float64 {
	k := min(n, len(w.buf))
	if k == 0 {
		return 0
	}
	last := make([]float64, 0, k)
	end := len(w.buf)
	if len(w.buf) == windowSize {
		end = w.next
	}
	for i := 1; i <= k; i++ {
		last = append(last, w.buf[(end-i+len(w.buf))%len(w.buf)])
	}
	slices.Sort(last)
	return last[min(k-1, int(0.95*float64(k)))]
}

func (w *window) dist() Dist {
	d := Dist{Count: w.count}
	if len(w.buf) == 0 {
		return d
	}
	s := slices.Clone(w.buf)
	slices.Sort(s)
	q := func(p float64) float64 { return s[min(len(s)-1, int(p*float64(len(s))))] }
	var sum float64
	for _, v := range s {
		sum += v
	}
	d.Mean, d.P50, d.P95, d.P99 = sum/float64(len(s)), q(0.50), q(0.95), q(0.99)
	return d
}

// recorder accumulates the loop's figures; the engine guards it with its mutex.
type recorder struct {
	steps, promptTokens, generated uint64
	forwardTokens                  uint64
	forward                        time.Duration
	experts                        backend.ExpertLoad // summed over the steps
	batchSizes                     []uint64
	seqSum                         uint64
	submitted, rejected            uint64
	finished                       map[string]uint64
	ttft, itl, queue, e2e          window
	ttftBy                         map[string]*window // by channel, for the controller
	rate                           []ratePoint
	sleeps, wakes                  uint64
	lastWake                       time.Duration
	dash                           minute
}

type ratePoint struct {
	at        time.Time
	generated uint64
}

func (r *recorder) step(now time.Time, seqs, tokens, prompt, generated int, fwd time.Duration) {
	r.steps++
	r.forwardTokens += uint64(tokens)
	r.forward += fwd
	r.promptTokens += uint64(prompt)
	r.generated += uint64(generated)
	r.seqSum += uint64(seqs)
	b := 0
	for n := seqs; n > 1; n >>= 1 {
		b++
	}
	for len(r.batchSizes) <= b {
		r.batchSizes = append(r.batchSizes, 0)
	}
	r.batchSizes[b]++
	r.rate = append(r.rate, ratePoint{now, r.generated})
	cut := 0
	for cut < len(r.rate)-1 && now.Sub(r.rate[cut].at) > 10*time.Second {
		cut++
	}
	r.rate = r.rate[cut:]
}

func (r *recorder) finish(reason FinishReason) {
	if r.finished == nil {
		r.finished = map[string]uint64{}
	}
	r.finished[string(reason)]++
}

func (r *recorder) fill(s *Stats, now time.Time) {
	s.Steps, s.PromptTokens, s.GeneratedTokens = r.steps, r.promptTokens, r.generated
	s.ForwardTokens, s.ForwardSeconds = r.forwardTokens, r.forward.Seconds()
	s.ExpertLayers, s.ExpertPairs, s.ExpertTouched = uint64(r.experts.Layers), uint64(r.experts.Pairs), uint64(r.experts.Touched)
	s.BatchSizes = slices.Clone(r.batchSizes)
	if r.steps > 0 {
		s.MeanBatchSize = float64(r.seqSum) / float64(r.steps)
	}
	if n := len(r.rate); n > 1 {
		if dt := now.Sub(r.rate[0].at).Seconds(); dt > 0 && now.Sub(r.rate[n-1].at) < 10*time.Second {
			s.TokensPerSec = float64(r.rate[n-1].generated-r.rate[0].generated) / dt
		}
	}
	s.Submitted, s.Rejected = r.submitted, r.rejected
	s.Sleeps, s.Wakes, s.LastWakeSeconds = r.sleeps, r.wakes, r.lastWake.Seconds()
	s.Finished = map[string]uint64{}
	for k, v := range r.finished {
		s.Finished[k] = v
	}
	s.TTFT, s.InterToken, s.QueueTime, s.E2E = r.ttft.dist(), r.itl.dist(), r.queue.dist(), r.e2e.dist()
	r.dash.fill(s, now)
}
