package config

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"

	"github.com/batchd/batchd/ipc"
)

// WidenedAccess lists how next would let more in than running does: users
// or groups admitted, admins added, a higher per-user cap, API keys added
// or every key dropped, a listener opened or a socket mode widened. A file
// change that widens access is held until an explicit reload (SIGHUP,
// batchctl reload), as PostgreSQL requires for its access file: a file
// cut short by a careless save still parses, and its defaults admit
// everyone. Narrowing applies at once.
func WidenedAccess(running, next *Config) []string {
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	rp, np := running.Resolved().Policy, next.Resolved().Policy
	switch {
	case openToAll(np) && !openToAll(rp):
		add("server.allowed_users and allowed_groups emptied: anyone who can open the socket is admitted")
	case !openToAll(np):
		for _, u := range np.AllowedUIDs {
			if !openToAll(rp) && !slices.Contains(rp.AllowedUIDs, u) {
				add("server.allowed_users admits uid %d", u)
			}
		}
		for _, g := range np.AllowedGIDs {
			if !openToAll(rp) && !slices.Contains(rp.AllowedGIDs, g) {
				add("server.allowed_groups admits gid %d", g)
			}
		}
	}
	for _, u := range np.AdminUIDs {
		if !slices.Contains(rp.AdminUIDs, u) {
			add("server.admin_users adds uid %d", u)
		}
	}
	if r, n := rp.MaxRequestsPerUser, np.MaxRequestsPerUser; r > 0 && (n == 0 || n > r) {
		add("server.max_requests_per_user %d -> %s", r, capText(n))
	}
	rk, nk := running.Resolved().APIKeys, next.Resolved().APIKeys
	for k, p := range nk {
		if old, ok := rk[k]; !ok || old.UID != p.UID {
			add("server.api_keys adds a key for uid %d", p.UID)
		}
	}
	if len(rk) > 0 && len(nk) == 0 {
		add("server.api_keys: every key dropped")
	}
	for _, l := range []struct{ name, r, n string }{
		{"server.http_listen", running.Server.HTTPListen, next.Server.HTTPListen},
		{"server.http_socket", running.Server.HTTPSocket, next.Server.HTTPSocket},
		{"server.metrics_listen", running.Server.MetricsListen, next.Server.MetricsListen},
	} {
		if l.n != "" && l.n != l.r {
			add("%s opens %q", l.name, l.n)
		}
	}
	if running.Server.MetricsKey != "" && next.Server.MetricsKey == "" {
		add("server.metrics_key removed: any local scraper is admitted")
	}
	rm, _ := strconv.ParseUint(running.Server.SocketMode, 8, 32)
	nm, _ := strconv.ParseUint(next.Server.SocketMode, 8, 32)
	if nm&^rm != 0 {
		add("server.socket_mode %04o -> %04o", rm, nm)
	}
	return append(out, widenedIsolation(running, next)...)
}

// widenedIsolation lists how next would share more than running does: a
// channel no longer isolated or in steps of its own, a tag or user that
// reached an isolated channel sent to one that is not, a compliance rule
// dropped or changed. A save cut short drops such tables as easily as the
// access lists, and their absence lets users read each other's prompts
// through cache hits, so they are held the same way.
func widenedIsolation(running, next *Config) []string {
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	for _, ch := range slices.Sorted(maps.Keys(running.Channels)) {
		r, n := running.Channels[ch], next.Channels[ch]
		if r.Isolated && !n.Isolated {
			add("channels.%s.isolated turned off: its users share prefix-cache blocks", ch)
		}
		if r.OwnSteps && !n.OwnSteps {
			add("channels.%s.own_steps turned off: its requests share batches", ch)
		}
	}
	isolated := func(c *Config, ch string) bool { return c.Channels[ch].Isolated }
	for _, tag := range slices.Sorted(maps.Keys(running.Routing.Tags)) {
		if r, n := running.Routing.Tags[tag], next.Routing.Tags[tag]; isolated(running, r) && !isolated(next, n) {
			add("routing.tags.%s moves from isolated channel %s to %q", tag, r, n)
		}
	}
	for _, u := range slices.Sorted(maps.Keys(running.Routing.Users)) {
		if r, n := running.Routing.Users[u], next.Routing.Users[u]; isolated(running, r) && !isolated(next, n) {
			add("routing.users.%s moves from isolated channel %s to %q", u, r, n)
		}
	}
	for i, r := range running.Compliance {
		if !slices.ContainsFunc(next.Compliance, func(n ComplianceRule) bool { return reflect.DeepEqual(n, r) }) {
			name := r.Name
			if name == "" {
				name = "#" + strconv.Itoa(i+1)
			}
			add("compliance rule %s removed or changed", name)
		}
	}
	return out
}

// openToAll: no allowed users or groups, so the socket's mode decides.
func openToAll(p ipc.Policy) bool { return len(p.AllowedUIDs) == 0 && len(p.AllowedGIDs) == 0 }

func capText(n int) string {
	if n == 0 {
		return "no cap"
	}
	return strconv.Itoa(n)
}
