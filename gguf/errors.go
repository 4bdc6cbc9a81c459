package gguf

import (
	"errors"
	"fmt"
)

// ErrMalformed reports bad magic, a truncated file, or an out-of-range
// count, offset or size. Match it with errors.Is.
var ErrMalformed = errors.New("malformed GGUF file")

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
}

// ErrUnsupported reports a GGUF version this reader does not know.
var ErrUnsupported = errors.New("unsupported GGUF file")
