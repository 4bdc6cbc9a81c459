package config

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/batchd/batchd/kvevents"
)

// KVEventsConfig publishes the prefix cache's changes for a router that
// routes by cached prefix (vLLM's KV events over ZeroMQ, as llm-d's
// indexer subscribes to them; see package kvevents).
type KVEventsConfig struct {
	// Endpoint is the ZeroMQ endpoint the PUB socket binds: "" is off
	// (default); "ipc:///run/batchd/kv.sock" is a Unix socket (mode and
	// group as server.socket_mode and socket_group; a subscriber must pass
	// allowed_users/allowed_groups as a client does); "tcp://*:5557"
	// (vLLM's and llm-d's default port) needs allow_from. The events carry
	// prompt token ids (restart).
	Endpoint string `toml:"endpoint"`
	// AllowFrom lists the addresses or CIDRs whose TCP subscribers are
	// served (the router's pods, e.g. "10.0.0.0/8"); others are hung up on
	// after the handshake. A TCP endpoint needs it; ["0.0.0.0/0", "::/0"]
	// serves anyone who reaches the port, for a port a NetworkPolicy
	// guards (restart).
	AllowFrom []string `toml:"allow_from"`
	// Pod is this replica in each topic, kv@POD@MODEL; default $POD_IP
	// (or the host name) with server.http_listen's port (restart).
	Pod string `toml:"pod"`
}

// ParseAllowFrom reads kv_events.allow_from: addresses or CIDRs.
func ParseAllowFrom(list []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(list))
	for _, s := range list {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			a, aerr := netip.ParseAddr(s)
			if aerr != nil {
				return nil, fmt.Errorf("kv_events.allow_from %q: want an address or a CIDR", s)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

func (c KVEventsConfig) validate() error {
	if c.Endpoint == "" {
		return nil
	}
	network, _, err := kvevents.ParseEndpoint(c.Endpoint)
	if err != nil {
		return fmt.Errorf("kv_events.endpoint: %w (e.g. tcp://*:5557 or ipc:///run/batchd/kv.sock)", err)
	}
	if _, err := ParseAllowFrom(c.AllowFrom); err != nil {
		return err
	}
	if network == "tcp" && len(c.AllowFrom) == 0 {
		return fmt.Errorf("kv_events.endpoint %q: a TCP endpoint needs kv_events.allow_from, the router's addresses or CIDRs "+
			"(the events carry prompt token ids; [\"0.0.0.0/0\", \"::/0\"] serves anyone who reaches the port); "+
			"or publish on ipc:// for a router on this host", c.Endpoint)
	}
	if strings.Contains(c.Pod, "@") {
		return fmt.Errorf("kv_events.pod %q: no @ (it separates the topic's parts)", c.Pod)
	}
	return nil
}
