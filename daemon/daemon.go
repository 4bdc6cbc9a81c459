package daemon

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/batchd/batchd/config"
	"github.com/batchd/batchd/metrics"
	"github.com/batchd/batchd/serve"

	"github.com/batchd/batchd/httpapi"
	"github.com/batchd/batchd/ipc"
	"github.com/batchd/batchd/kvevents"
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
	// wrapListener, when set (tests), wraps the socket's listener.
	wrapListener func(net.Listener) net.Listener
	// started lists the components in start order; shutdown closes them
	// in reverse.
	started []component
	// svc is the serving layer (the models, every request's way to and
	// from an engine); met the metrics its engines feed.
	svc *serve.Service
	met *metrics.Metrics
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

// State returns the lifecycle state.
func (d *Daemon) State() State {
	st := State(d.state.Load())
	if st == StateReady {
		if lm := d.defaultModel(); lm != nil && lm.Engine.Sleeping() {
			return StateSleeping
		}
	}
	return st
}

// defaultModel is the default model, nil without one or before it loads.
func (d *Daemon) defaultModel() *serve.LoadedModel {
	if d.svc == nil {
		return nil
	}
	return d.svc.Default()
}

// loaded is every loaded model (none before the service exists).
func (d *Daemon) loaded() []*serve.LoadedModel {
	if d.svc == nil {
		return nil
	}
	return d.svc.Loaded()
}

// heartbeat is the oldest engine loop's heartbeat among the loaded
// models (one wedged loop withholds the watchdog); now when none is.
func (d *Daemon) heartbeat() time.Time {
	hb := time.Now()
	for _, lm := range d.loaded() {
		if t := lm.Engine.Heartbeat(); t.Before(hb) {
			hb = t
		}
	}
	return hb
}

// Serve is `batchd serve`: args are its flags; the log goes to stderr
// (the journal under systemd).
func Serve(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
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
	return d.Run(ctx, cfg, stderr)
}

// New builds a daemon from its command-line overrides and environment:
// the configuration is read (defaults < file < env < flags), validated and
// resolved once (users, groups, level: config.Resolved); Run starts it.
func New(f ServeFlags, getenv func(string) string) (*Daemon, config.Config, error) {
	d := &Daemon{flags: f, getenv: getenv, ready: make(chan struct{}), notifier: systemdNotifier{}}
	cfg, err := d.loadConfig()
	return d, cfg, err
}

// Ready is closed once the default model is loaded and requests are served.
func (d *Daemon) Ready() <-chan struct{} { return d.ready }

// Service is the serving layer (nil before Run makes it).
func (d *Daemon) Service() *serve.Service { return d.svc }

// Run serves cfg (New's) until ctx ends, an idle exit, or the socket
// server fails; the log goes to stderr.
func (d *Daemon) Run(ctx context.Context, cfg config.Config, stderr io.Writer) error {
	rs := cfg.Resolved()
	d.level.Set(rs.Level)
	d.log = slog.New(logHandler(stderr, &d.level, d.getenv("JOURNAL_STREAM"))).With("component", "daemon")
	if d.notifier == nil {
		d.notifier = systemdNotifier{}
	}
	d.cfg, d.approved = cfg, cfg
	ln, err := d.listen(cfg)
	if err != nil {
		return err
	}
	cb := ConnectionBudget(cfg.Server.MaxConnections)
	d.log.Info("connections", "budget", cb.String())
	d.conns = cb.budget()
	if err := d.startKVEvents(cfg); err != nil {
		_ = ln.Close()
		return fmt.Errorf("kv events: %w", err)
	}
	d.met = metrics.New(d.modelStats, d.ttftTarget)
	svc, err := serve.New(serve.Options{Config: cfg, ConfigPath: d.flags.Config, Logger: d.log,
		Observer: d.met.ForModel, KVEvents: d.kvSink})
	if err != nil {
		_ = ln.Close()
		d.closeAll()
		return err
	}
	d.svc = svc
	d.srv = ipc.NewServer(ipc.Options{Backend: frontend{svc, d}, Logger: d.log, MaxFrame: cfg.Server.MaxFrameBytes,
		Budget: d.conns, HelloTimeout: cfg.Server.HelloTimeout.Duration,
		Version: Version, Model: cfg.Model.Path, Policy: rs.Policy,
		Responses: ipc.NewResponseStore(responsesStoreBytes(cfg.Server.ResponsesStoreMB))})
	svc.SetAccess(d.srv)
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

	if err := d.serveMetrics(cfg); err != nil {
		d.closeAll()
		return fmt.Errorf("metrics: %w", err)
	}

	// Health answers while the model loads; submits wait for it.
	if err := svc.Start(); err != nil {
		d.closeAll()
		return err
	}
	d.state.Store(int32(StateReady))
	d.notify("READY=1\n" + d.statusLine()) // the socket is serving and the model loaded
	svc.MarkReady()
	close(d.ready)
	d.log.Info("ready", "default_model", cfg.Model.Path, "models_dir", cfg.ModelsDir)
	supCtx, stopSup := context.WithCancel(ctx)
	defer stopSup()
	go d.superviseSystemd(supCtx, d.heartbeat)
	go svc.Run(supCtx)
	idle := d.idleExit(supCtx, cfg.IdleExitAfter.Duration)
	go d.sleepWhenIdle(supCtx)

	fatal := d.waitForStop(ctx, served, idle, stderr)
	d.shutdown()
	return fatal
}

// serveMetrics serves the metrics on server.metrics_listen, if set.
func (d *Daemon) serveMetrics(cfg config.Config) error {
	if cfg.Server.MetricsListen == "" {
		return nil
	}
	stop, err := metrics.Serve(cfg.Server, d.met, d.conns, d.log)
	if err != nil {
		return err
	}
	d.onStop("metrics server", stop)
	return nil
}

// modelStats is every loaded model's figures, for a scrape.
func (d *Daemon) modelStats() []metrics.ModelStats {
	var out []metrics.ModelStats
	for _, lm := range d.loaded() {
		out = append(out, metrics.ModelStats{Name: lm.Name, Stats: lm.Engine.Stats()})
	}
	return out
}

// ttftTarget is a channel's TTFT objective in the live config.
func (d *Daemon) ttftTarget(channel string) time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cfg.Channels[channel].TTFTTarget.Duration
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
func (d *Daemon) waitForStop(ctx context.Context, served <-chan error, idle <-chan struct{}, stderr io.Writer) error {
	dump := make(chan os.Signal, 1)
	signal.Notify(dump, syscall.SIGUSR1)
	defer signal.Stop(dump)
	for {
		select {
		case <-dump:
			_ = pprof.Lookup("goroutine").WriteTo(stderr, 2)
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
	if d.svc != nil {
		d.svc.Drain()
	}
	for _, lm := range d.loaded() {
		if err := lm.Engine.Drain(ctx); err != nil {
			d.log.Warn("drain deadline passed; cancelling what is left", "model", lm.Name, "running", lm.Engine.Stats().Running)
		}
	}
	if d.svc != nil {
		if err := d.svc.Close(); err != nil { // ends what is left with a terminal event
			d.log.Error("close engine", "err", err)
		}
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
		lm := d.defaultModel()
		if lm == nil {
			continue
		}
		s := lm.Engine.Stats()
		if s.Running+s.Waiting > 0 || s.Submitted != lastSubmitted {
			lastBusy, lastSubmitted = time.Now(), s.Submitted
			continue
		}
		if after > 0 && !s.Sleeping && time.Since(lastBusy) >= after {
			lm.Engine.Sleep(weights)
			lastBusy = time.Now() // ask once per idle spell
		}
	}
}
