package config

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestWidenedAccess: each way a config lets more in is named; narrowing
// and unrelated changes are not.
func TestWidenedAccess(t *testing.T) {
	parse := func(s string) *Config {
		c, _, err := Parse("t", []byte("[model]\npath = \"/dev/null\"\n"+s))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		return &c
	}
	base := parse("[server]\nallowed_users = [\"5\"]\nadmin_users = [\"6\"]\nmax_requests_per_user = 8\n[server.api_keys]\n\"5\" = \"0123456789abcdef0123\"\n")
	for _, tc := range []struct {
		next string
		want string // "" : not widened
	}{
		{"[server]\nallowed_users = [\"5\"]\nadmin_users = [\"6\"]\nmax_requests_per_user = 4\n[server.api_keys]\n\"5\" = \"0123456789abcdef0123\"\n", ""},
		{"[server]\nallowed_users = [\"5\", \"7\"]\nadmin_users = [\"6\"]\nmax_requests_per_user = 8\n[server.api_keys]\n\"5\" = \"0123456789abcdef0123\"\n", "admits uid 7"},
		{"[server]\nallowed_groups = [\"9\"]\nallowed_users = [\"5\"]\nadmin_users = [\"6\"]\nmax_requests_per_user = 8\n[server.api_keys]\n\"5\" = \"0123456789abcdef0123\"\n", "admits gid 9"},
		{"[server]\nallowed_users = [\"5\"]\nadmin_users = [\"6\", \"5\"]\nmax_requests_per_user = 8\n[server.api_keys]\n\"5\" = \"0123456789abcdef0123\"\n", "admin_users adds uid 5"},
		{"[server]\nallowed_users = [\"5\"]\nadmin_users = [\"6\"]\nmax_requests_per_user = 0\n[server.api_keys]\n\"5\" = \"0123456789abcdef0123\"\n", "8 -> no cap"},
		{"[server]\nallowed_users = [\"5\"]\nadmin_users = [\"6\"]\nmax_requests_per_user = 8\n[server.api_keys]\n\"5\" = \"0123456789abcdef0123\"\n\"6\" = \"0123456789abcdef0456\"\n", "adds a key for uid 6"},
		{"[server]\nallowed_users = [\"5\"]\nadmin_users = [\"6\"]\nmax_requests_per_user = 8\n", "every key dropped"},
		{"[server]\nallowed_users = [\"5\"]\nadmin_users = [\"6\"]\nmax_requests_per_user = 8\nsocket_mode = \"0666\"\n[server.api_keys]\n\"5\" = \"0123456789abcdef0123\"\n", "socket_mode 0660 -> 0666"},
		{"[server]\nallowed_users = [\"5\"]\nadmin_users = [\"6\"]\nmax_requests_per_user = 8\nmetrics_listen = \"127.0.0.1:9100\"\n[server.api_keys]\n\"5\" = \"0123456789abcdef0123\"\n", "metrics_listen opens"},
	} {
		got := strings.Join(WidenedAccess(base, parse(tc.next)), "; ")
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%q: widened %q, want %q", tc.next, got, tc.want)
		}
	}
}

// TestWidenedIsolation: a file that loses a channel's isolation (or its
// own steps), routes a tag or user off an isolated channel, or drops or
// changes a compliance rule widens what users share; such a save was
// applied at once (another user then hit an isolated prompt's blocks and a
// medical tag ran on bulk). Adding isolation is not widening.
func TestWidenedIsolation(t *testing.T) {
	parse := func(s string) *Config {
		c, _, err := Parse("t", []byte("[model]\npath = \"/dev/null\"\n"+s))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		return &c
	}
	const rule = "[[compliance]]\nname = \"hipaa\"\ntags = [\"medical\"]\nchannel = \"realtime\"\nisolated = true\n"
	const routing = "[routing.tags]\nmedical = \"realtime\"\n[routing.users]\n\"1234\" = \"realtime\"\n"
	const channel = "[channels.realtime]\nisolated = true\nown_steps = true\n"
	base := parse(routing + channel + rule)
	for _, tc := range []struct{ next, want string }{
		{routing + channel + rule, ""},
		{routing + channel + rule + "[channels.bulk]\nisolated = true\n", ""},
		{"[routing.tags]\nmedical = \"realtime\"\n" + channel + rule, "routing.users.1234 moves from isolated channel realtime"},
		{routing + "[channels.realtime]\nisolated = true\n" + rule, "channels.realtime.own_steps turned off"},
		{routing + channel, "compliance rule hipaa removed or changed"},
		{routing + channel + strings.Replace(rule, "isolated = true", "isolated = false", 1), "compliance rule hipaa removed"},
		{"", "channels.realtime.isolated turned off"},
	} {
		got := strings.Join(WidenedAccess(base, parse(tc.next)), "; ")
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%q: widened %q, want %q", tc.next, got, tc.want)
		}
	}
}

// TestAnonymousUserMustBeCapped: anonymous_user naming root or the
// daemon's own uid is refused (neither has a per-user connection share,
// so 1,024 keyless connections filled the budget); another uid is taken.
func TestAnonymousUserMustBeCapped(t *testing.T) {
	for _, tc := range []struct {
		user string
		ok   bool
	}{{"0", false}, {fmt.Sprint(os.Getuid()), false}, {"65534", true}} {
		s := ServerConfig{HTTPListen: "127.0.0.1:0", AnonymousUser: tc.user}
		_, anon, err := resolveAPIKeys(s)
		if tc.ok != (err == nil) || tc.ok != (anon != nil) {
			t.Errorf("anonymous_user %s: %v, %v", tc.user, anon, err)
		}
	}
}
