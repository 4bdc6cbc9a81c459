package config

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/batchd/batchd/backend"
	"github.com/batchd/batchd/ipc"
)

// Config is batchd's configuration. Precedence: Default() < file < env < flags.
type Config struct {
	Model  ModelConfig  `toml:"model"`
	Server ServerConfig `toml:"server"`
	Engine EngineKnobs  `toml:"engine"`
	// Channels: realtime, standard, bulk; and how requests are routed to them.
	Channels map[string]ChannelConfig `toml:"channels"`
	Routing  RoutingConfig            `toml:"routing"`
	LogLevel string                   `toml:"log_level"` // debug, info, warn, error; default info
	// DrainTimeout bounds a graceful shutdown: running requests may finish
	// for this long, then are cancelled. Keep it below systemd's TimeoutStopSec. Default 30s.
	DrainTimeout Duration `toml:"drain_timeout"`
	// IdleExitAfter makes the daemon exit cleanly after this long without
	// connections or requests; under socket activation systemd starts it
	// again on the next connect. 0 (default) never exits.
	IdleExitAfter Duration `toml:"idle_exit_after"`
	// SleepAfter releases the KV memory after this long without requests;
	// health says "sleeping" and the next request wakes it. 0 (default) never sleeps.
	SleepAfter Duration `toml:"sleep_after"`
	// SleepReleaseWeights also drops the weights' resident pages while asleep.
	SleepReleaseWeights bool `toml:"sleep_release_weights"`
	// ModelsDir holds more models: every *.gguf in it is one, named by its
	// file name, loaded when a request names it (restart).
	ModelsDir string `toml:"models_dir"`
	// MaxLoadedModels bounds the models loaded at once; the least recently
	// used idle one gives way. Default 3 (restart).
	MaxLoadedModels int `toml:"max_loaded_models"`
	// KeepAlive is how long a model other than [model]'s stays loaded once
	// idle: a duration, 0 (unload at once) or -1 (forever); a request's
	// keep_alive replaces it. Default 5m (restart).
	KeepAlive KeepAlive `toml:"keep_alive"`
	// Models are more models by name: [models.NAME] tables (restart).
	Models map[string]ModelEntry `toml:"models"`
	// DefaultModel names the model a request without one gets when
	// model.path is empty ("": such requests are refused) (restart).
	DefaultModel string `toml:"default_model"`
	// StateDir holds what outlives the process (the saved prefix cache);
	// default: systemd's $STATE_DIRECTORY (/var/lib/batchd), else none (restart).
	StateDir    string            `toml:"state_dir"`
	PrefixCache PrefixCacheConfig `toml:"prefix_cache"`
	// KVEvents publishes the prefix cache's changes for a router.
	KVEvents KVEventsConfig `toml:"kv_events"`
	// Compliance rules for regulated requests ([[compliance]]), checked at
	// start and on every reload: a config that breaks one is refused whole.
	Compliance []ComplianceRule `toml:"compliance"`

	// resolved holds what Validate parsed (users, groups, level), so that
	// the daemon parses a config once.
	resolved *Resolved
}

// ModelConfig names the model; changes need a restart.
type ModelConfig struct {
	Path string `toml:"path"` // GGUF or llama2.c file
	// Name is the name the model is served under, in every API, the
	// metrics' model_name and the KV events' topic (vLLM's
	// --served-model-name; a fleet's router and autoscaler ask for it);
	// the file's name (without .gguf) stays an alias. Default: the
	// file's name (restart).
	Name      string `toml:"name"`
	Tokenizer string `toml:"tokenizer"` // llama2.c tokenizer file
	Format    string `toml:"format"`    // "", "gguf" or "llama2c"
	// ChatTemplate renders chat requests: a built-in name (chatml, llama3,
	// gemma, phi3, mistral) or a Jinja file; "" uses the model's own.
	ChatTemplate string `toml:"chat_template"`
	// ChatTemplateTimeout bounds one render of the chat template (a
	// template is code from the model file; it renders in a worker process
	// that also has memory and stack budgets). Default 2s (restart).
	ChatTemplateTimeout Duration `toml:"chat_template_timeout"`
	// ParseSpecialInMessages lets the text of chat messages spell control
	// tokens (<|im_start|>), as llama.cpp, vLLM and Ollama do: a user can
	// then forge a system turn inside a message. Default false: a
	// message's control-token text is tokenized as text, the template's
	// own markup as tokens (restart).
	ParseSpecialInMessages bool `toml:"parse_special_in_messages"`
	// ToolFormat is how the model writes tool calls: "auto" (default:
	// detected from the chat template) or hermes, llama3, mistral-nemo,
	// phi4, deepseek-r1, harmony, qwen3-coder, gemma4, generic (restart).
	ToolFormat string `toml:"tool_format"`
}

// ServerConfig is the socket and who may use it.
type ServerConfig struct {
	Socket        string   `toml:"socket"`         // default /run/batchd/batchd.sock (restart)
	SocketMode    string   `toml:"socket_mode"`    // octal, default "0660" (restart)
	SocketGroup   string   `toml:"socket_group"`   // group owning the socket (restart)
	AllowedUsers  []string `toml:"allowed_users"`  // names or uids; empty with no groups: the socket mode decides
	AllowedGroups []string `toml:"allowed_groups"` // names or gids
	AdminUsers    []string `toml:"admin_users"`    // may see and cancel anyone's requests
	// MaxRequestsPerUser caps one uid's requests in flight; default 256, 0 = none.
	MaxRequestsPerUser int `toml:"max_requests_per_user"`
	// MaxKeepAlive caps the keep_alive a request of a user who is not an
	// admin may ask for: longer, or forever (-1), is cut to it and logged,
	// so that no user can pin every model slot. Default 1h; admins are not
	// capped.
	MaxKeepAlive  Duration `toml:"max_keep_alive"`
	MaxFrameBytes int      `toml:"max_frame_bytes"` // default 1 MiB (restart)
	// MaxConnections caps the connections open at once, every listener
	// together (msgpack, HTTP, metrics); the descriptor limit less a reserve
	// caps it too (batchd profile shows the budget). Connections not yet
	// authenticated hold at most half and give way to new ones; one user's
	// at most a quarter. Default 1024 (restart).
	MaxConnections int `toml:"max_connections"`
	// HelloTimeout closes a connection that has not said hello in this
	// long. Default 10s (restart).
	HelloTimeout Duration `toml:"hello_timeout"`
	// MetricsListen serves Prometheus metrics at /metrics on a loopback
	// host:port or unix:PATH; "" (default) serves none (restart).
	MetricsListen string `toml:"metrics_listen"`
	// MetricsKey, when set, is the bearer token a scraper must send
	// (Prometheus: authorization.credentials); "" admits any local scraper.
	// At least 16 bytes (restart).
	MetricsKey string `toml:"metrics_key"`
	// HTTPSocket serves the OpenAI-compatible HTTP API on this Unix
	// socket, with socket_mode, socket_group and the same access rules;
	// "" (default) serves none (restart).
	HTTPSocket string `toml:"http_socket"`
	// HTTPListen also serves it on TCP (host:port; a bare :port is
	// loopback), where clients need a key from APIKeys; "" is off (restart).
	HTTPListen string `toml:"http_listen"`
	// APIKeys maps user names or uids to the bearer key that admits them
	// over TCP; their requests run as that user (quotas, channels).
	APIKeys map[string]string `toml:"api_keys"`
	// AnonymousUser lets a TCP request without a key run as this user (a
	// name or uid: its caps, channels and routing), for clients that send
	// none (Ollama's); "" (default) answers them 401 (restart).
	AnonymousUser string `toml:"anonymous_user"`
	// ResponsesStoreMB bounds, in MiB over every user, the responses
	// /v1/responses and the socket's submits keep for
	// previous_response_id and GET (store: true), one store for both;
	// the least recently used go first. 0 keeps none (restart).
	ResponsesStoreMB int `toml:"responses_store_mb"`
}

// ChannelConfig is one QoS channel's objectives and limits.
type ChannelConfig struct {
	TTFTTarget Duration `toml:"ttft_target"` // time-to-first-token objective (SLO attainment in metrics)
	ITLTarget  Duration `toml:"itl_target"`  // inter-token latency objective
	Share      float64  `toml:"share"`       // of each step's admission budget under policy "slo" (restart)
	QueueLimit int      `toml:"queue_limit"` // waiting requests; 0 = only engine.max_queue (restart)
	Deadline   Duration `toml:"deadline"`    // first token due within this, else rejected; 0 = none (restart)
	// Isolated: the channel's requests share prefix-cache blocks only with
	// the same user's (a per-user salt in the block hash, as vLLM's
	// cache_salt), so no one learns another's prompt from a cache hit.
	Isolated bool `toml:"isolated"`
	// OwnSteps runs the channel's requests in forward steps of their own,
	// never batched with another channel's (steps alternate while both
	// have work) (restart).
	OwnSteps bool `toml:"own_steps"`
}

// RoutingConfig puts requests without an explicit channel on one.
type RoutingConfig struct {
	Tags             map[string]string `toml:"tags"`               // request tag -> channel
	Users            map[string]string `toml:"users"`              // user name or uid -> default channel
	BulkPromptTokens int               `toml:"bulk_prompt_tokens"` // prompts this long or longer go to bulk; 0 = off
}

// EngineKnobs shape the engine. Scheduler knobs and MaxQueue apply live.
type EngineKnobs struct {
	// Zero means "from the hardware profile and memory plan" (batchd profile shows it).
	BlockSize     int   `toml:"block_size"`     // tokens per KV block (restart)
	KVBlocks      int   `toml:"kv_blocks"`      // KV blocks (restart)
	Threads       int   `toml:"threads"`        // CPU threads (restart)
	PrefixCaching *bool `toml:"prefix_caching"` // default true (restart)
	// KVCacheType is how K and V are stored: f16 (default), f32, or a
	// block format as llama.cpp's -ctk/-ctv (q8_0, q4_0, q5_0, iq4_nl); KVCacheTypeK and KVCacheTypeV set K's or V's alone (restart).
	KVCacheType         string `toml:"kv_cache_type"`
	KVCacheTypeK        string `toml:"kv_cache_type_k"`
	KVCacheTypeV        string `toml:"kv_cache_type_v"`
	QuantDot            string `toml:"quant_dot"`              // auto (default: int8 with AVX512-VNNI, else prompts float and generated tokens int8), float (exact) or int8 (restart)
	Speculative         string `toml:"speculative"`            // speculative decoding: ngram, draft, or "" (default: off) (restart)
	DraftModel          string `toml:"draft_model"`            // the draft model's file (the model's vocabulary) for speculative = "draft", which it implies (restart)
	DraftTokens         int    `toml:"draft_tokens"`           // tokens drafted per step; default 4 (restart)
	DraftMaxBatch       int    `toml:"draft_max_batch"`        // drafting stops above this many decoding sequences (below, where it stops paying); default 16 (restart)
	MaxNumSeqs          int    `toml:"max_num_seqs"`           // sequences running at once
	MaxNumBatchedTokens int    `toml:"max_num_batched_tokens"` // tokens per step
	MaxPartialPrefills  int    `toml:"max_partial_prefills"`   // default 1
	Policy              string `toml:"policy"`                 // fcfs or priority; default fcfs
	// Mode is continuous (default: iteration-level batching, no window),
	// dynamic (a batch starts when full or when BatchWindow has passed
	// since its first request) or static (request-level batches).
	Mode        string   `toml:"mode"`
	BatchWindow Duration `toml:"batch_window"` // dynamic/static: how long a batch waits to fill; default 50ms / 2s
	MaxQueue    int      `toml:"max_queue"`    // waiting requests before queue_full; default 1024
	// Adaptive lets the controller move the effective max_num_seqs and token
	// budget with the load, never above the configured or planned ones,
	// against the realtime channel's latency targets. Default true (restart).
	Adaptive *bool `toml:"adaptive"`
}

// Duration is a time.Duration written as "30s" in TOML.
type Duration struct{ time.Duration }

// UnmarshalText parses a Go duration string.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	d.Duration = v
	return err
}

// MarshalText writes the duration as a Go duration string.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// Default returns the built-in configuration.
func Default() Config {
	t := true
	return Config{
		Server: ServerConfig{Socket: "/run/batchd/batchd.sock", SocketMode: "0660", MaxRequestsPerUser: 256, MaxKeepAlive: Duration{time.Hour},
			MaxFrameBytes: 1 << 20, MaxConnections: ipc.DefaultMaxConnections, HelloTimeout: Duration{ipc.DefaultHelloTimeout},
			ResponsesStoreMB: 256},
		Engine: EngineKnobs{PrefixCaching: &t, MaxPartialPrefills: 1, Policy: "fcfs", MaxQueue: 1024, Adaptive: &t, QuantDot: backend.DefaultQuantDot},
		Channels: map[string]ChannelConfig{
			"realtime": {TTFTTarget: Duration{500 * time.Millisecond}, ITLTarget: Duration{100 * time.Millisecond},
				Share: 0.5, Deadline: Duration{10 * time.Second}},
			"standard": {TTFTTarget: Duration{2 * time.Second}, ITLTarget: Duration{250 * time.Millisecond},
				Share: 0.35, Deadline: Duration{2 * time.Minute}},
			"bulk": {TTFTTarget: Duration{30 * time.Second}, Share: 0.15, Deadline: Duration{30 * time.Minute}},
		},
		Routing:         RoutingConfig{BulkPromptTokens: 2048},
		LogLevel:        "info",
		DrainTimeout:    Duration{30 * time.Second},
		MaxLoadedModels: DefaultMaxLoaded,
		KeepAlive:       KeepAlive{5 * time.Minute},
	}
}

// LoadFile reads path over the defaults; unknown keys are an error.
func LoadFile(path string) (Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Default(), fmt.Errorf("config %s: %w", path, err)
	}
	c, _, err := Parse(path, b)
	return c, err
}

// Parse decodes a config file's bytes over the defaults and reports how
// many keys it set (none: an empty file, which a reload refuses).
func Parse(path string, b []byte) (Config, int, error) {
	c := Default()
	md, err := toml.Decode(string(b), &c)
	if err != nil {
		return c, 0, fmt.Errorf("config %s: %w", path, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		return c, 0, fmt.Errorf("config %s: unknown keys %v", path, und)
	}
	return c, len(md.Keys()), nil
}

// ApplyEnv overrides from BATCHD_MODEL, BATCHD_TOKENIZER, BATCHD_SOCKET and
// BATCHD_LOG_LEVEL; getenv is os.Getenv outside tests.
func (c *Config) ApplyEnv(getenv func(string) string) {
	set := func(dst *string, key string) {
		if v := getenv(key); v != "" {
			*dst = v
		}
	}
	set(&c.Model.Path, "BATCHD_MODEL")
	set(&c.Model.Tokenizer, "BATCHD_TOKENIZER")
	set(&c.Server.Socket, "BATCHD_SOCKET")
	set(&c.Server.HTTPSocket, "BATCHD_HTTP_SOCKET")
	set(&c.LogLevel, "BATCHD_LOG_LEVEL")
	if c.StateDir == "" { // systemd's StateDirectory= (the first, if several)
		c.StateDir, _, _ = strings.Cut(getenv("STATE_DIRECTORY"), ":")
	}
}
