package tokenizer

import (
	"errors"
	"fmt"
)

// Error kinds; match them with errors.Is.
var (
	// ErrInvalid: a vocabulary that is inconsistent or truncated.
	ErrInvalid = errors.New("invalid vocabulary")
	// ErrUnsupported: a tokenizer model batchd does not implement.
	ErrUnsupported = errors.New("unsupported tokenizer")
)

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}
