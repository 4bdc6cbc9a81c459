//go:build linux

package daemon

import (
	"time"

	sd "github.com/coreos/go-systemd/v22/daemon"
	"golang.org/x/sys/unix"
)

// systemdNotifier speaks sd_notify. Without NOTIFY_SOCKET it sends nothing
// and fails nothing, so the same binary runs with or without systemd.
type systemdNotifier struct{}

func (systemdNotifier) Notify(state string) error {
	_, err := sd.SdNotify(false, state)
	return err
}

func (systemdNotifier) WatchdogInterval() time.Duration {
	d, err := sd.SdWatchdogEnabled(false)
	if err != nil {
		return 0
	}
	return d
}

// monotonicUsec is CLOCK_MONOTONIC in microseconds, for RELOADING=1.
func monotonicUsec() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0
	}
	return ts.Sec*1e6 + ts.Nsec/1e3
}
