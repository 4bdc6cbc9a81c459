//go:build !linux

package daemon

import "time"

// systemdNotifier is a no-op where there is no systemd.
type systemdNotifier struct{}

func (systemdNotifier) Notify(string) error             { return nil }
func (systemdNotifier) WatchdogInterval() time.Duration { return 0 }

func monotonicUsec() int64 { return 0 }
