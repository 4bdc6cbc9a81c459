package daemon

import (
	"fmt"

	"github.com/batchd/batchd/ipc"
	"github.com/batchd/batchd/ipc/wire"
	"github.com/batchd/batchd/metrics"
	"github.com/batchd/batchd/serve"
)

// frontend is what the transports serve: the serving layer's requests,
// and the daemon's own health, stats and reload.
type frontend struct {
	*serve.Service
	d *Daemon
}

var (
	_ ipc.Backend  = frontend{}
	_ ipc.Reloader = frontend{}
)

// Health is the lifecycle state and the default model.
func (f frontend) Health() wire.Health {
	h := wire.Health{State: f.d.State().String(), Version: Version}
	if lm := f.d.defaultModel(); lm != nil {
		h.Model = serve.ModelInfo(lm)
	}
	return h
}

// Stats is the engines' figures, the health score, then the daemon's.
func (f frontend) Stats() *wire.StatsReport {
	r, def := f.Service.Stats()
	if def != nil {
		r.Health = metrics.HealthOf(*def, f.d.ttftTarget(metrics.HealthChannel))
	}
	f.d.daemonFigures(r)
	return r
}

// Reload is batchctl reload: an explicit reload, as SIGHUP.
func (f frontend) Reload(p ipc.Peer) (*wire.Reload, error) {
	res := f.d.reload(fmt.Sprintf("batchctl reload (uid %d)", p.UID), nil, true)
	if res.Err != nil {
		return nil, wire.Errorf(wire.CodeInvalidArgument, "config rejected, the running one stays: %v", res.Err)
	}
	return &wire.Reload{Applied: res.Applied, RestartNeeded: res.RestartNeeded}, nil
}

// daemonFigures adds the lifecycle state, the live config, reloads and
// connections.
func (d *Daemon) daemonFigures(r *wire.StatsReport) {
	r.State = d.State().String() // before d.mu: State takes it
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.cfg.Engine
	r.Config = wire.ConfigSummary{MaxNumSeqs: c.MaxNumSeqs, MaxNumBatchedTokens: c.MaxNumBatchedTokens,
		MaxPartialPrefills: c.MaxPartialPrefills, Policy: c.Policy, MaxQueue: c.MaxQueue,
		MaxRequestsPerUser: d.cfg.Server.MaxRequestsPerUser, LogLevel: d.cfg.LogLevel}
	r.Reloads, r.ReloadErrors, r.LastReloadError = d.reloads, d.reloadErrs, d.lastErr
	r.RestartNeeded = append([]string{}, d.restart...)
	r.ReloadHeld = append([]string{}, d.held...)
	if d.conns != nil {
		c := d.conns.Stats()
		r.Connections = wire.Connections{Max: c.Max, MaxPending: c.MaxPending, PerUser: c.PerUser, Open: c.Open,
			Pending: c.Pending, Refused: c.Refused, Evicted: c.Evicted}
	}
}
