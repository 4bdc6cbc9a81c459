package llamacpp

import (
	"os"
	"testing"

	"github.com/batchd/batchd/gguf"
)

// Rewrite copies the GGUF file src to dst with the metadata keys in set
// changed or added; tensors are copied as they are.
func Rewrite(tb testing.TB, src, dst string, set map[string]any) {
	tb.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		tb.Fatal(err)
	}
	f, err := gguf.Parse(b)
	if err != nil {
		tb.Fatal(err)
	}
	w := gguf.NewWriterFrom(f, b)
	for k, v := range set {
		w.Set(k, v)
	}
	out, err := os.Create(dst)
	if err != nil {
		tb.Fatal(err)
	}
	defer out.Close()
	if _, err := w.WriteTo(out); err != nil {
		tb.Fatal(err)
	}
}
