package ipc

import (
	"fmt"
	"strings"
	"testing"
)

// TestResponseStore: a user sees only their own responses; the least
// recently used go first once the bytes run out (a Get counts as use);
// one user keeps at most maxStoredPerUser; a response larger than the
// store and a store turned off keep nothing; Delete is the owner's only.
func TestResponseStore(t *testing.T) {
	msg := func(n int) StoredResponse { return StoredResponse{Messages: []byte(strings.Repeat("x", n))} }
	s := NewResponseStore(1000)
	s.Put(1, "a", msg(400))
	s.Put(1, "b", msg(400))
	if _, ok := s.Get(2, "a"); ok {
		t.Error("user 2 sees user 1's response")
	}
	if s.Delete(2, "a") {
		t.Error("user 2 deleted user 1's response")
	}
	if _, ok := s.Get(1, "a"); !ok { // a is now the most recent
		t.Fatal("a lost")
	}
	s.Put(1, "c", msg(400)) // 3*(400+1) > 1000: b, the least recent, goes
	if _, ok := s.Get(1, "b"); ok {
		t.Error("b kept past the bound")
	}
	for _, id := range []string{"a", "c"} {
		if _, ok := s.Get(1, id); !ok {
			t.Errorf("%s evicted", id)
		}
	}
	s.Put(1, "huge", msg(2000))
	if _, ok := s.Get(1, "huge"); ok {
		t.Error("a response larger than the store was kept")
	}
	if !s.Delete(1, "a") || s.Delete(1, "a") {
		t.Error("delete: once, then not found")
	}

	many := NewResponseStore(1 << 30)
	for i := range maxStoredPerUser + 5 {
		many.Put(7, fmt.Sprint(i), msg(1))
	}
	if _, ok := many.Get(7, "0"); ok {
		t.Error("user 7's oldest kept past the per-user cap")
	}
	if _, ok := many.Get(7, fmt.Sprint(maxStoredPerUser+4)); !ok {
		t.Error("user 7's newest lost")
	}

	off := NewResponseStore(-1)
	off.Put(1, "a", msg(1))
	if _, ok := off.Get(1, "a"); ok || !off.Off() {
		t.Error("a store turned off kept a response")
	}
}
