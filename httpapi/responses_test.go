package httpapi

import (
	"strings"
	"testing"
)

// TestResponseStore: a stored response is its owner's only (get, remove),
// and the store keeps within its byte bound, oldest out first.
func TestResponseStore(t *testing.T) {
	s := newResponseStore(4000)
	put := func(uid uint32, id string, size int) {
		s.put(uid, &storedResponse{obj: map[string]any{"id": id},
			messages: []map[string]any{{"role": "user", "content": strings.Repeat("x", size)}}})
	}
	put(1, "a", 100)
	put(2, "b", 100)
	if s.get(1, "a") == nil || s.get(2, "a") != nil || s.remove(2, "a") || s.get(1, "b") != nil {
		t.Fatal("a response is visible to, or removable by, another user")
	}
	for i := range 10 {
		put(1, string(rune('c'+i)), 900)
	}
	if s.bytes > s.maxBytes || s.get(1, "a") != nil || s.get(1, "l") == nil {
		t.Errorf("bytes %d of %d; oldest kept %v, newest kept %v", s.bytes, s.maxBytes, s.get(1, "a") != nil, s.get(1, "l") != nil)
	}
	put(1, "huge", 5000) // over the whole bound: not kept, nothing evicted for it
	if s.get(1, "huge") != nil || s.get(1, "l") == nil {
		t.Error("a response over the bound was kept")
	}
	off := newResponseStore(-1)
	off.put(1, &storedResponse{obj: map[string]any{"id": "x"}})
	if off.get(1, "x") != nil {
		t.Error("a store turned off kept a response")
	}
}
