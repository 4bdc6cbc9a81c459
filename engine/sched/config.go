package sched

import (
	"errors"
	"fmt"
	"time"
)

// ErrUnknown is the error of a knob's name that no policy, mode or method has.
var ErrUnknown = errors.New("unknown name")

// Policy orders the waiting queue and chooses whom to preempt.
type Policy int

// The scheduling policies.
const (
	PolicyFCFS     Policy = iota // arrival order
	PolicyPriority               // higher Priority first, then arrival
	PolicySLO                    // earliest deadline first, channel shares, one request per user per pass
)

func (p Policy) String() string {
	switch p {
	case PolicyFCFS:
		return "fcfs"
	case PolicyPriority:
		return "priority"
	case PolicySLO:
		return "slo"
	}
	return fmt.Sprintf("policy(%d)", int(p))
}

// ParsePolicy parses "fcfs", "priority" or "slo".
func ParsePolicy(s string) (Policy, error) {
	switch s {
	case "fcfs", "":
		return PolicyFCFS, nil
	case "priority":
		return PolicyPriority, nil
	case "slo":
		return PolicySLO, nil
	}
	return 0, fmt.Errorf("%w: policy %q (want fcfs, priority or slo)", ErrUnknown, s)
}

// Mode is the batching discipline.
type Mode int

// The batching modes. Static and dynamic are request-level baselines kept for benchmarks.
const (
	ModeContinuous Mode = iota // iteration-level: join and leave at every step
	ModeStatic                 // a fixed-size batch runs until its longest member ends
	ModeDynamic                // a batch forms when full or when a wait window expires
)

func (m Mode) String() string {
	switch m {
	case ModeContinuous:
		return "continuous"
	case ModeStatic:
		return "static"
	case ModeDynamic:
		return "dynamic"
	}
	return fmt.Sprintf("mode(%d)", int(m))
}

// ParseMode parses "continuous", "static" or "dynamic".
func ParseMode(s string) (Mode, error) {
	switch s {
	case "continuous", "":
		return ModeContinuous, nil
	case "static":
		return ModeStatic, nil
	case "dynamic":
		return ModeDynamic, nil
	}
	return 0, fmt.Errorf("%w: mode %q (want continuous, static or dynamic)", ErrUnknown, s)
}

// Config holds the scheduler's knobs; zero fields take defaults.
type Config struct {
	Policy              Policy
	Mode                Mode
	MaxNumSeqs          int           // sequences running at once; default 64
	MaxNumBatchedTokens int           // tokens per step (the token budget); default 512
	MaxPartialPrefills  int           // sequences per step whose prompt chunk leaves more to do; default 1
	BatchSize           int           // static/dynamic batch size; default MaxNumSeqs
	BatchWindow         time.Duration // dynamic: wait window (default 50ms); static: flush after (default 2s)
	// Shares splits each step's admission budget between channels under the
	// slo policy (say realtime 0.5, standard 0.35, bulk 0.15); what a channel
	// leaves unused goes to the others.
	Shares map[string]float64
	// OwnSteps names channels whose sequences run in steps of their own:
	// when more than one group (each such channel, and everything else)
	// has work, steps take the groups in turn.
	OwnSteps map[string]bool
}

// WithDefaults is c with its zero fields given their defaults.
func (c Config) WithDefaults() Config { return c.withDefaults() }

func (c Config) withDefaults() Config {
	if c.MaxNumSeqs <= 0 {
		c.MaxNumSeqs = 64
	}
	if c.MaxNumBatchedTokens <= 0 {
		c.MaxNumBatchedTokens = 512
	}
	if c.MaxPartialPrefills <= 0 {
		c.MaxPartialPrefills = 1
	}
	if c.BatchSize <= 0 {
		c.BatchSize = c.MaxNumSeqs
	}
	if c.BatchWindow <= 0 {
		c.BatchWindow = 50 * time.Millisecond
		if c.Mode == ModeStatic {
			c.BatchWindow = 2 * time.Second
		}
	}
	return c
}

// ParseSpecMethod checks a speculative decoding method's name ("", "none",
// "off", "ngram", "draft"): a step's drafts follow the method
// (Sequence.Draft), and the config file names it.
func ParseSpecMethod(s string) (string, error) {
	switch s {
	case "", "none", "off":
		return "", nil
	case "ngram", "draft":
		return s, nil
	}
	return "", fmt.Errorf("%w: speculative method %q (want ngram, draft or none)", ErrUnknown, s)
}
