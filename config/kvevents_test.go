package config

import (
	"strings"
	"testing"
)

// TestKVEventsTCPNeedsAllowFrom: a TCP endpoint without allow_from is a
// config error (the events carry every user's prompt token ids); with it,
// or on ipc://, the config validates; a pod name may not hold the topic's
// separator.
func TestKVEventsTCPNeedsAllowFrom(t *testing.T) {
	for _, tc := range []struct {
		c    KVEventsConfig
		want string // "": valid
	}{
		{KVEventsConfig{Endpoint: "tcp://*:5557"}, "allow_from"},
		{KVEventsConfig{Endpoint: "tcp://*:5557", AllowFrom: []string{"10.0.0.0/8", "192.168.1.7"}}, ""},
		{KVEventsConfig{Endpoint: "tcp://*:5557", AllowFrom: []string{"10.0.0.300/8"}}, "allow_from"},
		{KVEventsConfig{Endpoint: "ipc:///run/batchd/kv.sock"}, ""},
		{KVEventsConfig{Endpoint: "inproc://x"}, "kv_events.endpoint"},
		{KVEventsConfig{Endpoint: "ipc:///run/batchd/kv.sock", Pod: "a@b"}, "no @"},
	} {
		err := tc.c.validate()
		if (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.c, err, tc.want)
		}
	}
}
