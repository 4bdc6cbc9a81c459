package ipc

import (
	"fmt"
	"os/user"
	"slices"
	"strconv"
)

// Policy says who may use the socket. Root and the daemon's own user are
// always admitted and are admins. With no allowed users or groups, anyone
// who can open the socket file (its mode and group are the gate) is admitted.
type Policy struct {
	AllowedUIDs []uint32
	AllowedGIDs []uint32
	AdminUIDs   []uint32
	Self        uint32 // the daemon's uid
	// MaxRequestsPerUser caps a uid's requests in flight across its
	// connections; 0 means no cap.
	MaxRequestsPerUser int
}

// Allowed reports whether p may connect.
func (pol *Policy) Allowed(p Peer) bool {
	if p.UID == 0 || p.UID == pol.Self {
		return true
	}
	if len(pol.AllowedUIDs) == 0 && len(pol.AllowedGIDs) == 0 {
		return true
	}
	if slices.Contains(pol.AllowedUIDs, p.UID) || slices.Contains(pol.AllowedGIDs, p.GID) {
		return true
	}
	for _, g := range p.Groups {
		if slices.Contains(pol.AllowedGIDs, g) {
			return true
		}
	}
	return false
}

// Admin reports whether p may see and cancel other users' requests.
func (pol *Policy) Admin(p Peer) bool {
	return p.UID == 0 || p.UID == pol.Self || slices.Contains(pol.AdminUIDs, p.UID)
}

// ResolveUsers turns user names or numeric uids into uids.
func ResolveUsers(names []string) ([]uint32, error) {
	var out []uint32
	for _, n := range names {
		if id, err := strconv.ParseUint(n, 10, 32); err == nil {
			out = append(out, uint32(id))
			continue
		}
		u, err := user.Lookup(n)
		if err != nil {
			return nil, fmt.Errorf("user %q: %w", n, err)
		}
		id, _ := strconv.ParseUint(u.Uid, 10, 32)
		out = append(out, uint32(id))
	}
	return out, nil
}

// ResolveGroups turns group names or numeric gids into gids.
func ResolveGroups(names []string) ([]uint32, error) {
	var out []uint32
	for _, n := range names {
		gid, err := lookupGroup(n)
		if err != nil {
			return nil, fmt.Errorf("group %q: %w", n, err)
		}
		out = append(out, uint32(gid))
	}
	return out, nil
}
