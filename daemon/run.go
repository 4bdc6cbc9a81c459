package daemon

import (
	"errors"
)

// Version is set at build time with -ldflags "-X github.com/batchd/batchd/daemon.Version=...".
var Version = "dev"

// usageError marks a command-line mistake (exit status 2).
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

// IsUsage reports whether err is a command-line mistake.
func IsUsage(err error) bool {
	var u usageError
	return errors.As(err, &u)
}
