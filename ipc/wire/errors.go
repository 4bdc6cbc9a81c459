package wire

import (
	"errors"
	"fmt"
)

// Wire error codes, one per error category.
const (
	CodeInvalidArgument   = "invalid_argument"
	CodeNotFound          = "not_found"
	CodePermissionDenied  = "permission_denied"
	CodeResourceExhausted = "resource_exhausted"
	CodeQueueFull         = "queue_full" // a resource_exhausted that says which
	CodeUnavailable       = "unavailable"
	CodeInternal          = "internal"
)

// Error is an error with a wire code. errors.Is matches it against the
// sentinels below by code, on either side of the socket.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string {
	if e.Message == "" {
		return e.Code
	}
	return e.Code + ": " + e.Message
}

// Is matches sentinels by code; queue_full also matches resource_exhausted.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	if !ok || t.Message != "" {
		return false
	}
	return t.Code == e.Code || (t.Code == CodeResourceExhausted && e.Code == CodeQueueFull)
}

// Sentinels for errors.Is.
var (
	ErrInvalidArgument   = &Error{Code: CodeInvalidArgument}
	ErrNotFound          = &Error{Code: CodeNotFound}
	ErrPermissionDenied  = &Error{Code: CodePermissionDenied}
	ErrResourceExhausted = &Error{Code: CodeResourceExhausted}
	ErrQueueFull         = &Error{Code: CodeQueueFull}
	ErrUnavailable       = &Error{Code: CodeUnavailable}
	ErrInternal          = &Error{Code: CodeInternal}
)

// Errorf returns an *Error with code and a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// AsError returns err as an *Error, keeping its code if it has one and
// calling it internal otherwise.
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: CodeInternal, Message: err.Error()}
}
