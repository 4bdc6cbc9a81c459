package sched

import (
	"fmt"
	"time"
)

// LoadLevel classifies the load the controller sees.
type LoadLevel int

// The load levels.
const (
	LoadIdle LoadLevel = iota
	LoadLow
	LoadNormal
	LoadHigh
	LoadCritical // a latency target is breached
)

func (l LoadLevel) String() string {
	return [...]string{"idle", "low", "normal", "high", "critical"}[l]
}

// ControllerConfig bounds the adaptive controller.
type ControllerConfig struct {
	MinSeqs, MaxSeqs     int           // effective max_num_seqs moves within these (MaxSeqs: the hard limit)
	MinTokens, MaxTokens int           // effective token budget moves within these
	TTFTTarget           time.Duration // the tightest channel's objectives
	ITLTarget            time.Duration
	Cooldown             time.Duration // between growth moves; default 5s
	Interval             time.Duration // how often the engine observes; default 500ms
}

func (c ControllerConfig) withDefaults() ControllerConfig {
	if c.Cooldown <= 0 {
		c.Cooldown = 5 * time.Second
	}
	if c.Interval <= 0 {
		c.Interval = 500 * time.Millisecond
	}
	c.MinSeqs = max(c.MinSeqs, 1)
	c.MaxSeqs = max(c.MaxSeqs, c.MinSeqs)
	c.MinTokens = max(c.MinTokens, 1)
	c.MaxTokens = max(c.MaxTokens, c.MinTokens)
	return c
}

// Observation is what the engine measured over the last interval.
type Observation struct {
	Now         time.Time
	QPS         float64 // arrivals per second
	Queue       int     // waiting requests
	Running     int
	P95TTFT     time.Duration // over recent requests; 0 if none
	P95ITL      time.Duration
	Utilization float64 // share of the interval spent in forward passes
}

// Decision is the controller's output: the effective limits and why.
type Decision struct {
	Seqs, Tokens int
	Level        LoadLevel
	Reason       string
}

// Controller moves the effective max batch and token budget with the load:
// it shrinks at once when latency breaches its target, grows when a queue
// builds and latency has room (at most once per cooldown, with hysteresis:
// growth needs latency under 70% of target), and jumps straight to the
// needed size on a sudden load step. It is a pure state machine: time comes
// in the observations, so tests drive it with a fake clock.
type Controller struct {
	cfg          ControllerConfig
	seqs, tokens int
	level        LoadLevel
	lastMove     time.Time
	moves        uint64
	last         string
}

// NewController starts at the given limits (clamped to the bounds).
func NewController(cfg ControllerConfig, seqs, tokens int) *Controller {
	cfg = cfg.withDefaults()
	return &Controller{cfg: cfg, seqs: clamp(seqs, cfg.MinSeqs, cfg.MaxSeqs),
		tokens: clamp(tokens, cfg.MinTokens, cfg.MaxTokens)}
}

func clamp(v, lo, hi int) int { return min(max(v, lo), hi) }

// Interval returns how often the controller wants an observation.
func (c *Controller) Interval() time.Duration { return c.cfg.Interval }

// Limits returns the current effective limits.
func (c *Controller) Limits() (seqs, tokens int) { return c.seqs, c.tokens }

// State describes the controller for stats.
func (c *Controller) State() ControllerState {
	return ControllerState{Level: c.level.String(), MaxNumSeqs: c.seqs, MaxNumBatchedTokens: c.tokens,
		Moves: c.moves, LastDecision: c.last}
}

// ControllerState is the adaptive controller's figures in Stats.
type ControllerState struct {
	Level               string `json:"level"`
	MaxNumSeqs          int    `json:"max_num_seqs"`
	MaxNumBatchedTokens int    `json:"max_num_batched_tokens"`
	Moves               uint64 `json:"moves"`
	LastDecision        string `json:"last_decision"`
}

func (c *Controller) classify(o Observation) LoadLevel {
	breach := (c.cfg.TTFTTarget > 0 && o.P95TTFT > c.cfg.TTFTTarget) ||
		(c.cfg.ITLTarget > 0 && o.P95ITL > c.cfg.ITLTarget)
	switch {
	case breach:
		return LoadCritical
	case o.Queue > 0 && o.Utilization > 0.8:
		return LoadHigh
	case o.Queue > 0 || o.Utilization > 0.3:
		return LoadNormal
	case o.Running > 0 || o.QPS > 0:
		return LoadLow
	}
	return LoadIdle
}

// roomy reports whether latency is comfortably under target (hysteresis).
func (c *Controller) roomy(o Observation) bool {
	ok := func(v, target time.Duration) bool { return target <= 0 || v < target*7/10 }
	return ok(o.P95TTFT, c.cfg.TTFTTarget) && ok(o.P95ITL, c.cfg.ITLTarget)
}

// Observe takes one observation and returns the decision, and whether the
// limits changed.
func (c *Controller) Observe(o Observation) (Decision, bool) {
	c.level = c.classify(o)
	seqs, tokens, reason := c.seqs, c.tokens, ""
	switch {
	case c.level == LoadCritical:
		// Latency first: smaller steps now, whatever the cooldown.
		seqs, tokens = max(c.cfg.MinSeqs, seqs*3/4), max(c.cfg.MinTokens, tokens*3/4)
		reason = fmt.Sprintf("latency over target (p95 ttft %v, itl %v): shrink", o.P95TTFT, o.P95ITL)
	case o.Queue >= 2*c.seqs && c.roomy(o):
		// A sudden load step: go straight to what the queue needs.
		seqs, tokens = clamp(o.Queue+o.Running, c.cfg.MinSeqs, c.cfg.MaxSeqs), c.cfg.MaxTokens
		reason = fmt.Sprintf("load step (queue %d): jump", o.Queue)
	case c.level == LoadHigh && c.roomy(o) && o.Now.Sub(c.lastMove) >= c.cfg.Cooldown:
		seqs, tokens = min(c.cfg.MaxSeqs, seqs+max(1, seqs/4)), min(c.cfg.MaxTokens, tokens+max(1, tokens/4))
		reason = fmt.Sprintf("queue %d with latency to spare: grow", o.Queue)
	}
	changed := seqs != c.seqs || tokens != c.tokens
	if changed {
		c.seqs, c.tokens, c.lastMove, c.last = seqs, tokens, o.Now, reason
		c.moves++
	}
	return Decision{Seqs: c.seqs, Tokens: c.tokens, Level: c.level, Reason: reason}, changed
}
