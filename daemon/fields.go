package daemon

import (
	"fmt"
	"reflect"
)

// restartField is a config field that takes effect only on restart: a
// reload reports it in restart_needed when the file changes it, and keeps
// its running value (the running daemon still uses that one).
type restartField struct {
	name string
	ptr  func(c *Config) any // a pointer to the field
}

// restartFields is the one table of what needs a restart; everything else
// in Config applies live on reload.
func restartFields() []restartField {
	fields := []restartField{
		{"model.path", func(c *Config) any { return &c.Model.Path }},
		{"model.tokenizer", func(c *Config) any { return &c.Model.Tokenizer }},
		{"model.format", func(c *Config) any { return &c.Model.Format }},
		{"server.socket", func(c *Config) any { return &c.Server.Socket }},
		{"server.socket_mode", func(c *Config) any { return &c.Server.SocketMode }},
		{"server.socket_group", func(c *Config) any { return &c.Server.SocketGroup }},
		{"server.max_frame_bytes", func(c *Config) any { return &c.Server.MaxFrameBytes }},
		{"server.max_connections", func(c *Config) any { return &c.Server.MaxConnections }},
		{"server.hello_timeout", func(c *Config) any { return &c.Server.HelloTimeout }},
		{"server.metrics_listen", func(c *Config) any { return &c.Server.MetricsListen }},
		{"engine.block_size", func(c *Config) any { return &c.Engine.BlockSize }},
		{"engine.kv_blocks", func(c *Config) any { return &c.Engine.KVBlocks }},
		{"engine.threads", func(c *Config) any { return &c.Engine.Threads }},
		{"engine.kv_cache_type", func(c *Config) any { return &c.Engine.KVCacheType }},
		{"engine.prefix_caching", func(c *Config) any { return &c.Engine.PrefixCaching }},
		{"engine.adaptive", func(c *Config) any { return &c.Engine.Adaptive }},
		{"idle_exit_after", func(c *Config) any { return &c.IdleExitAfter }},
	}
	// A channel's share, queue limit and deadline are the engine's from
	// start; its latency targets (metrics) apply live.
	for _, ch := range []string{"realtime", "standard", "bulk"} {
		for _, f := range []string{"share", "queue_limit", "deadline"} {
			fields = append(fields, restartField{"channels." + ch + "." + f, channelField(ch, f)})
		}
	}
	return fields
}

// channelField points into a copy-on-write channel entry: the map holds
// values, so the pointer is to a fresh copy that carry writes back.
func channelField(ch, f string) func(c *Config) any {
	return func(c *Config) any {
		return &channelRef{c: c, ch: ch, f: f}
	}
}

// channelRef reads and writes one field of one channel of a Config.
type channelRef struct {
	c     *Config
	ch, f string
}

func (r *channelRef) get() any {
	v := r.c.Channels[r.ch]
	switch r.f {
	case "share":
		return v.Share
	case "queue_limit":
		return v.QueueLimit
	}
	return v.Deadline
}

func (r *channelRef) set(x any) {
	if r.c.Channels == nil {
		r.c.Channels = map[string]ChannelConfig{}
	}
	v := r.c.Channels[r.ch]
	switch r.f {
	case "share":
		v.Share = x.(float64)
	case "queue_limit":
		v.QueueLimit = x.(int)
	default:
		v.Deadline = x.(Duration)
	}
	r.c.Channels[r.ch] = v
}

func fieldValue(p any) any {
	if r, ok := p.(*channelRef); ok {
		return r.get()
	}
	v := reflect.ValueOf(p).Elem()
	if v.Kind() == reflect.Pointer && !v.IsNil() { // *bool knobs: compare what they point to
		return v.Elem().Interface()
	}
	return v.Interface()
}

// restartNeeded lists the restart fields whose value differs between the
// running config and next.
func restartNeeded(running, next *Config) []string {
	var out []string
	for _, f := range restartFields() {
		if !reflect.DeepEqual(fieldValue(f.ptr(running)), fieldValue(f.ptr(next))) {
			out = append(out, f.name)
		}
	}
	return out
}

// carryRestartFields gives next the running values of every restart field:
// what reload applies is exactly the live part of next.
func carryRestartFields(next, running *Config) {
	for _, f := range restartFields() {
		dst, src := f.ptr(next), f.ptr(running)
		if r, ok := dst.(*channelRef); ok {
			r.set(src.(*channelRef).get())
			continue
		}
		reflect.ValueOf(dst).Elem().Set(reflect.ValueOf(src).Elem())
	}
}

func (f restartField) String() string { return fmt.Sprintf("restart field %s", f.name) }
