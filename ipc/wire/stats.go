package wire

// StatsReport is the daemon's figures, the body of a stats reply. Field
// names on the wire are the msgpack (and JSON) tags; times are seconds.
type StatsReport struct {
	State string `msgpack:"state" json:"state"` // loading, ready, sleeping, draining

	Mode                string `msgpack:"mode" json:"mode"`
	Policy              string `msgpack:"policy" json:"policy"`
	MaxNumSeqs          int    `msgpack:"max_num_seqs" json:"max_num_seqs"`                     // effective
	MaxNumBatchedTokens int    `msgpack:"max_num_batched_tokens" json:"max_num_batched_tokens"` // effective

	Running          int            `msgpack:"running" json:"running"`
	Waiting          int            `msgpack:"waiting" json:"waiting"`
	RunningByChannel map[string]int `msgpack:"running_by_channel" json:"running_by_channel"`
	WaitingByChannel map[string]int `msgpack:"waiting_by_channel" json:"waiting_by_channel"`

	KVBlocksTotal  int `msgpack:"kv_blocks_total" json:"kv_blocks_total"`
	KVBlocksUsed   int `msgpack:"kv_blocks_used" json:"kv_blocks_used"`
	KVBlocksCached int `msgpack:"kv_blocks_cached" json:"kv_blocks_cached"`
	// KVBlocksTouched: blocks whose memory is committed (the rest of the
	// pool is reserved address space, committed as blocks are first used).
	KVBlocksTouched int     `msgpack:"kv_blocks_touched" json:"kv_blocks_touched"`
	KVUsage         float64 `msgpack:"kv_usage" json:"kv_usage"`
	// Of the used and cached blocks, a windowed model's window blocks'.
	KVWindowBlocksUsed   int    `msgpack:"kv_window_blocks_used,omitempty" json:"kv_window_blocks_used,omitempty"`
	KVWindowBlocksCached int    `msgpack:"kv_window_blocks_cached,omitempty" json:"kv_window_blocks_cached,omitempty"`
	BlockSize            int    `msgpack:"block_size" json:"block_size"`
	PrefixQueries        uint64 `msgpack:"prefix_cache_queries" json:"prefix_cache_queries"`
	PrefixHits           uint64 `msgpack:"prefix_cache_hits" json:"prefix_cache_hits"`
	Preemptions          uint64 `msgpack:"preemptions" json:"preemptions"`
	// Speculative decoding: tokens drafted, those kept, and the decode
	// shares that verified a draft.
	SpecDrafted  uint64 `msgpack:"spec_drafted_tokens" json:"spec_drafted_tokens"`
	SpecAccepted uint64 `msgpack:"spec_accepted_tokens" json:"spec_accepted_tokens"`
	SpecShares   uint64 `msgpack:"spec_verify_shares" json:"spec_verify_shares"`
	// Mixtures of experts: layer passes, token-expert pairs and experts
	// touched, each summed over the steps (zero for a dense model).
	MoELayerPasses uint64 `msgpack:"moe_layer_passes,omitempty" json:"moe_layer_passes,omitempty"`
	MoEPairs       uint64 `msgpack:"moe_token_expert_pairs,omitempty" json:"moe_token_expert_pairs,omitempty"`
	MoETouched     uint64 `msgpack:"moe_experts_touched,omitempty" json:"moe_experts_touched,omitempty"`

	Steps           uint64   `msgpack:"steps" json:"steps"`
	PromptTokens    uint64   `msgpack:"prompt_tokens" json:"prompt_tokens"`
	GeneratedTokens uint64   `msgpack:"generated_tokens" json:"generated_tokens"`
	ForwardTokens   uint64   `msgpack:"forward_tokens" json:"forward_tokens"`
	ForwardSeconds  float64  `msgpack:"forward_seconds" json:"forward_seconds"`
	TokensPerSec    float64  `msgpack:"tokens_per_sec" json:"tokens_per_sec"`
	BatchSizes      []uint64 `msgpack:"batch_sizes" json:"batch_sizes"`
	MeanBatchSize   float64  `msgpack:"mean_batch_size" json:"mean_batch_size"`

	Sleeping        bool    `msgpack:"sleeping" json:"sleeping"`
	Sleeps          uint64  `msgpack:"sleeps" json:"sleeps"`
	Wakes           uint64  `msgpack:"wakes" json:"wakes"`
	LastWakeSeconds float64 `msgpack:"last_wake_seconds" json:"last_wake_seconds"`

	Submitted uint64            `msgpack:"submitted" json:"submitted"`
	Rejected  uint64            `msgpack:"rejected" json:"rejected"`
	Finished  map[string]uint64 `msgpack:"finished" json:"finished"`

	Controller *Controller `msgpack:"controller,omitempty" json:"controller,omitempty"`
	TTFT       Dist        `msgpack:"ttft" json:"ttft"`
	InterToken Dist        `msgpack:"inter_token" json:"inter_token"`
	QueueTime  Dist        `msgpack:"queue_time" json:"queue_time"`
	E2E        Dist        `msgpack:"e2e" json:"e2e"`
	// The dashboard (the default model's, over the last minute): batch
	// fill rate (running / max_num_seqs), scheduling efficiency (compute /
	// (wait + compute) of the requests that ended), utilisation, and the
	// health score with its components.
	FillRate            float64            `msgpack:"fill_rate" json:"fill_rate"`
	FillRateByChannel   map[string]float64 `msgpack:"fill_rate_by_channel" json:"fill_rate_by_channel"`
	Efficiency          float64            `msgpack:"efficiency" json:"efficiency"`
	EfficiencyByChannel map[string]float64 `msgpack:"efficiency_by_channel" json:"efficiency_by_channel"`
	Health              HealthScore        `msgpack:"health" json:"health"`

	Plan            Plan          `msgpack:"plan" json:"plan"`
	Config          ConfigSummary `msgpack:"config" json:"config"`
	Reloads         int           `msgpack:"reloads" json:"reloads"`
	ReloadErrors    int           `msgpack:"reload_errors" json:"reload_errors"`
	LastReloadError string        `msgpack:"last_reload_error" json:"last_reload_error"`
	RestartNeeded   []string      `msgpack:"restart_needed" json:"restart_needed"`
	Connections     Connections   `msgpack:"connections" json:"connections"`
	// ReloadHeld: how the config file would widen access; a file change
	// that widens applies only by an explicit reload (SIGHUP, batchctl reload).
	ReloadHeld []string      `msgpack:"reload_held" json:"reload_held"`
	Requests   []RequestInfo `msgpack:"requests" json:"requests"` // in flight, oldest first, at most 100
	// Models: each loaded model's engine figures (the ones above are the
	// default model's).
	Models []ModelStats `msgpack:"models,omitempty" json:"models,omitempty"`
}

// ModelStats is one loaded model's engine figures.
type ModelStats struct {
	Name            string  `msgpack:"name" json:"name"`
	Running         int     `msgpack:"running" json:"running"`
	Waiting         int     `msgpack:"waiting" json:"waiting"`
	KVUsage         float64 `msgpack:"kv_usage" json:"kv_usage"`
	KVBlocksTotal   int     `msgpack:"kv_blocks_total" json:"kv_blocks_total"`
	KVCacheType     string  `msgpack:"kv_cache_type" json:"kv_cache_type"`
	PromptTokens    uint64  `msgpack:"prompt_tokens" json:"prompt_tokens"`
	GeneratedTokens uint64  `msgpack:"generated_tokens" json:"generated_tokens"`
	TokensPerSec    float64 `msgpack:"tokens_per_sec" json:"tokens_per_sec"`
	Finished        uint64  `msgpack:"finished" json:"finished"`
}

// Dist summarizes a latency distribution over the recent samples, in seconds.
type Dist struct {
	Count uint64  `msgpack:"count" json:"count"`
	Mean  float64 `msgpack:"mean" json:"mean"`
	P50   float64 `msgpack:"p50" json:"p50"`
	P95   float64 `msgpack:"p95" json:"p95"`
	P99   float64 `msgpack:"p99" json:"p99"`
}

// Controller is the adaptive controller's state.
type Controller struct {
	Level               string `msgpack:"level" json:"level"`
	MaxNumSeqs          int    `msgpack:"max_num_seqs" json:"max_num_seqs"`
	MaxNumBatchedTokens int    `msgpack:"max_num_batched_tokens" json:"max_num_batched_tokens"`
	Moves               uint64 `msgpack:"moves" json:"moves"`
	LastDecision        string `msgpack:"last_decision" json:"last_decision"`
}

// Plan is what the daemon planned for the hardware and model.
type Plan struct {
	Device          string `msgpack:"device" json:"device"`
	Profile         string `msgpack:"profile" json:"profile"`
	KVBlocks        int    `msgpack:"kv_blocks" json:"kv_blocks"`
	BlockSize       int    `msgpack:"block_size" json:"block_size"`
	KVCacheType     string `msgpack:"kv_cache_type" json:"kv_cache_type"` // "q8_0", or "q8_0/q4_0" (K/V)
	KVBytesPerToken int    `msgpack:"kv_bytes_per_token" json:"kv_bytes_per_token"`
	// A windowed model's sliding-window layers' own blocks: a sequence
	// holds those of its last SlidingWindow positions only.
	SlidingWindow       int      `msgpack:"sliding_window,omitempty" json:"sliding_window,omitempty"`
	KVWindowTables      int      `msgpack:"kv_window_tables,omitempty" json:"kv_window_tables,omitempty"` // blocks a window block takes
	KVBlockLayers       int      `msgpack:"kv_block_layers,omitempty" json:"kv_block_layers,omitempty"`   // layers a block holds
	MaxContext          int      `msgpack:"max_context" json:"max_context"`
	MaxNumSeqs          int      `msgpack:"max_num_seqs" json:"max_num_seqs"`
	MaxNumBatchedTokens int      `msgpack:"max_num_batched_tokens" json:"max_num_batched_tokens"`
	Threads             int      `msgpack:"threads" json:"threads"`
	Warnings            []string `msgpack:"warnings" json:"warnings"`
}

// ConfigSummary is the running configuration's live knobs.
type ConfigSummary struct {
	MaxNumSeqs          int    `msgpack:"max_num_seqs" json:"max_num_seqs"`
	MaxNumBatchedTokens int    `msgpack:"max_num_batched_tokens" json:"max_num_batched_tokens"`
	MaxPartialPrefills  int    `msgpack:"max_partial_prefills" json:"max_partial_prefills"`
	Policy              string `msgpack:"policy" json:"policy"`
	MaxQueue            int    `msgpack:"max_queue" json:"max_queue"`
	MaxRequestsPerUser  int    `msgpack:"max_requests_per_user" json:"max_requests_per_user"`
	LogLevel            string `msgpack:"log_level" json:"log_level"`
}

// RequestInfo is one request in flight: who, where, how far; never its text.
type RequestInfo struct {
	ID              uint64  `msgpack:"id" json:"id"`
	Model           string  `msgpack:"model,omitempty" json:"model,omitempty"`
	UID             uint32  `msgpack:"uid" json:"uid"`
	User            string  `msgpack:"user" json:"user"`
	Channel         string  `msgpack:"channel" json:"channel"`
	State           string  `msgpack:"state" json:"state"` // waiting or running
	AgeS            float64 `msgpack:"age_s" json:"age_s"`
	PromptTokens    int     `msgpack:"prompt_tokens" json:"prompt_tokens"`
	GeneratedTokens int     `msgpack:"generated_tokens" json:"generated_tokens"`
	MaxTokens       int     `msgpack:"max_tokens" json:"max_tokens"`
	CancelRequested bool    `msgpack:"cancel_requested" json:"cancel_requested"`
}

// HealthScore is the health score (0 to 1: 0.4 x throughput + 0.3 x latency +
// 0.2 x utilization + 0.1 x memory headroom) and its components.
type HealthScore struct {
	Score          float64 `msgpack:"score" json:"score"`
	Throughput     float64 `msgpack:"throughput" json:"throughput"`           // tokens/s over the engine's best
	Latency        float64 `msgpack:"latency" json:"latency"`                 // TTFT objective / p99 TTFT, at most 1
	Utilization    float64 `msgpack:"utilization" json:"utilization"`         // forward time / wall time
	MemoryHeadroom float64 `msgpack:"memory_headroom" json:"memory_headroom"` // KV blocks free
}

// ModelInfo describes the loaded model in a health reply.
type ModelInfo struct {
	Path    string `msgpack:"path" json:"path"`
	Format  string `msgpack:"format" json:"format"`
	Arch    string `msgpack:"arch" json:"arch"`
	Dim     int    `msgpack:"dim" json:"dim"`
	Layers  int    `msgpack:"layers" json:"layers"`
	Vocab   int    `msgpack:"vocab" json:"vocab"`
	Context int    `msgpack:"context" json:"context"`
	// Chat names the chat template chat requests render with ("" when
	// chat is off); ChatError says why chat is off.
	Chat      string `msgpack:"chat,omitempty" json:"chat,omitempty"`
	ChatError string `msgpack:"chat_error,omitempty" json:"chat_error,omitempty"`
	// ToolFormat is how the model writes tool calls ("" without chat);
	// Thinking: its template writes reasoning (a block or a channel).
	ToolFormat string `msgpack:"tool_format,omitempty" json:"tool_format,omitempty"`
	Thinking   bool   `msgpack:"thinking,omitempty" json:"thinking,omitempty"`
	// Pooling is how the file says its embeddings pool ("mean", "cls",
	// "last"; "rank": a reranker; "" when it declares none); EmbedOnly: an
	// encoder or a reranker, which does not generate.
	Pooling   string `msgpack:"pooling,omitempty" json:"pooling,omitempty"`
	EmbedOnly bool   `msgpack:"embed_only,omitempty" json:"embed_only,omitempty"`
}

// Connections are the connection budget's figures: every listener together.
type Connections struct {
	Max        int    `msgpack:"max" json:"max"`                 // open at once at most
	MaxPending int    `msgpack:"max_pending" json:"max_pending"` // of those, not yet authenticated
	PerUser    int    `msgpack:"per_user" json:"per_user"`       // one uid's authenticated ones
	Open       int    `msgpack:"open" json:"open"`
	Pending    int    `msgpack:"pending" json:"pending"`
	Refused    uint64 `msgpack:"refused" json:"refused"` // refused for room
	Evicted    uint64 `msgpack:"evicted" json:"evicted"` // unauthenticated ones closed to make room
}
