package config

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"

	"github.com/batchd/batchd/backend"
	"github.com/batchd/batchd/engine/sched"
	"github.com/batchd/batchd/ipc"
	"github.com/batchd/batchd/toolcall"
)

// IsChannel says whether name is a QoS channel: realtime, standard or bulk.
func IsChannel(name string) bool {
	return name == "realtime" || name == "standard" || name == "bulk"
}

// Validate reports every problem at once.
func (c *Config) Validate() error {
	var errs []error
	if c.Model.Path == "" && !c.MultiModel() {
		errs = append(errs, errors.New("model.path is required (or models_dir, or [models.NAME] tables)"))
	} else if c.Model.Path == "" {
		// Models load when requests name them; default_model names the one
		// a request without a model gets.
	} else if _, err := os.Stat(c.Model.Path); err != nil {
		errs = append(errs, fmt.Errorf("model.path: %w", err))
	}
	if c.Model.Format != "" && c.Model.Format != "gguf" && c.Model.Format != "llama2c" {
		errs = append(errs, fmt.Errorf("model.format %q: want gguf or llama2c", c.Model.Format))
	}
	if c.Server.Socket == "" {
		errs = append(errs, errors.New("server.socket is required"))
	}
	if m, err := strconv.ParseUint(c.Server.SocketMode, 8, 32); err != nil || m > 0o777 {
		errs = append(errs, fmt.Errorf("server.socket_mode %q: want an octal mode such as 0660", c.Server.SocketMode))
	}
	pol, err := resolvePolicy(c.Server)
	if err != nil {
		errs = append(errs, err)
	}
	for _, f := range []struct {
		name string
		v    int
		min  int
	}{
		{"server.max_requests_per_user", c.Server.MaxRequestsPerUser, 0},
		{"server.max_frame_bytes", c.Server.MaxFrameBytes, 1024},
		{"server.max_connections", c.Server.MaxConnections, 1},
		{"server.responses_store_mb", c.Server.ResponsesStoreMB, 0},
		{"engine.block_size", c.Engine.BlockSize, 0},
		{"engine.kv_blocks", c.Engine.KVBlocks, 0},
		{"engine.threads", c.Engine.Threads, 0},
		{"engine.max_num_seqs", c.Engine.MaxNumSeqs, 0},
		{"engine.max_num_batched_tokens", c.Engine.MaxNumBatchedTokens, 0},
		{"engine.max_partial_prefills", c.Engine.MaxPartialPrefills, 1},
		{"engine.max_queue", c.Engine.MaxQueue, 1},
	} {
		if f.v < f.min {
			errs = append(errs, fmt.Errorf("%s = %d, must be >= %d", f.name, f.v, f.min))
		}
	}
	errs = append(errs, c.Engine.validateNames()...)
	errs = append(errs, c.validateChannels()...)
	if err := c.KVEvents.validate(); err != nil {
		errs = append(errs, err)
	}
	users, err := resolveUserChannels(c.Routing.Users)
	if err != nil {
		errs = append(errs, err)
	}
	level, err := parseLevel(c.LogLevel)
	if err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, c.validateDurations()...)
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := errors.Join(c.checkCompliance(), c.PrefixCache.check()); err != nil {
		return err
	}
	keys, anon, err := resolveAPIKeys(c.Server)
	if err != nil {
		return err
	}
	c.resolved = &Resolved{Policy: pol, UserChannels: users, Level: level, APIKeys: keys, Anonymous: anon}
	return nil
}

// validateChannels checks the channels and the routing to them.
func (c *Config) validateChannels() []error {
	var errs []error
	for name, ch := range c.Channels {
		if !IsChannel(name) {
			errs = append(errs, fmt.Errorf("channels.%s: want realtime, standard or bulk", name))
		}
		if ch.Share < 0 || ch.Share > 1 || ch.QueueLimit < 0 || ch.Deadline.Duration < 0 {
			errs = append(errs, fmt.Errorf("channels.%s: share in [0, 1], queue_limit and deadline >= 0", name))
		}
	}
	for tag, ch := range c.Routing.Tags {
		if !IsChannel(ch) {
			errs = append(errs, fmt.Errorf("routing.tags.%s = %q: want realtime, standard or bulk", tag, ch))
		}
	}
	return errs
}

// validateDurations checks the durations.
func (c *Config) validateDurations() []error {
	var errs []error
	if _, err := toolcall.ParseFormat(c.Model.ToolFormat); err != nil {
		errs = append(errs, fmt.Errorf("model.tool_format: %w", err))
	}
	if c.Model.ChatTemplateTimeout.Duration < 0 {
		errs = append(errs, fmt.Errorf("model.chat_template_timeout %v must be >= 0", c.Model.ChatTemplateTimeout))
	}
	if c.Server.HelloTimeout.Duration <= 0 {
		errs = append(errs, fmt.Errorf("server.hello_timeout %v must be > 0", c.Server.HelloTimeout))
	}
	if c.DrainTimeout.Duration < 0 || c.IdleExitAfter.Duration < 0 || c.SleepAfter.Duration < 0 {
		errs = append(errs, fmt.Errorf("drain_timeout %v, idle_exit_after %v and sleep_after %v must be >= 0",
			c.DrainTimeout, c.IdleExitAfter, c.SleepAfter))
	}
	return append(errs, c.validateModels()...)
}

// validateNames checks the engine knobs that are names.
func (e EngineKnobs) validateNames() []error {
	var errs []error
	if _, err := backend.ParseQuantDot(e.QuantDot); err != nil {
		errs = append(errs, fmt.Errorf("engine.quant_dot: %w", err))
	}
	if _, err := sched.ParseSpecMethod(e.Speculative); err != nil {
		errs = append(errs, fmt.Errorf("engine.speculative: %w", err))
	}
	if err := checkDraft(e.Speculative, e.DraftModel); err != nil {
		errs = append(errs, fmt.Errorf("engine: %w", err))
	}
	if e.DraftTokens < 0 || e.DraftTokens > 32 || e.DraftMaxBatch < 0 {
		errs = append(errs, fmt.Errorf("engine.draft_tokens = %d, draft_max_batch = %d: want 0 to 32 and >= 0", e.DraftTokens, e.DraftMaxBatch))
	}
	if _, err := backend.ParseKV(e.KVCacheType, e.KVCacheTypeK, e.KVCacheTypeV); err != nil {
		errs = append(errs, fmt.Errorf("engine.kv_cache_type: %w", err))
	}
	if _, err := sched.ParsePolicy(e.Policy); err != nil {
		errs = append(errs, fmt.Errorf("engine.policy: %w", err))
	}
	if _, err := sched.ParseMode(e.Mode); err != nil {
		errs = append(errs, fmt.Errorf("engine.mode: %w", err))
	}
	if e.BatchWindow.Duration < 0 {
		errs = append(errs, fmt.Errorf("engine.batch_window %v: want >= 0", e.BatchWindow.Duration))
	}
	return errs
}

// Scheduler returns the scheduler knobs the file sets (zeros: the plan's).
func (c *Config) Scheduler() sched.Config {
	p, _ := sched.ParsePolicy(c.Engine.Policy)
	m, _ := sched.ParseMode(c.Engine.Mode)
	return sched.Config{Policy: p, MaxNumSeqs: c.Engine.MaxNumSeqs, Mode: m, BatchWindow: c.Engine.BatchWindow.Duration,
		MaxNumBatchedTokens: c.Engine.MaxNumBatchedTokens, MaxPartialPrefills: c.Engine.MaxPartialPrefills}
}

// resolveUserChannels maps routing.users keys (names or uids) to uids.
func resolveUserChannels(users map[string]string) (map[uint32]string, error) {
	out := map[uint32]string{}
	var errs []error
	for name, ch := range users {
		if !IsChannel(ch) {
			errs = append(errs, fmt.Errorf("routing.users.%s = %q: want realtime, standard or bulk", name, ch))
			continue
		}
		uids, err := ipc.ResolveUsers([]string{name})
		if err != nil {
			errs = append(errs, fmt.Errorf("routing.users: %w", err))
			continue
		}
		out[uids[0]] = ch
	}
	return out, errors.Join(errs...)
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(strings.ToLower(s))); err != nil {
		return l, fmt.Errorf("log_level %q: want debug, info, warn or error", s)
	}
	return l, nil
}

func resolvePolicy(s ServerConfig) (ipc.Policy, error) {
	var errs []error
	users, err := ipc.ResolveUsers(s.AllowedUsers)
	errs = append(errs, err)
	groups, err := ipc.ResolveGroups(s.AllowedGroups)
	errs = append(errs, err)
	admins, err := ipc.ResolveUsers(s.AdminUsers)
	errs = append(errs, err)
	return ipc.Policy{AllowedUIDs: users, AllowedGIDs: groups, AdminUIDs: admins, Self: uint32(os.Getuid()),
		MaxRequestsPerUser: s.MaxRequestsPerUser}, errors.Join(errs...)
}
