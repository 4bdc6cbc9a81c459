package daemon

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"net/http"
	"strconv"

	"github.com/batchd/batchd/backend"
	"github.com/batchd/batchd/config"
	"github.com/batchd/batchd/engine"
	"github.com/batchd/batchd/kvcache"
	"github.com/batchd/batchd/metrics"

	"github.com/batchd/batchd/httpapi"
	"github.com/batchd/batchd/httpapi/anthropic"
	"github.com/batchd/batchd/httpapi/ollama"
	"github.com/batchd/batchd/ipc"
)

// serveHTTP starts the OpenAI-compatible API on the sockets systemd
// passed, or on server.http_socket and server.http_listen; none is no API.
func (d *Daemon) serveHTTP(cfg config.Config, keys map[string]ipc.Peer) error {
	lns := d.activatedHTTP
	if len(lns) == 0 && cfg.Server.HTTPSocket != "" {
		mode, _ := strconv.ParseUint(cfg.Server.SocketMode, 8, 32)
		ul, err := ipc.Listen(ipc.ListenOptions{Path: cfg.Server.HTTPSocket, Mode: fs.FileMode(mode), Group: cfg.Server.SocketGroup})
		if err != nil {
			return err
		}
		lns = append(lns, ul)
	}
	if cfg.Server.HTTPListen != "" && !hasTCP(lns) {
		tl, err := net.Listen("tcp", config.HTTPListenAddr(cfg.Server.HTTPListen))
		if err != nil {
			closeListeners(lns)
			return err
		}
		lns = append(lns, tl)
	}
	if len(lns) == 0 {
		return nil
	}
	d.httpSrv = httpapi.New(httpapi.Options{Backend: frontend{d.svc, d}, Users: d.srv, Logger: d.log, Anonymous: cfg.Resolved().Anonymous,
		Model: cfg.DefaultModelName(), Budget: d.conns, PreAuthTimeout: cfg.Server.HelloTimeout.Duration,
		Responses: d.srv.Responses()}) // one store: a conversation goes on over either
	d.httpSrv.SetAPIKeys(keys)
	ollama.Register(d.httpSrv, frontend{d.svc, d})
	anthropic.Register(d.httpSrv, frontend{d.svc, d})
	d.httpSrv.Route("GET /metrics", d.vllmMetrics(cfg), nil) // the endpoint picker scrapes without a key
	for _, ln := range lns {
		go func() {
			if err := d.httpSrv.Serve(ln); err != nil && !errors.Is(err, ipc.ErrServerClosed) {
				d.log.Error("http server stopped", "addr", ln.Addr().String(), "err", err)
			}
		}()
		d.log.Info("serving the HTTP API", "addr", ln.Addr().String())
	}
	d.onStop("http server", func(ctx context.Context) error {
		if err := d.httpSrv.Shutdown(ctx); err != nil {
			return errors.Join(err, d.httpSrv.Close())
		}
		return nil
	})
	return nil
}

func hasTCP(lns []net.Listener) bool {
	for _, ln := range lns {
		if _, ok := ln.(*net.TCPListener); ok {
			return true
		}
	}
	return false
}

func closeListeners(lns []net.Listener) {
	for _, ln := range lns {
		_ = ln.Close()
	}
}

// vllmMetrics answers the endpoint picker's scrape with every loaded
// model's gauges; while none is loaded (the default model loading), with
// the name and block size it will serve under (restart-only fields), so
// that a scrape never reads model_name="" or block_size="0".
func (d *Daemon) vllmMetrics(cfg config.Config) func(http.ResponseWriter, *http.Request, ipc.Peer) {
	name := cfg.DefaultModelName()
	if name == "" {
		name = cfg.DefaultModel
	}
	block := cfg.Engine.BlockSize
	if block == 0 {
		block = kvcache.DefaultBlockSize
	}
	return func(w http.ResponseWriter, _ *http.Request, _ ipc.Peer) {
		var ms []metrics.ModelGauges
		for _, lm := range d.loaded() {
			ms = append(ms, metrics.ModelGauges{Name: lm.Name, Gauges: lm.Engine.Gauges(), CacheDtype: lm.Plan.KVCacheType})
		}
		if len(ms) == 0 {
			ms = []metrics.ModelGauges{{Name: name, Gauges: engine.Gauges{BlockSize: block}, CacheDtype: kvName(cfg)}}
		}
		metrics.WriteVLLM(w, ms)
	}
}

// responsesStoreBytes is server.responses_store_mb as httpapi takes it
// (negative: none kept).
func responsesStoreBytes(mb int) int64 {
	if mb <= 0 {
		return -1
	}
	return int64(mb) << 20
}

// kvName is the K/V type the config gives [engine] ("" if it names none
// this build stores: the config was validated).
func kvName(cfg config.Config) string {
	kv, err := backend.ParseKV(cfg.Engine.KVCacheType, cfg.Engine.KVCacheTypeK, cfg.Engine.KVCacheTypeV)
	if err != nil {
		return ""
	}
	return kv.String()
}
