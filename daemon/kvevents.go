package daemon

import (
	"context"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/batchd/batchd/config"

	"github.com/batchd/batchd/engine"
	"github.com/batchd/batchd/ipc"
	"github.com/batchd/batchd/kvevents"
)

// kvSubscriberUID is what a TCP subscriber counts as in the connection
// budget: not a local user, and not exempt from the per-user share.
const kvSubscriberUID = 0xFFFFFFFE

// startKVEvents binds the publisher when kv_events.endpoint is set. Its
// connections draw on the daemon's one connection budget: pending (and
// evictable) until the handshake is done and the peer admitted.
func (d *Daemon) startKVEvents(cfg config.Config) error {
	if cfg.KVEvents.Endpoint == "" {
		return nil
	}
	network, addr, err := kvevents.ParseEndpoint(cfg.KVEvents.Endpoint)
	if err != nil {
		return err
	}
	allow, err := config.ParseAllowFrom(cfg.KVEvents.AllowFrom)
	if err != nil {
		return err
	}
	var ln net.Listener
	if network == "unix" {
		mode, _ := strconv.ParseUint(cfg.Server.SocketMode, 8, 32)
		ln, err = ipc.Listen(ipc.ListenOptions{Path: addr, Mode: fs.FileMode(mode), Group: cfg.Server.SocketGroup})
	} else {
		ln, err = net.Listen(network, addr)
	}
	if err != nil {
		return err
	}
	ln = d.conns.Listener(ln, ipc.ListenerOptions{PreAuth: cfg.Server.HelloTimeout.Duration})
	p, err := kvevents.New(kvevents.Options{Listener: ln, Logger: d.log, Admit: func(c net.Conn) error {
		return d.admitSubscriber(c, allow)
	}})
	if err != nil {
		_ = ln.Close()
		return err
	}
	d.kvPub, d.kvPod = p, kvPod(cfg, d.getenv)
	d.log.Info("publishing KV events", "endpoint", cfg.KVEvents.Endpoint, "addr", p.Addr().String(),
		"topic", kvevents.TopicName(d.kvPod, "MODEL"))
	d.onStop("kv events", func(context.Context) error { return p.Close() })
	return nil
}

// admitSubscriber decides whether the peer on c may read the events: on
// a Unix socket by its credentials under the access policy (as a client),
// on TCP by its address; then it takes its place in the budget.
func (d *Daemon) admitSubscriber(c net.Conn, allow []netip.Prefix) error {
	bc, ok := c.(*ipc.BudgetConn)
	if !ok {
		return fmt.Errorf("a connection outside the budget")
	}
	uid := uint32(kvSubscriberUID)
	switch raw := bc.Conn.(type) {
	case *net.UnixConn:
		p, err := ipc.PeerCred(raw)
		if err != nil {
			return err
		}
		if !d.srv.Policy().Allowed(p) {
			return fmt.Errorf("uid %d is not allowed (server.allowed_users, server.allowed_groups)", p.UID)
		}
		uid = p.UID
	default:
		ap, err := netip.ParseAddrPort(c.RemoteAddr().String())
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(allow, func(p netip.Prefix) bool { return p.Contains(ap.Addr().Unmap()) }) {
			return fmt.Errorf("%s is not in kv_events.allow_from", ap.Addr())
		}
	}
	return bc.Slot().Authenticate(uid)
}

// kvPod is the replica's name in topics: kv_events.pod, else the pod's IP
// (the chart passes POD_IP) or the host name, with the HTTP API's port, as
// llm-d's guides name a vLLM pod.
func kvPod(cfg config.Config, getenv func(string) string) string {
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
