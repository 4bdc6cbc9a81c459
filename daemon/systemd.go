package daemon

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/coreos/go-systemd/v22/activation"
)

// notifier sends service manager notifications (sd_notify states).
type notifier interface {
	Notify(state string) error
	// WatchdogInterval is WATCHDOG_USEC for this process, or 0.
	WatchdogInterval() time.Duration
}

// statusEvery is how often STATUS= is refreshed.
const statusEvery = 5 * time.Second

func (d *Daemon) notify(state string) {
	if err := d.notifier.Notify(state); err != nil {
		d.log.Debug("sd_notify failed", "state", state, "err", err)
	}
}

// statusLine is the one-line summary systemctl status shows.
func (d *Daemon) statusLine() string {
	rts := d.loaded()
	if len(rts) == 0 {
		return fmt.Sprintf("STATUS=%s", d.State())
	}
	var running, waiting int
	var tps float64
	var names []string
	for _, rt := range rts {
		s := rt.Engine.Stats()
		running, waiting, tps = running+s.Running, waiting+s.Waiting, tps+s.TokensPerSec
		names = append(names, shortName(rt.Model.Path))
	}
	kv := rts[0].Engine.Stats().KVUsage
	return fmt.Sprintf("STATUS=%s: %s, running %d, waiting %d, KV %.0f%%, %.1f tok/s", d.State(),
		strings.Join(names, " "), running, waiting, 100*kv, tps)
}

// busy reports whether any loaded model runs or queues a request.
func (d *Daemon) busy() bool {
	for _, rt := range d.loaded() {
		if s := rt.Engine.Stats(); s.Running+s.Waiting > 0 {
			return true
		}
	}
	return false
}

func shortName(path string) string {
	for i := len(path) - 1; i >= 0; i-- {
		if path[i] == '/' {
			return path[i+1:]
		}
	}
	return path
}

// superviseSystemd keeps STATUS= current and drives the watchdog from the
// engine loop's own heartbeat: pings stop when the loop is wedged, so
// systemd restarts the service.
func (d *Daemon) superviseSystemd(ctx context.Context, heartbeat func() time.Time) {
	status := time.NewTicker(statusEvery)
	defer status.Stop()
	var ping <-chan time.Time
	interval := d.notifier.WatchdogInterval()
	if interval > 0 {
		t := time.NewTicker(interval / 2)
		defer t.Stop()
		ping = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-status.C:
			d.notify(d.statusLine())
		case <-ping:
			if hb := heartbeat(); time.Since(hb) < interval {
				d.notify("WATCHDOG=1")
			} else {
				d.log.Error("engine loop wedged: withholding the watchdog ping", "last_heartbeat", hb)
			}
		}
	}
}

// activatedListeners returns the sockets systemd passed (LISTEN_FDS): the
// msgpack one, and those named "http" (FileDescriptorName=http in
// batchd-http.socket) for the HTTP API.
func activatedListeners() (msgpack net.Listener, http []net.Listener, err error) {
	named, err := activation.ListenersWithNames()
	if err != nil {
		return nil, nil, err
	}
	for name, lns := range named {
		for _, ln := range lns {
			if ln == nil {
				continue
			}
			if ul, ok := ln.(*net.UnixListener); ok {
				ul.SetUnlinkOnClose(false) // the socket is systemd's
			}
			switch {
			case name == "http":
				http = append(http, ln)
			case msgpack == nil:
				msgpack = ln
			default:
				_ = ln.Close()
			}
		}
	}
	return msgpack, http, nil
}

// idleExit returns a channel closed once the daemon has had no connection
// and no request for after (socket activation's scale to zero).
func (d *Daemon) idleExit(ctx context.Context, after time.Duration) <-chan struct{} {
	ch := make(chan struct{})
	if after <= 0 {
		return ch
	}
	go func() {
		t := time.NewTicker(min(after/4, time.Second))
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				idle, since := d.srv.Idle()
				if !idle || d.busy() {
					continue
				}
				if time.Since(since) >= after {
					d.log.Info("idle: exiting", "idle_exit_after", after)
					close(ch)
					return
				}
			}
		}
	}()
	return ch
}
