package config

import "reflect"

// restartField is a config field that takes effect only on restart: a
// reload reports it in restart_needed when the file changes it, and keeps
// its running value (the running daemon still uses that one).
type restartField struct {
	name  string
	value func(c *Config) any    // for comparison (reflect.DeepEqual, so *bool compares what it points to)
	carry func(dst, src *Config) // dst takes src's value
}

// field builds the entry of a plain field from where it lives in a Config.
func field[T any](name string, at func(c *Config) *T) restartField {
	return restartField{name, func(c *Config) any { return *at(c) }, func(dst, src *Config) { *at(dst) = *at(src) }}
}

// channelField builds the entry of one field of a channel; the map holds
// values, so the entry reads and writes the whole ChannelConfig.
func channelField[T any](ch, name string, at func(v *ChannelConfig) *T) restartField {
	return restartField{"channels." + ch + "." + name,
		func(c *Config) any { v := c.Channels[ch]; return *at(&v) },
		func(dst, src *Config) {
			if dst.Channels == nil {
				dst.Channels = map[string]ChannelConfig{}
			}
			v, s := dst.Channels[ch], src.Channels[ch]
			*at(&v) = *at(&s)
			dst.Channels[ch] = v
		}}
}

// restartFields is the one table of what needs a restart; everything else
// in Config applies live on reload.
func restartFields() []restartField {
	fields := []restartField{
		field("model.path", func(c *Config) *string { return &c.Model.Path }),
		field("model.name", func(c *Config) *string { return &c.Model.Name }),
		field("model.tokenizer", func(c *Config) *string { return &c.Model.Tokenizer }),
		field("model.format", func(c *Config) *string { return &c.Model.Format }),
		field("model.chat_template", func(c *Config) *string { return &c.Model.ChatTemplate }),
		field("model.chat_template_timeout", func(c *Config) *Duration { return &c.Model.ChatTemplateTimeout }),
		field("model.parse_special_in_messages", func(c *Config) *bool { return &c.Model.ParseSpecialInMessages }),
		field("model.tool_format", func(c *Config) *string { return &c.Model.ToolFormat }),
		field("server.socket", func(c *Config) *string { return &c.Server.Socket }),
		field("server.socket_mode", func(c *Config) *string { return &c.Server.SocketMode }),
		field("server.socket_group", func(c *Config) *string { return &c.Server.SocketGroup }),
		field("server.max_frame_bytes", func(c *Config) *int { return &c.Server.MaxFrameBytes }),
		field("server.max_connections", func(c *Config) *int { return &c.Server.MaxConnections }),
		field("server.hello_timeout", func(c *Config) *Duration { return &c.Server.HelloTimeout }),
		field("server.metrics_listen", func(c *Config) *string { return &c.Server.MetricsListen }),
		field("server.metrics_key", func(c *Config) *string { return &c.Server.MetricsKey }),
		field("server.http_socket", func(c *Config) *string { return &c.Server.HTTPSocket }),
		field("server.http_listen", func(c *Config) *string { return &c.Server.HTTPListen }),
		field("server.anonymous_user", func(c *Config) *string { return &c.Server.AnonymousUser }),
		field("server.responses_store_mb", func(c *Config) *int { return &c.Server.ResponsesStoreMB }),
		field("engine.block_size", func(c *Config) *int { return &c.Engine.BlockSize }),
		field("engine.kv_blocks", func(c *Config) *int { return &c.Engine.KVBlocks }),
		field("engine.threads", func(c *Config) *int { return &c.Engine.Threads }),
		field("engine.kv_cache_type", func(c *Config) *string { return &c.Engine.KVCacheType }),
		field("engine.kv_cache_type_k", func(c *Config) *string { return &c.Engine.KVCacheTypeK }),
		field("engine.kv_cache_type_v", func(c *Config) *string { return &c.Engine.KVCacheTypeV }),
		field("engine.quant_dot", func(c *Config) *string { return &c.Engine.QuantDot }),
		field("engine.speculative", func(c *Config) *string { return &c.Engine.Speculative }),
		field("engine.draft_model", func(c *Config) *string { return &c.Engine.DraftModel }),
		field("engine.draft_tokens", func(c *Config) *int { return &c.Engine.DraftTokens }),
		field("engine.draft_max_batch", func(c *Config) *int { return &c.Engine.DraftMaxBatch }),
		field("engine.prefix_caching", func(c *Config) **bool { return &c.Engine.PrefixCaching }),
		field("engine.adaptive", func(c *Config) **bool { return &c.Engine.Adaptive }),
		field("idle_exit_after", func(c *Config) *Duration { return &c.IdleExitAfter }),
		field("models_dir", func(c *Config) *string { return &c.ModelsDir }),
		field("max_loaded_models", func(c *Config) *int { return &c.MaxLoadedModels }),
		field("keep_alive", func(c *Config) *KeepAlive { return &c.KeepAlive }),
		field("models", func(c *Config) *map[string]ModelEntry { return &c.Models }),
		field("default_model", func(c *Config) *string { return &c.DefaultModel }),
		field("state_dir", func(c *Config) *string { return &c.StateDir }),
		field("prefix_cache", func(c *Config) *PrefixCacheConfig { return &c.PrefixCache }),
		field("kv_events", func(c *Config) *KVEventsConfig { return &c.KVEvents }),
	}
	// A channel's share, queue limit and deadline are the engine's from
	// start; its latency targets (metrics) apply live.
	for _, ch := range []string{"realtime", "standard", "bulk"} {
		fields = append(fields,
			channelField(ch, "share", func(v *ChannelConfig) *float64 { return &v.Share }),
			channelField(ch, "queue_limit", func(v *ChannelConfig) *int { return &v.QueueLimit }),
			channelField(ch, "deadline", func(v *ChannelConfig) *Duration { return &v.Deadline }),
			channelField(ch, "own_steps", func(v *ChannelConfig) *bool { return &v.OwnSteps }))
	}
	return fields
}

// RestartNeeded lists the restart fields whose value differs between the
// running config and next.
func RestartNeeded(running, next *Config) []string {
	var out []string
	for _, f := range restartFields() {
		if !reflect.DeepEqual(f.value(running), f.value(next)) {
			out = append(out, f.name)
		}
	}
	return out
}

// CarryRestartFields gives next the running values of every restart field:
// what reload applies is exactly the live part of next.
func CarryRestartFields(next, running *Config) {
	for _, f := range restartFields() {
		f.carry(next, running)
	}
}
