package daemon

import (
	"context"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
)

// reloadDebounce merges the burst of events an editor's save makes.
const reloadDebounce = 100 * time.Millisecond

// watch reloads the config on SIGHUP and when the config file changes. It
// watches the file's directory, so that editors' write-and-rename saves and
// symlink swaps (as in Kubernetes ConfigMaps) are seen.
func (d *Daemon) watch(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	var events <-chan fsnotify.Event
	var w *fsnotify.Watcher
	if d.flags.config != "" {
		var err error
		if w, err = fsnotify.NewWatcher(); err == nil {
			err = w.Add(filepath.Dir(d.flags.config))
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
		name := filepath.Clean(d.flags.config)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				d.reload("SIGHUP")
			case ev, ok := <-events:
				if !ok {
					events = nil
					continue
				}
				if filepath.Clean(ev.Name) == name || ev.Op&fsnotify.Create != 0 {
					timer = time.After(reloadDebounce)
				}
			case <-timer:
				timer = nil
				d.reload("file change")
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
