package config

import (
	"os"
	"strings"
	"testing"
)

// TestRouting: tags first, then the prompt's length, then the user's
// default; an unknown channel or a share out of range is refused.
func TestRouting(t *testing.T) {
	c := Default()
	c.Model.Path = os.Args[0]
	c.Routing = RoutingConfig{Tags: map[string]string{"interactive": "realtime"}, BulkPromptTokens: 100,
		Users: map[string]string{"65534": "bulk"}}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		uid    uint32
		tags   []string
		prompt int
		want   string
	}{
		{0, []string{"interactive"}, 500, "realtime"}, // tags first
		{0, nil, 500, "bulk"},                         // then prompt length
		{65534, nil, 5, "bulk"},                       // then the user's default
		{0, []string{"other"}, 5, "standard"},
	} {
		if got := c.Route(tc.uid, tc.tags, tc.prompt); got != tc.want {
			t.Errorf("route(%d, %v, %d) = %s, want %s", tc.uid, tc.tags, tc.prompt, got, tc.want)
		}
	}
	bad := Default()
	bad.Model.Path = os.Args[0]
	bad.Routing.Tags = map[string]string{"x": "warp"}
	bad.Channels["realtime"] = ChannelConfig{Share: 2}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "warp") || !strings.Contains(err.Error(), "share") {
		t.Fatalf("bad routing accepted: %v", err)
	}
}
