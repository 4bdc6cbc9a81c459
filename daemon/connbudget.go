package daemon

import (
	"fmt"
	"os"
	"syscall"

	"github.com/batchd/batchd/ipc"
)

// ConnBudget is how many connections the daemon holds open at once, every
// listener together, and why.
type ConnBudget struct {
	Max            int    `json:"max"`             // open at once, all listeners
	MaxPending     int    `json:"max_pending"`     // of which not yet authenticated
	PerUser        int    `json:"per_user"`        // authenticated ones of one uid (root and the daemon's user: no cap)
	MaxConnections int    `json:"max_connections"` // server.max_connections
	NoFile         uint64 `json:"nofile"`          // this process's descriptor limit (RLIMIT_NOFILE)
	Reserve        int    `json:"reserve"`         // descriptors kept for everything else
}

// ConnectionBudget sizes the one budget: server.max_connections, but never
// more than the descriptor limit less a reserve for what else the daemon
// opens (listeners, epoll, inotify, model files, template workers' pipes,
// NVML's device files, the journal, a connection being refused). Go raises
// the soft limit to the hard one at start, so the limit read here is
// systemd's LimitNOFILE.
func ConnectionBudget(maxConns int) ConnBudget {
	var rl syscall.Rlimit
	nofile := uint64(1 << 20)
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err == nil {
		nofile = rl.Cur
	}
	return sizeBudget(maxConns, nofile)
}

func sizeBudget(maxConns int, nofile uint64) ConnBudget {
	reserve := 64
	if nofile < 256 {
		reserve = int(nofile / 4)
	}
	n := maxConns
	if room := int64(nofile) - int64(reserve); room < int64(n) {
		n = int(max(room, 1))
	}
	return ConnBudget{Max: n, MaxPending: max(1, n/2), PerUser: max(1, n/4), MaxConnections: maxConns, NoFile: nofile, Reserve: reserve}
}

func (b ConnBudget) String() string {
	why := "server.max_connections"
	if b.Max < b.MaxConnections {
		why = fmt.Sprintf("the descriptor limit %d less a reserve of %d; server.max_connections is %d", b.NoFile, b.Reserve, b.MaxConnections)
	}
	return fmt.Sprintf("%d open at most, every listener together (%s), %d of them unauthenticated, %d per user",
		b.Max, why, b.MaxPending, b.PerUser)
}

func (b ConnBudget) budget() *ipc.Budget {
	return ipc.NewBudget(ipc.BudgetOptions{Max: b.Max, MaxPending: b.MaxPending, PerUser: b.PerUser, Self: uint32(os.Getuid())})
}
