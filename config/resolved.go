package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/user"
	"strconv"

	"github.com/batchd/batchd/ipc"
)

// Resolved is the typed form of a config's names and levels: what
// Validate looked up, so that the daemon resolves a config once.
type Resolved struct {
	Policy       ipc.Policy
	UserChannels map[uint32]string // routing.users by uid
	Level        slog.Level
	APIKeys      map[string]ipc.Peer // bearer key -> the user it stands for
	Anonymous    *ipc.Peer           // who a keyless TCP request runs as; nil: 401
}

// Resolved returns the resolved fields, validating first if need be (a
// config built in code); call it on a config that validated.
func (c *Config) Resolved() Resolved {
	if c.resolved == nil {
		_ = c.Validate()
	}
	if c.resolved == nil {
		return Resolved{UserChannels: map[uint32]string{}}
	}
	return *c.resolved
}

// minAPIKeyBytes keeps keys out of guessing range.
const minAPIKeyBytes = 16

// resolveAPIKeys checks the HTTP settings and maps each key to its user,
// and anonymous_user to the user keyless TCP requests run as.
func resolveAPIKeys(s ServerConfig) (map[string]ipc.Peer, *ipc.Peer, error) {
	var errs []error
	out := map[string]ipc.Peer{}
	for user, key := range s.APIKeys {
		uids, err := ipc.ResolveUsers([]string{user})
		if err != nil {
			errs = append(errs, fmt.Errorf("server.api_keys: %w", err))
			continue
		}
		if len(key) < minAPIKeyBytes {
			errs = append(errs, fmt.Errorf("server.api_keys.%s: a key of %d bytes; use at least %d (openssl rand -hex 24)", user, len(key), minAPIKeyBytes))
			continue
		}
		if _, dup := out[key]; dup {
			errs = append(errs, fmt.Errorf("server.api_keys.%s: the same key as another user", user))
			continue
		}
		out[key] = keyUser(uids[0])
	}
	if s.MetricsKey != "" && len(s.MetricsKey) < minAPIKeyBytes {
		errs = append(errs, fmt.Errorf("server.metrics_key: %d bytes; use at least %d (openssl rand -hex 24)", len(s.MetricsKey), minAPIKeyBytes))
	}
	var anon *ipc.Peer
	if s.AnonymousUser != "" {
		if uids, err := ipc.ResolveUsers([]string{s.AnonymousUser}); err != nil {
			errs = append(errs, fmt.Errorf("server.anonymous_user: %w", err))
		} else if uids[0] == 0 || int(uids[0]) == os.Getuid() {
			// Root and the daemon's own user are exempt from the per-user
			// connection share: keyless clients as them could fill the
			// whole budget.
			errs = append(errs, fmt.Errorf("server.anonymous_user %q is uid %d (root or batchd's own user), which no per-user cap bounds; "+
				"name an unprivileged user of its own (e.g. nobody)", s.AnonymousUser, uids[0]))
		} else {
			p := keyUser(uids[0])
			anon = &p
		}
	}
	if s.HTTPListen != "" {
		if _, _, err := net.SplitHostPort(s.HTTPListen); err != nil {
			errs = append(errs, fmt.Errorf("server.http_listen %q: want host:port or :port", s.HTTPListen))
		}
		if len(s.APIKeys) == 0 && s.AnonymousUser == "" {
			errs = append(errs, errors.New("server.http_listen needs server.api_keys (or server.anonymous_user): TCP clients have no peer credentials"))
		}
	}
	return out, anon, errors.Join(errs...)
}

// HTTPListenAddr binds a bare :port to loopback; a host must be named to
// listen beyond this machine.
func HTTPListenAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err == nil && host == "" {
		return net.JoinHostPort("127.0.0.1", port)
	}
	return addr
}

// keyUser is the peer an API key stands for: its uid, and the primary gid
// and groups the user database gives it (none for a uid it does not know),
// so that allowed_groups admits a key's user as it admits the user's own
// processes.
func keyUser(uid uint32) ipc.Peer {
	p := ipc.Peer{UID: uid, GID: ^uint32(0), PID: -1}
	u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10))
	if err != nil {
		return p
	}
	if g, err := strconv.ParseUint(u.Gid, 10, 32); err == nil {
		p.GID = uint32(g)
	}
	gids, _ := u.GroupIds()
	for _, s := range gids {
		if g, err := strconv.ParseUint(s, 10, 32); err == nil {
			p.Groups = append(p.Groups, uint32(g))
		}
	}
	return p
}
