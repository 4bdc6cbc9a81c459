package daemon

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// logHandler returns the process's slog handler. When stderr is the journal
// (JOURNAL_STREAM names its device and inode) lines carry no timestamp of
// their own and start with a syslog priority prefix, "<3>" for errors to
// "<7>" for debug, which journald turns into the entry's priority.
func logHandler(w io.Writer, level slog.Leveler, journalStream string) slog.Handler {
	if !isJournal(w, journalStream) {
		return slog.NewTextHandler(w, &slog.HandlerOptions{Level: level})
	}
	pw := &prefixWriter{w: w}
	inner := slog.NewTextHandler(pw, &slog.HandlerOptions{Level: level,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && (a.Key == slog.TimeKey || a.Key == slog.LevelKey) {
				return slog.Attr{}
			}
			return a
		}})
	return &journalHandler{inner: inner, pw: pw}
}

func isJournal(w io.Writer, stream string) bool {
	f, ok := w.(*os.File)
	if !ok || stream == "" {
		return false
	}
	var dev, ino uint64
	if _, err := fmt.Sscanf(stream, "%d:%d", &dev, &ino); err != nil {
		return false
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return false
	}
	return uint64(st.Dev) == dev && st.Ino == ino
}

// journalHandler prefixes each record with its syslog priority.
type journalHandler struct {
	inner slog.Handler
	pw    *prefixWriter
}

type prefixWriter struct {
	mu     sync.Mutex
	w      io.Writer
	prefix string
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	_, err := p.w.Write(append([]byte(p.prefix), b...))
	return len(b), err
}

func priority(l slog.Level) int {
	switch {
	case l >= slog.LevelError:
		return 3
	case l >= slog.LevelWarn:
		return 4
	case l >= slog.LevelInfo:
		return 6
	}
	return 7
}

func (h *journalHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.inner.Enabled(ctx, l)
}

func (h *journalHandler) Handle(ctx context.Context, r slog.Record) error {
	h.pw.mu.Lock()
	defer h.pw.mu.Unlock()
	h.pw.prefix = fmt.Sprintf("<%d>", priority(r.Level))
	return h.inner.Handle(ctx, r)
}

func (h *journalHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &journalHandler{inner: h.inner.WithAttrs(as), pw: h.pw}
}

func (h *journalHandler) WithGroup(name string) slog.Handler {
	return &journalHandler{inner: h.inner.WithGroup(name), pw: h.pw}
}
