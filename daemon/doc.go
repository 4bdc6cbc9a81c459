// Package daemon is batchd serve's lifecycle: it reads the config once
// (package config: defaults < file < environment < flags), opens the
// listeners (or takes systemd's), starts the serving layer (package serve)
// behind the msgpack socket and the HTTP API, the metrics and the KV-event
// publisher, tells systemd READY, reloads the config through fsnotify and
// SIGHUP (live fields applied, restart fields kept and reported, a change
// that widens access held until an explicit reload), sleeps and wakes the
// default model, and on a stop drains, then closes what it started in
// reverse order.
//
// It owns no request path: a request's way to an engine and back is
// package serve's; the daemon adds health, stats and reload (frontend.go).
// Nothing here runs at package init.
package daemon
