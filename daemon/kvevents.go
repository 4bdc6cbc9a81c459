package daemon

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/batchd/batchd/engine"
	"github.com/batchd/batchd/kvevents"
)

// KVEventsConfig publishes the prefix cache's changes for a router that
// routes by cached prefix (vLLM's KV events over ZeroMQ, as llm-d's
// indexer subscribes to them; see package kvevents).
type KVEventsConfig struct {
	// Endpoint is the ZeroMQ endpoint the PUB socket binds, e.g.
	// "tcp://*:5557" (vLLM's and llm-d's default port); "" is off
	// (default). The events carry prompt token ids: bind where only the
	// router reaches it (restart).
	Endpoint string `toml:"endpoint"`
	// Pod is this replica in each topic, kv@POD@MODEL; default $POD_IP
	// (or the host name) with server.http_listen's port (restart).
	Pod string `toml:"pod"`
}

// startKVEvents binds the publisher when kv_events.endpoint is set.
func (d *Daemon) startKVEvents(cfg Config) error {
	if cfg.KVEvents.Endpoint == "" {
		return nil
	}
	p, err := kvevents.New(kvevents.Options{Endpoint: cfg.KVEvents.Endpoint, Logger: d.log})
	if err != nil {
		return err
	}
	d.kvPub, d.kvPod = p, kvPod(cfg, d.getenv)
	d.log.Info("publishing KV events", "endpoint", cfg.KVEvents.Endpoint, "addr", p.Addr().String(),
		"topic", kvevents.TopicName(d.kvPod, "MODEL"))
	d.onStop("kv events", func(context.Context) error { return p.Close() })
	return nil
}

// kvPod is the replica's name in topics: kv_events.pod, else the pod's IP
// (the chart passes POD_IP) or the host name, with the HTTP API's port, as
// llm-d's guides name a vLLM pod.
func kvPod(cfg Config, getenv func(string) string) string {
	if cfg.KVEvents.Pod != "" {
		return cfg.KVEvents.Pod
	}
	host := getenv("POD_IP")
	if host == "" {
		host, _ = os.Hostname()
	}
	if _, port, err := net.SplitHostPort(cfg.Server.HTTPListen); err == nil && port != "" {
		return net.JoinHostPort(host, port)
	}
	return host
}

// kvSink is model name's event sink, nil when events are off.
func (d *Daemon) kvSink(name, backendName string) engine.KVEventSink {
	if d.kvPub == nil {
		return nil
	}
	return d.kvPub.Topic(d.kvPod, name, kvMedium(backendName))
}

// kvMedium is where a backend keeps its KV, in vLLM's words.
func kvMedium(backendName string) string {
	if backendName == "" || strings.EqualFold(backendName, "cpu") {
		return "CPU"
	}
	return "GPU"
}

func (c KVEventsConfig) validate() error {
	if c.Endpoint != "" && !strings.HasPrefix(c.Endpoint, "tcp://") {
		return fmt.Errorf("kv_events.endpoint %q: want tcp://HOST:PORT (e.g. tcp://*:5557)", c.Endpoint)
	}
	if strings.Contains(c.Pod, "@") {
		return fmt.Errorf("kv_events.pod %q: no @ (it separates the topic's parts)", c.Pod)
	}
	return nil
}
