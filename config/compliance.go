package config

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// ComplianceRule binds regulated requests (those carrying one of Tags:
// medical, banking, ...) to a channel and bounds what the config may do to
// them. Every rule is checked at start and on each reload; a config that
// breaks one is refused whole, with a message naming the rule, and the
// running config stays.
type ComplianceRule struct {
	Name string   `toml:"name"`
	Tags []string `toml:"tags"`
	// Channel the tagged requests must run in: routing.tags must send
	// each tag there, and a request naming another channel is refused.
	Channel string `toml:"channel"`
	// MaxBatchWindow bounds engine.batch_window where batches wait to
	// fill (mode dynamic or static; continuous batching has no window).
	MaxBatchWindow Duration `toml:"max_batch_window"`
	// MaxDeadline and MaxTTFTTarget bound the channel's deadline (which
	// must then be set) and TTFT objective.
	MaxDeadline   Duration `toml:"max_deadline"`
	MaxTTFTTarget Duration `toml:"max_ttft_target"`
	// Isolated requires the channel to be isolated (no prefix-cache
	// sharing across users); OwnSteps, to run in steps of its own.
	Isolated bool `toml:"isolated"`
	OwnSteps bool `toml:"own_steps"`
}

// checkCompliance checks every rule against the rest of the config.
func (c *Config) checkCompliance() error {
	var errs []error
	for i, r := range c.Compliance {
		name := r.Name
		if name == "" {
			name = "#" + strconv.Itoa(i+1)
		}
		fail := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("compliance rule %s: "+format, append([]any{name}, args...)...))
		}
		if !IsChannel(r.Channel) || len(r.Tags) == 0 {
			fail("needs tags and a channel (realtime, standard or bulk), has %v and %q", r.Tags, r.Channel)
			continue
		}
		for _, t := range r.Tags {
			if got := c.Routing.Tags[t]; got != r.Channel {
				fail("tag %q must route to channel %s (routing.tags.%s = %q)", t, r.Channel, t, got)
			}
		}
		ch := c.Channels[r.Channel]
		mode := c.Engine.Mode
		if w := c.batchWindow(); mode != "" && mode != "continuous" && r.MaxBatchWindow.Duration > 0 && w > r.MaxBatchWindow.Duration {
			fail("engine.batch_window %v (mode %s) is over its max_batch_window %v", w, mode, r.MaxBatchWindow.Duration)
		}
		if m := r.MaxDeadline.Duration; m > 0 && (ch.Deadline.Duration == 0 || ch.Deadline.Duration > m) {
			fail("channels.%s.deadline %v is over its max_deadline %v (0 is none)", r.Channel, ch.Deadline.Duration, m)
		}
		if m := r.MaxTTFTTarget.Duration; m > 0 && (ch.TTFTTarget.Duration == 0 || ch.TTFTTarget.Duration > m) {
			fail("channels.%s.ttft_target %v is over its max_ttft_target %v", r.Channel, ch.TTFTTarget.Duration, m)
		}
		if r.Isolated && !ch.Isolated {
			fail("channels.%s must be isolated (isolated = true)", r.Channel)
		}
		if r.OwnSteps && !ch.OwnSteps {
			fail("channels.%s must run in steps of its own (own_steps = true)", r.Channel)
		}
	}
	return errors.Join(errs...)
}

// batchWindow is the engine's effective window (the scheduler's defaults).
func (c *Config) batchWindow() time.Duration {
	if w := c.Engine.BatchWindow.Duration; w > 0 {
		return w
	}
	if c.Engine.Mode == "static" {
		return 2 * time.Second
	}
	return 50 * time.Millisecond
}
