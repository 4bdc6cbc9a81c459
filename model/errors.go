package model

import (
	"errors"
	"fmt"

	"github.com/batchd/batchd/gguf"
	"github.com/batchd/batchd/tokenizer"
)

// Error kinds returned (wrapped with detail) by the loaders. Match them with errors.Is.
var (
	// ErrMalformed: bad magic, a truncated file, an out-of-range count or offset.
	ErrMalformed = errors.New("malformed model file")
	// ErrUnsupported: an architecture, tensor type or tokenizer batchd cannot run.
	ErrUnsupported = errors.New("unsupported model")
	// ErrMissingTensor: a tensor the architecture needs is absent.
	ErrMissingTensor = errors.New("missing tensor")
	// ErrShape: a tensor or hyperparameter disagrees with the model's dimensions.
	ErrShape = errors.New("tensor shape mismatch")
)

// FileError ties a load error to the file it came from.
type FileError struct {
	Path string
	Err  error
}

func (e *FileError) Error() string { return fmt.Sprintf("load %s: %v", e.Path, e.Err) }

func (e *FileError) Unwrap() error { return e.Err }

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
}

// kinded gives err (from a package with its own sentinels, such as gguf) one
// of this package's kinds as well, keeping err's message.
type kinded struct{ kind, err error }

func (k kinded) Error() string   { return k.err.Error() }
func (k kinded) Unwrap() []error { return []error{k.kind, k.err} }

// fromGGUF maps gguf's error kinds to this package's.
func fromGGUF(err error) error {
	switch {
	case errors.Is(err, gguf.ErrMalformed):
		return kinded{ErrMalformed, err}
	case errors.Is(err, gguf.ErrUnsupported):
		return kinded{ErrUnsupported, err}
	}
	return err
}

// fromTokenizer maps tokenizer's error kinds to this package's.
func fromTokenizer(err error) error {
	switch {
	case errors.Is(err, tokenizer.ErrInvalid):
		return kinded{ErrMalformed, err}
	case errors.Is(err, tokenizer.ErrUnsupported):
		return kinded{ErrUnsupported, err}
	}
	return err
}
