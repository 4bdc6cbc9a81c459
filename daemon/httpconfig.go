package daemon

import (
	"errors"
	"fmt"
	"net"

	"github.com/batchd/batchd/ipc"
)

// minAPIKeyBytes keeps keys out of guessing range.
const minAPIKeyBytes = 16

// resolveAPIKeys checks the HTTP settings and maps each key to its uid.
func resolveAPIKeys(s ServerConfig) (map[string]uint32, error) {
	var errs []error
	out := map[string]uint32{}
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
		out[key] = uids[0]
	}
	if s.HTTPListen != "" {
		if _, _, err := net.SplitHostPort(s.HTTPListen); err != nil {
			errs = append(errs, fmt.Errorf("server.http_listen %q: want host:port or :port", s.HTTPListen))
		}
		if len(s.APIKeys) == 0 {
			errs = append(errs, errors.New("server.http_listen needs server.api_keys: TCP clients have no peer credentials"))
		}
	}
	return out, errors.Join(errs...)
}

// httpListenAddr binds a bare :port to loopback; a host must be named to
// listen beyond this machine.
func httpListenAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err == nil && host == "" {
		return net.JoinHostPort("127.0.0.1", port)
	}
	return addr
}
