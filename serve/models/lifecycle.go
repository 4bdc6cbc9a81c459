package models

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// dirModel is a model file the directory holds.
type dirModel struct{ name, path string }

// listing is a scan of the directory: its files and its modification time
// before they were read (so that a change during the read is seen again).
type listing struct {
	files []dirModel
	at    time.Time
}

// listDir lists the directory's model files; it takes no lock (nil files:
// no directory, or it could not be read).
func (m *Manager) listDir() listing {
	if m.cfg.Dir == "" {
		return listing{}
	}
	st, err := os.Stat(m.cfg.Dir)
	if err != nil {
		m.cfg.Logger.Warn("models directory not read", "dir", m.cfg.Dir, "err", err)
		return listing{}
	}
	m.scans.Add(1)
	files, err := os.ReadDir(m.cfg.Dir)
	if err != nil {
		m.cfg.Logger.Warn("models directory not read", "dir", m.cfg.Dir, "err", err)
		return listing{}
	}
	out := make([]dirModel, 0, len(files))
	for _, f := range files {
		name, ok := strings.CutSuffix(f.Name(), m.cfg.Ext)
		if !ok || name == "" || strings.HasPrefix(name, ".") || checkName(name) != nil {
			continue
		}
		path := filepath.Join(m.cfg.Dir, f.Name())
		if !f.Type().IsRegular() { // a link: what it points to must be a file
			if st, err := os.Stat(path); err != nil || !st.Mode().IsRegular() {
				continue
			}
		}
		out = append(out, dirModel{name, path})
	}
	return listing{files: out, at: st.ModTime()}
}

// applyScan brings the directory's models up to date with a listing: a
// new file is a model, a removed one is gone (unloaded once idle).
func (m *Manager) applyScan(l listing) {
	files := l.files
	if m.cfg.Dir == "" || files == nil {
		return
	}
	m.dirTime = l.at
	configured := map[string]bool{}
	for _, e := range m.entries {
		if !e.spec.fromDir {
			configured[filepath.Clean(e.spec.Path)] = true
		}
	}
	present := make(map[string]bool, len(files))
	for _, f := range files {
		if configured[f.path] {
			continue
		}
		present[f.name] = true
		if e, ok := m.entries[f.name]; ok {
			e.gone = false
			continue
		}
		if m.find(f.name) != nil { // a configured name or alias wins
			continue
		}
		s := Spec{Name: f.name, Path: f.path, fromDir: true}
		m.add(&entry{spec: s, keepAlive: m.keepAliveOf(s)})
	}
	var idle []*entry
	for name, e := range m.entries {
		if !e.spec.fromDir || present[name] {
			continue
		}
		e.gone = true
		switch {
		case e.state == Available || e.state == Failed:
			m.forget(e)
		case e.state == Loaded && e.leases == 0:
			idle = append(idle, e)
		}
	}
	for _, e := range idle { // unloading drops the lock: not while ranging the map
		if e.state == Loaded && e.leases == 0 {
			m.unloadLocked(e)
		}
	}
}

// Run preloads what the config asks, then keeps the models until ctx
// ends: idle models unload when their keep-alive passes, the directory is
// scanned every interval. It returns when ctx ends.
func (m *Manager) Run(ctx context.Context, interval time.Duration) {
	for _, s := range m.cfg.Specs {
		if s.Preload {
			if l, err := m.Acquire(ctx, s.Name, nil); err == nil {
				l.Release()
			}
		}
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		m.Tick()
	}
}

// Tick unloads idle models past their keep-alive and scans the directory.
func (m *Manager) Tick() {
	files := m.listDir()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.applyScan(files)
	now := m.cfg.Now()
	for _, e := range m.sortedLocked() {
		if e.state == Loaded && e.leases == 0 && !e.expires.IsZero() && !now.Before(e.expires) {
			m.unloadLocked(e)
		}
	}
}

// Unload unloads model name now if no request holds it, else as soon as
// the last one ends. It reports whether the model was loaded.
func (m *Manager) Unload(name string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, err := m.lookupLocked(name)
	if err != nil {
		return false, err
	}
	if e.state != Loaded {
		return false, nil
	}
	e.keepAlive = 0
	if e.leases == 0 {
		m.unloadLocked(e)
	}
	return true, nil
}

// Close unloads every model, whatever holds it (the daemon drains first),
// and refuses new requests.
func (m *Manager) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	var errs []error
	for _, e := range m.sortedLocked() {
		if e.state == Loaded {
			inst := e.inst
			e.inst, e.state, e.bytes = nil, Available, 0
			m.mu.Unlock()
			if err := inst.Close(); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", e.spec.Name, err))
			}
			m.mu.Lock()
		}
	}
	m.signalLocked()
	return errors.Join(errs...)
}

// Info describes a model for lists.
type Info struct {
	Name, Path string
	Aliases    []string
	State      State
	Err        error // the last load's, when State is Failed
	Default    bool
	FromDir    bool  // a file of the models directory (not configured)
	Bytes      int64 // memory held, while loaded
	Requests   int   // requests holding it
	KeepAlive  time.Duration
	ExpiresAt  time.Time // when an idle model unloads; zero: not timed
	LoadedAt   time.Time
	LoadTime   time.Duration
	Instance   Instance // nil unless loaded
}

// List is every model the manager knows, by name (the directory scanned
// first).
func (m *Manager) List() []Info {
	files := m.listDir()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.applyScan(files)
	return m.infosLocked(false)
}

// Loaded is the models loaded now, by name.
func (m *Manager) Loaded() []Info {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.infosLocked(true)
}

// Get describes one model by name or alias.
func (m *Manager) Get(name string) (Info, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, err := m.lookupLocked(name)
	if err != nil {
		return Info{}, err
	}
	return m.infoLocked(e), nil
}

func (m *Manager) infosLocked(loadedOnly bool) []Info {
	var out []Info
	for _, e := range m.sortedLocked() {
		if !loadedOnly || e.state == Loaded {
			out = append(out, m.infoLocked(e))
		}
	}
	return out
}

func (m *Manager) infoLocked(e *entry) Info {
	return Info{Name: e.spec.Name, Path: e.spec.Path, Aliases: e.spec.Aliases, State: e.state, Err: e.err,
		Default: e.spec.Name == m.defaultLocked(), FromDir: e.spec.fromDir, Bytes: e.bytes, Requests: e.leases, KeepAlive: e.keepAlive,
		ExpiresAt: e.expires, LoadedAt: e.loadedAt, LoadTime: e.loadTime, Instance: e.inst}
}

func (m *Manager) sortedLocked() []*entry {
	out := make([]*entry, 0, len(m.entries))
	for _, e := range m.entries {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].spec.Name < out[j].spec.Name })
	return out
}

// Remove forgets a model of the directory once its file is gone: it is
// unloaded now if idle, else when its last request ends.
func (m *Manager) Remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, err := m.lookupLocked(name)
	if err != nil {
		return err
	}
	if !e.spec.fromDir {
		return fmt.Errorf("%w: %s is configured, not a file of the models directory", ErrNotFound, e.spec.Name)
	}
	e.gone = true
	switch e.state {
	case Loaded:
		if e.leases == 0 {
			m.unloadLocked(e)
		}
	case Available, Failed:
		m.forget(e)
	}
	return nil
}

// Dir is the models directory ("" without one).
func (m *Manager) Dir() string { return m.cfg.Dir }
