package daemon

import (
	"fmt"
	"os"

	"github.com/batchd/batchd/config"
)

// reloadResult is what one reload did.
type reloadResult struct {
	Applied bool
	// RestartNeeded: restart fields the file changes (kept at their running values).
	RestartNeeded []string
	// Held: how the file would widen access; a file change that widens is
	// not applied until an explicit reload.
	Held []string
	Err  error
}

// reloadConfig reads the config file for a reload. A file with no keys is
// rejected, not read as "all defaults": it is what a truncating save or a
// write still in progress looks like, and its defaults would admit everyone.
func (d *Daemon) reloadConfig(b []byte) (config.Config, error) {
	if d.flags.Config == "" {
		return d.loadConfig()
	}
	c, keys, err := config.Parse(d.flags.Config, b)
	if err == nil && keys == 0 {
		err = fmt.Errorf("config %s is empty (%d bytes, no keys); keeping the running config", d.flags.Config, len(b))
	}
	if err != nil {
		return c, err
	}
	return d.configFrom(c)
}

// reload re-reads the configuration and applies what can change live; an
// invalid or empty file is rejected whole and the running config stays. b
// is the file's content as the watcher saw it settle (nil: read it now).
// explicit is an operator's reload (SIGHUP, batchctl reload): only it may
// widen access; a file change that would is held, logged and reported in
// stats until then.
func (d *Daemon) reload(why string, b []byte, explicit bool) reloadResult {
	d.notify(fmt.Sprintf("RELOADING=1\nMONOTONIC_USEC=%d", monotonicUsec()))
	defer func() { d.notify("READY=1\n" + d.statusLine()) }()
	var err error
	if b == nil && d.flags.Config != "" {
		b, err = os.ReadFile(d.flags.Config)
	}
	var next config.Config
	if err == nil {
		next, err = d.reloadConfig(b)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err != nil {
		d.reloadErrs++
		d.lastErr = err.Error()
		d.log.Error("config rejected; keeping the running one", "trigger", why, "err", err)
		return reloadResult{Err: err}
	}
	widened := config.WidenedAccess(&d.approved, &next)
	if len(widened) > 0 && !explicit {
		d.held = widened
		d.log.Warn("config change widens access: not applied; apply it with batchctl reload or SIGHUP",
			"trigger", why, "widens", widened)
		return reloadResult{Held: widened}
	}
	d.approved = next
	restart := config.RestartNeeded(&d.cfg, &next)
	config.CarryRestartFields(&next, &d.cfg) // what applies now is the live part of next
	rs := next.Resolved()
	d.srv.SetPolicy(rs.Policy)
	if d.httpSrv != nil {
		d.httpSrv.SetAPIKeys(rs.APIKeys)
	}
	if d.svc != nil { // every loaded model; later loads take the live config too
		d.svc.Apply(next)
	}
	d.level.Set(rs.Level)
	d.cfg = next
	d.reloads++
	d.lastErr = ""
	d.restart = restart
	d.held = nil
	switch {
	case len(widened) > 0:
		d.log.Warn("config reloaded; access widened", "trigger", why, "widens", widened, "restart_needed", restart)
	case len(restart) > 0:
		d.log.Warn("config reloaded; some changes need a restart", "trigger", why, "restart_needed", restart)
	default:
		d.log.Info("config reloaded", "trigger", why)
	}
	return reloadResult{Applied: true, RestartNeeded: restart}
}
