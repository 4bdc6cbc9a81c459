// Package tune finds the batcher's setting for this machine and model: it
// runs a test matrix (batch size x batch window x load, prompts mixed
// short:medium:long), summarises each cell, finds the knee of throughput
// against batch size, recommends a setting per channel that meets its
// latency objectives with the most throughput, draws the curves as SVG,
// and rolls a recommendation out gradually, keeping it only if the
// running daemon's latency and throughput hold up against the baseline.
//
// It knows nothing of how a cell runs (a Runner does: the daemon's
// in-process engine, or a client of a running daemon) or of the config's
// file format beyond the fragment it prints.
package tune
