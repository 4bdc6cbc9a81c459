package models

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// State is where a model stands.
type State int

const (
	Available State = iota // known, not loaded
	Loading                // being loaded; requests for it wait
	Loaded                 // serving
	Failed                 // its last load failed; the next request tries again
	Unloading              // closing; its memory is still held
)

func (s State) String() string {
	return [...]string{"available", "loading", "loaded", "failed", "unloading"}[s]
}

// Errors, by category; the daemon maps them to wire codes.
var (
	ErrNotFound = errors.New("model not found")
	ErrNoRoom   = errors.New("no room for the model")
	ErrLoad     = errors.New("model failed to load")
	ErrClosed   = errors.New("models closed")
)

// LoadError is a model that failed to load, with the loader's error; it
// is an ErrLoad.
type LoadError struct {
	Model string
	Err   error
}

func (e *LoadError) Error() string        { return fmt.Sprintf("%v: %s: %v", ErrLoad, e.Model, e.Err) }
func (e *LoadError) Unwrap() error        { return e.Err }
func (e *LoadError) Is(target error) bool { return target == ErrLoad }

// Spec is a model the manager may load.
type Spec struct {
	Name    string
	Aliases []string
	Path    string
	// KeepAlive is how long the model stays loaded once idle: 0 unloads it
	// as soon as its last request ends, negative never (pinned); nil is the
	// manager's default. A request's keep_alive replaces it.
	KeepAlive *time.Duration
	// Preload loads the model when the manager starts.
	Preload bool
	// Options are the loader's (per-model settings), opaque here.
	Options any

	fromDir bool // found in the models directory: gone when its file is
}

// Instance is a loaded model.
type Instance interface{ Close() error }

// Pending is a model prepared to load: what it will cost is known before
// any memory is spent, so that others can give way first.
type Pending interface {
	Bytes() int64 // memory it holds once started
	Start(ctx context.Context) (Instance, error)
	Abort() // drop a prepared model that will not start
}

// Loader prepares a model (opens its file, plans its memory).
type Loader func(ctx context.Context, s Spec) (Pending, error)

// Config says which models exist and how many may be loaded.
type Config struct {
	// Dir is scanned for files ending in Ext (".gguf"): each is a model
	// named by its file name. Configured Specs win over a file of theirs.
	Dir, Ext string
	Specs    []Spec
	// Default names the model a request without one gets; "" is the only
	// model when there is one.
	Default   string
	KeepAlive time.Duration // default 5m; negative: forever
	MaxLoaded int           // models loaded at once; 0 is no limit
	// MemoryBytes bounds the loaded models' Pending.Bytes together; 0 is
	// no limit.
	MemoryBytes int64
	// RoomWait bounds how long a request waits for room (models busy
	// until then) before ErrNoRoom; default 30s, and never past its ctx.
	RoomWait time.Duration
	Load     Loader
	Logger   *slog.Logger
	Now      func() time.Time
}

// DefaultKeepAlive is Ollama's.
const DefaultKeepAlive = 5 * time.Minute

type entry struct {
	spec      Spec
	state     State
	inst      Instance
	bytes     int64 // reserved while loading, held while loaded
	leases    int
	keepAlive time.Duration
	lastUsed  time.Time
	expires   time.Time     // when an idle model unloads; zero: not timed
	loading   chan struct{} // closed when a load or an unload ends
	err       error
	gone      bool // its file was removed: unload when idle, then forget
	loadedAt  time.Time
	loadTime  time.Duration
}

// Manager loads models on demand and unloads them when idle or when
// another needs the room. Lock order: mu only; Close and Start of an
// instance run without it.
type Manager struct {
	cfg     Config
	mu      sync.Mutex
	entries map[string]*entry
	// byName indexes entries by every name and alias, exactly and folded
	// to lower case (the first to take a folded name keeps it), so that a
	// lookup or a scan of a large directory costs a map access a name.
	byName, byFold map[string]*entry
	dirTime        time.Time     // the directory's modification time at the last scan
	scans          atomic.Int64  // directory listings read, for tests
	changed        chan struct{} // closed (and replaced) when room may have freed
	closed         bool
}

// New makes a manager of cfg's models; Run keeps it (preloads, expiry,
// the directory).
func New(cfg Config) (*Manager, error) {
	if cfg.Load == nil {
		return nil, errors.New("models: no loader")
	}
	if cfg.Ext == "" {
		cfg.Ext = ".gguf"
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.RoomWait <= 0 {
		cfg.RoomWait = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	m := &Manager{cfg: cfg, entries: map[string]*entry{}, byName: map[string]*entry{}, byFold: map[string]*entry{},
		changed: make(chan struct{})}
	seen := map[string]string{}
	for _, s := range cfg.Specs {
		for _, n := range append([]string{s.Name}, s.Aliases...) {
			if err := checkName(n); err != nil {
				return nil, err
			}
			if other, dup := seen[strings.ToLower(n)]; dup {
				return nil, fmt.Errorf("models: name %q of %q is also %q's", n, s.Name, other)
			}
			seen[strings.ToLower(n)] = s.Name
		}
		m.add(&entry{spec: s, keepAlive: m.keepAliveOf(s)})
	}
	m.mu.Lock()
	m.applyScan(m.listDir())
	m.mu.Unlock()
	if cfg.Default != "" && m.find(cfg.Default) == nil {
		return nil, fmt.Errorf("models: default model %q: %w", cfg.Default, ErrNotFound)
	}
	return m, nil
}

// checkName refuses names that cannot be written in a URL or a label.
func checkName(n string) error {
	if n == "" || len(n) > 128 {
		return fmt.Errorf("models: name %q: want 1 to 128 bytes", n)
	}
	for _, r := range n {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-:/", r)) {
			return fmt.Errorf("models: name %q: want letters, digits and . _ - : /", n)
		}
	}
	return nil
}

func (m *Manager) keepAliveOf(s Spec) time.Duration {
	switch {
	case s.KeepAlive != nil:
		return *s.KeepAlive
	case m.cfg.KeepAlive != 0:
		return m.cfg.KeepAlive
	}
	return DefaultKeepAlive
}

// SetMemoryBytes sets the memory budget (0: none), once the machine's
// is known; models loaded already stay.
func (m *Manager) SetMemoryBytes(b int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cfg.MemoryBytes = b
	m.signalLocked()
}

// signalLocked wakes whoever waits for room.
func (m *Manager) signalLocked() {
	close(m.changed)
	m.changed = make(chan struct{})
}

// Lease is a model held for one request: it is not unloaded until
// Release. Release exactly once.
type Lease struct {
	Instance
	Name string
	m    *Manager
	e    *entry
	once sync.Once
}

// Release ends the request's hold; an idle model then unloads after its
// keep-alive.
func (l *Lease) Release() {
	l.once.Do(func() { l.m.release(l.e) })
}

// Acquire gives model name (the default when "") for one request, loading
// it if need be, after the least recently used idle models give way. It
// waits for room until ctx ends, then fails with ErrNoRoom naming what
// holds the memory. keepAlive (nil: the model's default) is how long it
// stays once idle, unless its spec pins it.
func (m *Manager) Acquire(ctx context.Context, name string, keepAlive *time.Duration) (*Lease, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for {
		if m.closed {
			return nil, ErrClosed
		}
		e, err := m.lookupLocked(name)
		if err != nil {
			return nil, err
		}
		// A request's keep_alive, or the default (Ollama's meaning); a
		// pinned spec stays pinned, also after an explicit Unload.
		switch {
		case e.spec.KeepAlive != nil && *e.spec.KeepAlive < 0:
			e.keepAlive = *e.spec.KeepAlive
		case keepAlive != nil:
			e.keepAlive = *keepAlive
		default:
			e.keepAlive = m.keepAliveOf(e.spec)
		}
		switch e.state {
		case Loaded:
			e.leases++
			e.expires = time.Time{}
			e.lastUsed = m.cfg.Now()
			return &Lease{Instance: e.inst, Name: e.spec.Name, m: m, e: e}, nil
		case Loading, Unloading:
			ch := e.loading
			m.mu.Unlock()
			select {
			case <-ch:
			case <-ctx.Done():
				m.mu.Lock()
				return nil, ctx.Err()
			}
			m.mu.Lock()
		default:
			if err := m.loadLocked(ctx, e); err != nil {
				return nil, err
			}
		}
	}
}

// lookupLocked finds a model by name or alias, scanning the directory
// once more if it is not known and the directory changed since the last
// scan (a client asking for names that do not exist must not make the
// daemon list a large directory per request). The scan lists the
// directory without the lock, so it may change meanwhile.
func (m *Manager) lookupLocked(name string) (*entry, error) {
	if name == "" {
		name = m.defaultLocked()
		if name == "" {
			return nil, fmt.Errorf("%w: no model named and no default (%d models)", ErrNotFound, len(m.entries))
		}
	}
	if e := m.find(name); e != nil {
		return e, nil
	}
	if m.dirChanged() {
		m.mu.Unlock()
		files := m.listDir()
		m.mu.Lock()
		m.applyScan(files)
		if e := m.find(name); e != nil {
			return e, nil
		}
	}
	return nil, fmt.Errorf("%w: %q", ErrNotFound, name)
}

// dirChanged reports whether the models directory was modified (a file
// added, removed or renamed) since the last scan.
func (m *Manager) dirChanged() bool {
	if m.cfg.Dir == "" {
		return false
	}
	st, err := os.Stat(m.cfg.Dir)
	return err != nil || !st.ModTime().Equal(m.dirTime)
}

func (m *Manager) defaultLocked() string {
	if m.cfg.Default != "" {
		return m.cfg.Default
	}
	if len(m.entries) == 1 {
		for n := range m.entries {
			return n
		}
	}
	return ""
}

// find resolves a name: exact, an alias, Ollama's ":latest" tag added or
// dropped, then the same ignoring case.
func (m *Manager) find(name string) *entry {
	cands := []string{name}
	if base, ok := strings.CutSuffix(name, ":latest"); ok {
		cands = append(cands, base)
	} else if !strings.Contains(name, ":") {
		cands = append(cands, name+":latest")
	}
	for _, c := range cands {
		if e := m.byName[c]; e != nil {
			return e
		}
	}
	for _, c := range cands {
		if e := m.byFold[strings.ToLower(c)]; e != nil {
			return e
		}
	}
	return nil
}

// add records e under its names.
func (m *Manager) add(e *entry) {
	m.entries[e.spec.Name] = e
	for _, n := range append([]string{e.spec.Name}, e.spec.Aliases...) {
		if _, ok := m.byName[n]; !ok {
			m.byName[n] = e
		}
		if _, ok := m.byFold[strings.ToLower(n)]; !ok {
			m.byFold[strings.ToLower(n)] = e
		}
	}
}

// forget drops e and its names; a folded name another entry also has
// passes to it.
func (m *Manager) forget(e *entry) {
	if m.entries[e.spec.Name] == e {
		delete(m.entries, e.spec.Name)
	}
	for _, n := range append([]string{e.spec.Name}, e.spec.Aliases...) {
		if m.byName[n] == e {
			delete(m.byName, n)
		}
		f := strings.ToLower(n)
		if m.byFold[f] != e {
			continue
		}
		delete(m.byFold, f)
		for _, o := range m.entries { // rare: two names differing only in case
			if strings.ToLower(o.spec.Name) == f {
				m.byFold[f] = o
				break
			}
		}
	}
}

// loadLocked loads e: prepares it without the lock, makes room, starts
// it. Requests for e meanwhile wait on e.loading.
func (m *Manager) loadLocked(ctx context.Context, e *entry) error {
	e.state, e.loading, e.err = Loading, make(chan struct{}), nil
	fail := func(err error, state State) error {
		e.state, e.err, e.bytes = state, err, 0
		close(e.loading)
		m.signalLocked()
		return err
	}
	start := m.cfg.Now()
	m.mu.Unlock()
	p, err := m.cfg.Load(context.WithoutCancel(ctx), e.spec)
	m.mu.Lock()
	if err != nil {
		m.cfg.Logger.Warn("model failed to load", "model", e.spec.Name, "path", e.spec.Path, "err", err)
		return fail(&LoadError{Model: e.spec.Name, Err: err}, Failed)
	}
	if err := m.makeRoomLocked(ctx, e, p.Bytes()); err != nil {
		p.Abort()
		return fail(err, Available)
	}
	e.bytes = p.Bytes()
	m.mu.Unlock()
	inst, err := p.Start(context.WithoutCancel(ctx))
	m.mu.Lock()
	if err != nil {
		m.cfg.Logger.Warn("model failed to start", "model", e.spec.Name, "err", err)
		return fail(&LoadError{Model: e.spec.Name, Err: err}, Failed)
	}
	if m.closed {
		m.mu.Unlock()
		_ = inst.Close()
		m.mu.Lock()
		return fail(ErrClosed, Available)
	}
	e.inst, e.state, e.loadedAt = inst, Loaded, m.cfg.Now()
	e.loadTime = e.loadedAt.Sub(start)
	close(e.loading)
	m.cfg.Logger.Info("model loaded", "model", e.spec.Name, "bytes", e.bytes, "load_s", e.loadTime.Seconds())
	return nil
}

// usedLocked is the memory and count held or reserved by models but e.
func (m *Manager) usedLocked(except *entry) (bytes int64, n int) {
	for _, o := range m.entries {
		if o != except && (o.state == Loaded || o.state == Unloading || o.state == Loading && o.bytes > 0) {
			bytes += o.bytes
			n++
		}
	}
	return bytes, n
}

// makeRoomLocked unloads idle models, least recently used first, until e
// (need bytes) fits, or waits for some to become idle until ctx ends or
// RoomWait passes.
func (m *Manager) makeRoomLocked(ctx context.Context, e *entry, need int64) error {
	if b := m.cfg.MemoryBytes; b > 0 && need > b {
		return fmt.Errorf("%w: %s needs %d MiB, more than the %d MiB budget", ErrNoRoom, e.spec.Name, need>>20, b>>20)
	}
	ctx, cancel := context.WithTimeout(ctx, m.cfg.RoomWait)
	defer cancel()
	for {
		used, n := m.usedLocked(e)
		memOK := m.cfg.MemoryBytes <= 0 || used+need <= m.cfg.MemoryBytes
		countOK := m.cfg.MaxLoaded <= 0 || n+1 <= m.cfg.MaxLoaded
		if memOK && countOK {
			return nil
		}
		if v := m.victimLocked(); v != nil {
			m.cfg.Logger.Info("unloading a model to make room", "model", v.spec.Name, "for", e.spec.Name)
			m.unloadLocked(v)
			continue
		}
		ch := m.changed
		m.mu.Unlock()
		select {
		case <-ch:
			m.mu.Lock()
		case <-ctx.Done():
			m.mu.Lock()
			return fmt.Errorf("%w: %s needs %d MiB; %s", ErrNoRoom, e.spec.Name, need>>20, m.holdersLocked(e))
		}
	}
}

// victimLocked is the least recently used loaded model no request holds,
// unless pinned.
func (m *Manager) victimLocked() *entry {
	var v *entry
	for _, o := range m.entries {
		if o.state != Loaded || o.leases > 0 || o.keepAlive < 0 {
			continue
		}
		if v == nil || o.lastUsed.Before(v.lastUsed) {
			v = o
		}
	}
	return v
}

// holdersLocked says what holds the memory, for an ErrNoRoom.
func (m *Manager) holdersLocked(except *entry) string {
	var parts []string
	for _, o := range m.sortedLocked() {
		if o == except || o.state != Loaded && o.state != Loading {
			continue
		}
		why := fmt.Sprintf("%d requests", o.leases)
		switch {
		case o.state == Loading:
			why = "loading"
		case o.leases == 0 && o.keepAlive < 0:
			why = "pinned"
		}
		parts = append(parts, fmt.Sprintf("%s (%d MiB, %s)", o.spec.Name, o.bytes>>20, why))
	}
	if len(parts) == 0 {
		return "nothing else is loaded"
	}
	return "held by " + strings.Join(parts, ", ")
}

// unloadLocked closes e's instance. It drops the lock while the instance
// closes (an engine's loop ends), e's memory counted until it has; callers
// re-check what they saw.
func (m *Manager) unloadLocked(e *entry) {
	inst := e.inst
	e.inst, e.state, e.expires, e.loading = nil, Unloading, time.Time{}, make(chan struct{})
	m.mu.Unlock()
	if err := inst.Close(); err != nil {
		m.cfg.Logger.Warn("closing a model", "model", e.spec.Name, "err", err)
	}
	m.cfg.Logger.Info("model unloaded", "model", e.spec.Name)
	m.mu.Lock()
	e.state, e.bytes = Available, 0
	close(e.loading)
	if e.gone {
		m.forget(e)
	}
	m.signalLocked()
}

func (m *Manager) release(e *entry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e.leases--
	e.lastUsed = m.cfg.Now()
	if e.leases == 0 && e.state == Loaded {
		switch {
		case e.gone || e.keepAlive == 0:
			m.unloadLocked(e)
			return
		case e.keepAlive > 0:
			e.expires = e.lastUsed.Add(e.keepAlive)
		}
	}
	m.signalLocked()
}
