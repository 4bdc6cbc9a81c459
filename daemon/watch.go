package daemon

import (
	"bytes"
	"context"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
)

// reloadDebounce merges the burst of events an editor's save makes, and
// waits out a file written in pieces: a reload reads the file only after
// this long without an event. reloadSettle then reads it twice this far
// apart and waits again if the two reads differ, so a slow writer's half
// file is never applied.
const (
	reloadDebounce = 500 * time.Millisecond
	reloadSettle   = 50 * time.Millisecond
)

// configWatch is the config file's watch, set up before the daemon
// serves so that an edit made as soon as it answers is never missed
// (inotify queues the events until run reads them).
type configWatch struct {
	w    *fsnotify.Watcher
	hup  chan os.Signal
	seen fileID
}

// watchConfig starts watching the config file's directory, so that
// editors' write-and-rename saves and symlink swaps (as in Kubernetes
// ConfigMaps) are seen, and SIGHUP.
func (d *Daemon) watchConfig() *configWatch {
	cw := &configWatch{hup: make(chan os.Signal, 1)}
	signal.Notify(cw.hup, syscall.SIGHUP)
	if d.flags.Config == "" {
		return cw
	}
	cw.seen = identify(filepath.Clean(d.flags.Config))
	w, err := fsnotify.NewWatcher()
	if err == nil {
		if err = w.Add(filepath.Dir(d.flags.Config)); err != nil {
			w.Close()
		}
	}
	if err != nil {
		d.log.Warn("config file not watched; SIGHUP still reloads", "err", err)
		return cw
	}
	cw.w = w
	return cw
}

// watch reloads the config on SIGHUP and when the config file changes.
func (d *Daemon) watch(ctx context.Context, cw *configWatch) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var events <-chan fsnotify.Event
	if cw.w != nil {
		events = cw.w.Events
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var timer <-chan time.Time
		name := filepath.Clean(d.flags.Config)
		seen := cw.seen
		for {
			select {
			case <-ctx.Done():
				return
			case <-cw.hup:
				d.reload("SIGHUP", nil, true)
			case ev, ok := <-events:
				if !ok {
					events = nil
					continue
				}
				// The file itself, or another name whose change makes the
				// path lead elsewhere (a ConfigMap's ..data symlink swap);
				// other files in the directory are none of our business.
				if id := identify(name); filepath.Clean(ev.Name) == name || id != seen {
					seen = id
					timer = time.After(reloadDebounce) // every event restarts the wait
				}
			case <-timer:
				timer = nil
				b, settled := d.settledConfig(ctx)
				if !settled {
					timer = time.After(reloadDebounce) // still being written
					continue
				}
				d.reload("file change", b, false)
			}
		}
	}()
	return func() {
		cancel()
		cw.stop()
		<-done
	}
}

func (cw *configWatch) stop() {
	signal.Stop(cw.hup)
	if cw.w != nil {
		cw.w.Close()
	}
}

// settledConfig reads the config file twice, reloadSettle apart, and
// reports whether both reads agree. A missing file reads as nil (and the
// reload reports it).
func (d *Daemon) settledConfig(ctx context.Context) ([]byte, bool) {
	a, errA := os.ReadFile(d.flags.Config)
	select {
	case <-ctx.Done():
		return nil, false
	case <-time.After(reloadSettle):
	}
	b, errB := os.ReadFile(d.flags.Config)
	if (errA == nil) != (errB == nil) || !bytes.Equal(a, b) {
		return nil, false
	}
	return b, true
}

// fileID tells whether a path leads to another file or the file changed:
// device, inode, size and modification time of what it resolves to.
type fileID struct {
	dev, ino, size uint64
	mtime          int64
}

func identify(path string) fileID {
	st, err := os.Stat(path)
	if err != nil {
		return fileID{}
	}
	id := fileID{size: uint64(st.Size()), mtime: st.ModTime().UnixNano()}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		id.dev, id.ino = uint64(sys.Dev), sys.Ino
	}
	return id
}
