package daemon

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/batchd/batchd/config"

	"github.com/batchd/batchd/engine"
	"github.com/batchd/batchd/engine/sched"
	"github.com/batchd/batchd/grammar"
	"github.com/batchd/batchd/httpapi"
	"github.com/batchd/batchd/ipc"
	"github.com/batchd/batchd/ipc/wire"
	"github.com/batchd/batchd/kvevents"
	"github.com/batchd/batchd/serve/models"
)

// State is the daemon's lifecycle state, as health reports it.
type State int32

// The states.
const (
	StateLoading State = iota
	StateReady
	StateSleeping
	StateDraining
)

func (s State) String() string {
	switch s {
	case StateLoading:
		return "loading"
	case StateReady:
		return "ready"
	case StateSleeping:
		return "sleeping"
	case StateDraining:
		return "draining"
	}
	return "state(" + strconv.Itoa(int(s)) + ")"
}

// ServeFlags are the command-line overrides of `batchd serve`; Config is
// also the file that reload watches.
type ServeFlags struct {
	Config, Model, Tokenizer, ChatTemplate, Socket, LogLevel, Metrics string
	HTTPSocket, HTTPListen                                            string
}

// Daemon is a running batchd: socket server, engine and config.
type Daemon struct {
	flags    ServeFlags
	getenv   func(string) string
	level    slog.LevelVar
	log      *slog.Logger
	notifier notifier
	srv      *ipc.Server
	state    atomic.Int32
	ready    chan struct{}

	mu         sync.Mutex
	cfg        config.Config
	rt         *Runtime
	reloads    int
	reloadErrs int
	lastErr    string
	restart    []string
	// approved is the config an operator last let apply (the file's values,
	// restart fields too): a file change is judged against it (widenedAccess).
	approved config.Config
	// held: how the config file on disk would widen access, until an
	// explicit reload applies it (reported in stats).
	held []string
	// activatedHTTP: HTTP API sockets systemd passed.
	activatedHTTP []net.Listener
	// kvPub publishes the prefix cache's events (kv_events), nil when off;
	// kvPod is this replica's name in their topics.
	kvPub   *kvevents.Publisher
	kvPod   string
	httpSrv *httpapi.Server
	// conns is the one connection budget of every listener.
	conns *ipc.Budget
	// grammars caches compiled structured-output grammars.
	grammars *grammar.Cache
	// wrapListener, when set (tests), wraps the socket's listener.
	wrapListener func(net.Listener) net.Listener
	// started lists the components in start order; shutdown closes them
	// in reverse.
	started []component
	// models loads and unloads the models; rt is the default model's
	// runtime (pinned). ids and gate are shared by every model's engine;
	// multi: the config names models beside the default (KV shares).
	models *models.Manager
	ids    atomic.Uint64
	gate   *engine.ComputeGate
	met    *metrics
	multi  bool
}

// component is a started part of the daemon and how to close it.
type component struct {
	name  string
	close func(context.Context) error
}

func (d *Daemon) onStop(name string, close func(context.Context) error) {
	d.started = append(d.started, component{name, close})
}

// loadConfig builds the configuration: defaults, file, env, flags.
func (d *Daemon) loadConfig() (config.Config, error) {
	if d.flags.Config == "" {
		return d.configFrom(config.Default())
	}
	c, err := config.LoadFile(d.flags.Config)
	if err != nil {
		return c, err
	}
	return d.configFrom(c)
}

// configFrom applies the environment and flags over a parsed file and validates.
func (d *Daemon) configFrom(c config.Config) (config.Config, error) {
	c.ApplyEnv(d.getenv)
	for _, f := range []struct {
		dst *string
		v   string
	}{{&c.Model.Path, d.flags.Model}, {&c.Model.Tokenizer, d.flags.Tokenizer},
		{&c.Model.ChatTemplate, d.flags.ChatTemplate},
		{&c.Server.Socket, d.flags.Socket}, {&c.LogLevel, d.flags.LogLevel}, {&c.Server.MetricsListen, d.flags.Metrics},
		{&c.Server.HTTPSocket, d.flags.HTTPSocket}, {&c.Server.HTTPListen, d.flags.HTTPListen}} {
		if f.v != "" {
			*f.dst = f.v
		}
	}
	return c, c.Validate()
}

// route picks the channel of a request that did not name one.
func (d *Daemon) route(uid uint32, tags []string, promptTokens int) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cfg.Route(uid, tags, promptTokens)
}

// ttftTarget returns a channel's TTFT objective from the live config.
func (d *Daemon) ttftTarget(channel string) time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cfg.Channels[channel].TTFTTarget.Duration
}

// State returns the lifecycle state.
func (d *Daemon) State() State {
	st := State(d.state.Load())
	if st == StateReady {
		if rt := d.runtime(); rt != nil && rt.Engine.Sleeping() {
			return StateSleeping
		}
	}
	return st
}

func (d *Daemon) runtime() *Runtime {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.rt
}

// waitReady blocks until the model is loaded: requests that arrive while it
// loads wait and are served.
func (d *Daemon) waitReady(ctx context.Context) (*Runtime, error) {
	select {
	case <-d.ready:
	case <-ctx.Done():
		return nil, wire.Errorf(wire.CodeUnavailable, "gave up waiting for the model to load: %v", ctx.Err())
	}
	if d.State() == StateDraining {
		return nil, wire.Errorf(wire.CodeUnavailable, "batchd is shutting down")
	}
	return d.runtime(), nil // nil without a default model: requests name theirs
}

// heartbeat is the oldest engine loop's heartbeat among the loaded
// models (one wedged loop withholds the watchdog); now when none is.
func (d *Daemon) heartbeat() time.Time {
	hb := time.Now()
	for _, rt := range d.loadedRuntimes() {
		if t := rt.Engine.Heartbeat(); t.Before(hb) {
			hb = t
		}
	}
	return hb
}

// runServe is `batchd serve`.
func runServe(ctx context.Context, args []string, env *runEnv) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	var f ServeFlags
	fs.StringVar(&f.Config, "config", "", "TOML config file (watched and reloaded on change and on SIGHUP)")
	fs.StringVar(&f.Model, "model", "", "model file (overrides model.path)")
	fs.StringVar(&f.Tokenizer, "tokenizer", "", "llama2.c tokenizer file (overrides model.tokenizer)")
	fs.StringVar(&f.ChatTemplate, "chat-template", "", "chat template: a built-in name or a Jinja file (overrides model.chat_template)")
	fs.StringVar(&f.Socket, "socket", "", "socket path (overrides server.socket)")
	fs.StringVar(&f.LogLevel, "log-level", "", "log level (overrides log_level)")
	fs.StringVar(&f.HTTPSocket, "http-socket", "", "serve the OpenAI-compatible HTTP API on this Unix socket (overrides server.http_socket)")
	fs.StringVar(&f.HTTPListen, "http-listen", "", "also serve it on TCP host:port, API keys required (overrides server.http_listen)")
	fs.StringVar(&f.Metrics, "metrics-listen", "", "serve Prometheus metrics on a loopback host:port or unix:PATH (overrides server.metrics_listen)")
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("serve takes no arguments, got %q", fs.Args())}
	}
	d, cfg, err := New(f, os.Getenv)
	if err != nil {
		return fmt.Errorf("invalid configuration:\n%w", err)
	}
	return d.run(ctx, cfg, env)
}

// New builds a daemon from its command-line overrides and environment:
// the configuration is read (defaults < file < env < flags), validated and
// resolved once (users, groups, level: config.Resolved); Run starts it.
func New(f ServeFlags, getenv func(string) string) (*Daemon, config.Config, error) {
	d := &Daemon{flags: f, getenv: getenv, ready: make(chan struct{}), notifier: systemdNotifier{}}
	cfg, err := d.loadConfig()
	return d, cfg, err
}

func (d *Daemon) run(ctx context.Context, cfg config.Config, env *runEnv) error {
	rs := cfg.Resolved()
	d.level.Set(rs.Level)
	d.log = slog.New(logHandler(env.stderr, &d.level, d.getenv("JOURNAL_STREAM"))).With("component", "daemon")
	if d.notifier == nil {
		d.notifier = systemdNotifier{}
	}
	d.cfg, d.approved = cfg, cfg
	d.grammars = grammar.NewCache(grammarCacheSize)
	pol := rs.Policy
	ln, err := d.listen(cfg)
	if err != nil {
		return err
	}
	cb := connectionBudget(cfg.Server.MaxConnections)
	d.log.Info("connections", "budget", cb.String())
	d.conns = cb.budget()
	d.srv = ipc.NewServer(ipc.Options{Backend: ipcBackend{d}, Logger: d.log, MaxFrame: cfg.Server.MaxFrameBytes,
		Budget: d.conns, HelloTimeout: cfg.Server.HelloTimeout.Duration,
		Version: Version, Model: cfg.Model.Path, Policy: pol})
	if err := d.startKVEvents(cfg); err != nil {
		_ = ln.Close()
		return fmt.Errorf("kv events: %w", err)
	}
	if err := d.newModels(cfg); err != nil {
		_ = ln.Close()
		d.closeAll()
		return err
	}
	cw := d.watchConfig() // before serving: an edit once it answers is seen
	var sl net.Listener = ln
	if d.wrapListener != nil {
		sl = d.wrapListener(ln)
	}
	served := make(chan error, 1)
	go func() { served <- d.srv.Serve(sl) }()
	d.onStop("server", d.srv.Shutdown) // stop accepting, drain the connections, close
	d.log.Info("listening", "socket", cfg.Server.Socket, "state", "loading")
	if err := d.serveHTTP(cfg, rs.APIKeys); err != nil {
		cw.stop()
		d.closeAll()
		return fmt.Errorf("http: %w", err)
	}
	stopWatch := d.watch(ctx, cw)
	d.onStop("config watcher", func(context.Context) error { stopWatch(); return nil })

	met, err := d.startMetrics(cfg)
	if err != nil {
		d.closeAll()
		return fmt.Errorf("metrics: %w", err)
	}

	// Health answers while the model loads; submits wait for it.
	rt, err := d.startModels(cfg, met)
	if err != nil {
		d.closeAll()
		return err
	}
	d.mu.Lock()
	d.rt = rt
	d.mu.Unlock()
	d.state.Store(int32(StateReady))
	d.notify("READY=1\n" + d.statusLine()) // the socket is serving and the model loaded
	close(d.ready)
	d.log.Info("ready", "default_model", cfg.Model.Path, "models_dir", cfg.ModelsDir)
	supCtx, stopSup := context.WithCancel(ctx)
	defer stopSup()
	go d.superviseSystemd(supCtx, d.heartbeat)
	go d.models.Run(supCtx, time.Second)
	idle := d.idleExit(supCtx, cfg.IdleExitAfter.Duration)
	go d.sleepWhenIdle(supCtx)

	fatal := d.waitForStop(ctx, served, idle, env)
	d.shutdown()
	return fatal
}

// startMetrics makes the metrics of every loaded model and serves them on
// server.metrics_listen, if set.
func (d *Daemon) startMetrics(cfg config.Config) (*metrics, error) {
	met := newMetrics(func() []modelStats {
		var out []modelStats
		for _, rt := range d.loadedRuntimes() {
			out = append(out, modelStats{rt.Name, rt.Engine.Stats()})
		}
		return out
	}, d.ttftTarget)
	if cfg.Server.MetricsListen != "" {
		stop, err := serveMetrics(cfg.Server, met, d.conns, d.log)
		if err != nil {
			return nil, err
		}
		d.onStop("metrics server", stop)
	}
	return met, nil
}

// closeAll closes what started, in reverse order, at once (a failed start).
func (d *Daemon) closeAll() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	for i := len(d.started) - 1; i >= 0; i-- {
		_ = d.started[i].close(ctx)
	}
	d.started = nil
}

// listen takes the socket systemd passed, or creates the configured one.
func (d *Daemon) listen(cfg config.Config) (net.Listener, error) {
	ln, httpLns, err := activatedListeners()
	if err != nil {
		return nil, fmt.Errorf("socket activation: %w", err)
	}
	d.activatedHTTP = httpLns
	if ln != nil {
		d.log.Info("using the socket systemd passed", "addr", ln.Addr().String())
		return ln, nil
	}
	mode, _ := strconv.ParseUint(cfg.Server.SocketMode, 8, 32)
	ul, err := ipc.Listen(ipc.ListenOptions{Path: cfg.Server.Socket, Mode: fs.FileMode(mode), Group: cfg.Server.SocketGroup})
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	return ul, nil
}

// waitForStop serves SIGUSR1 (goroutine stacks, for a daemon that seems
// stuck) until a stop: ctx, idle exit, or the server failing, which it
// returns so that the daemon exits non-zero and Restart=on-failure acts.
func (d *Daemon) waitForStop(ctx context.Context, served <-chan error, idle <-chan struct{}, env *runEnv) error {
	dump := make(chan os.Signal, 1)
	signal.Notify(dump, syscall.SIGUSR1)
	defer signal.Stop(dump)
	for {
		select {
		case <-dump:
			_ = pprof.Lookup("goroutine").WriteTo(env.stderr, 2)
		case err := <-served:
			if errors.Is(err, ipc.ErrServerClosed) {
				return nil
			}
			d.log.Error("server failed", "err", err)
			return fmt.Errorf("serving the socket: %w", err)
		case <-ctx.Done():
			return nil
		case <-idle:
			return nil
		}
	}
}

// shutdown drains: no new requests, running ones get until the drain
// deadline, then are cancelled; then every component closes in reverse
// start order (the engine was started last), and close errors are logged.
func (d *Daemon) shutdown() {
	d.state.Store(int32(StateDraining))
	d.notify("STOPPING=1\n" + d.statusLine())
	d.mu.Lock()
	timeout := d.cfg.DrainTimeout.Duration
	d.mu.Unlock()
	d.log.Info("draining", "timeout", timeout)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for _, r := range d.loadedRuntimes() {
		if err := r.Engine.Drain(ctx); err != nil {
			d.log.Warn("drain deadline passed; cancelling what is left", "model", r.Name, "running", r.Engine.Stats().Running)
		}
	}
	if err := d.models.Close(); err != nil { // ends what is left with a terminal event
		d.log.Error("close engine", "err", err)
	}
	for i := len(d.started) - 1; i >= 0; i-- {
		c := d.started[i]
		cctx, ccancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := c.close(cctx); err != nil {
			d.log.Error("close "+c.name, "err", err)
		}
		ccancel()
	}
	d.started = nil
	d.log.Info("stopped")
}

// sleepWhenIdle asks the engine to release its memory once no request has
// come for sleep_after (read live, so a reload changes it).
func (d *Daemon) sleepWhenIdle(ctx context.Context) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	lastBusy, lastSubmitted := time.Now(), uint64(0)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		d.mu.Lock()
		after, weights := d.cfg.SleepAfter.Duration, d.cfg.SleepReleaseWeights
		d.mu.Unlock()
		rt := d.runtime()
		if rt == nil {
			continue
		}
		s := rt.Engine.Stats()
		if s.Running+s.Waiting > 0 || s.Submitted != lastSubmitted {
			lastBusy, lastSubmitted = time.Now(), s.Submitted
			continue
		}
		if after > 0 && !s.Sleeping && time.Since(lastBusy) >= after {
			rt.Engine.Sleep(weights)
			lastBusy = time.Now() // ask once per idle spell
		}
	}
}

// liveScheduler is next's scheduler knobs, zeros filled from the plan and
// max_num_seqs clamped to the KV blocks.
func (d *Daemon) liveScheduler(next config.Config, rt *Runtime) sched.Config {
	sc := next.Scheduler()
	plan := rt.Plan
	if sc.MaxNumSeqs == 0 {
		sc.MaxNumSeqs = plan.MaxNumSeqs
	} else if sc.MaxNumSeqs > plan.KVBlocks {
		d.log.Warn("max_num_seqs exceeds the KV blocks: clamped", "max_num_seqs", sc.MaxNumSeqs, "kv_blocks", plan.KVBlocks)
		sc.MaxNumSeqs = plan.KVBlocks
	}
	if sc.MaxNumBatchedTokens == 0 {
		sc.MaxNumBatchedTokens = plan.MaxNumBatchedTokens
	}
	return sc
}

func engineConfig(c config.Config, configPath string) EngineConfig {
	dir := ""
	if configPath != "" {
		dir = filepath.Join(filepath.Dir(configPath), "profiles.d")
	}
	return EngineConfig{Model: c.Model.Path, Tokenizer: c.Model.Tokenizer, Format: c.Model.Format, ProfilesDir: dir,
		ChatTemplate: c.Model.ChatTemplate, ChatTemplateTimeout: c.Model.ChatTemplateTimeout.Duration,
		ParseSpecialInMessages: c.Model.ParseSpecialInMessages, ToolFormat: c.Model.ToolFormat,
		Channels:  channelPolicies(&c),
		BlockSize: c.Engine.BlockSize, KVBlocks: c.Engine.KVBlocks, Threads: c.Engine.Threads,
		NoPrefixCache: !*c.Engine.PrefixCaching, KVCacheType: c.Engine.KVCacheType, QuantDot: c.Engine.QuantDot, Scheduler: c.Scheduler(),
		Speculative: engine.SpecConfig{Method: c.Engine.Speculative, Tokens: c.Engine.DraftTokens, MaxBatch: c.Engine.DraftMaxBatch},
		DraftModel:  c.Engine.DraftModel,
		MaxQueue:    c.Engine.MaxQueue, Adaptive: c.Engine.Adaptive == nil || *c.Engine.Adaptive,
		TTFTTarget: c.Channels["realtime"].TTFTTarget.Duration, ITLTarget: c.Channels["realtime"].ITLTarget.Duration,
		CacheDir: c.CacheDir(), CacheMaxBytes: c.PrefixCache.PersistMax()}
}

// channelPolicies are the engine's view of the channels.
func channelPolicies(c *config.Config) map[string]engine.ChannelPolicy {
	out := map[string]engine.ChannelPolicy{}
	for name, ch := range c.Channels {
		out[name] = engine.ChannelPolicy{Share: ch.Share, QueueLimit: ch.QueueLimit, Deadline: ch.Deadline.Duration, OwnSteps: ch.OwnSteps}
	}
	return out
}
