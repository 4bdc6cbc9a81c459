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

// watch reloads the config on SIGHUP and when the config file changes. It
// watches the file's directory, so that editors' write-and-rename saves and
// symlink swaps (as in Kubernetes ConfigMaps) are seen.
func (d *Daemon) watch(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	var events <-chan fsnotify.Event
	var w *fsnotify.Watcher
	if d.flags.Config != "" {
		var err error
		if w, err = fsnotify.NewWatcher(); err == nil {
			err = w.Add(filepath.Dir(d.flags.Config))
		}
		if err != nil {
			d.log.Warn("config file not watched; SIGHUP still reloads", "err", err)
		} else {
			events = w.Events
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var timer <-chan time.Time
		name := filepath.Clean(d.flags.Config)
		seen := identify(name)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
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
		signal.Stop(hup)
		if w != nil {
			w.Close()
		}
		<-done
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
