package httpapi

import (
	"container/list"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"sync"
)

// Bounds of the stored responses (store: true), over every user.
const (
	DefaultResponsesStoreBytes = 256 << 20
	maxStoredResponses         = 4096
	maxStoredPerUser           = 512
)

// storedResponse is a response kept for GET and previous_response_id: the
// response object and the whole conversation it ended, as chat messages.
type storedResponse struct {
	obj      map[string]any
	messages []map[string]any
	id       string
	owner    uint32
	size     int64
}

// responseStore keeps stored responses in memory, least recently used
// first out, bounded in bytes and in number (per user too); a user sees
// only their own.
type responseStore struct {
	mu       sync.Mutex
	maxBytes int64
	bytes    int64
	order    *list.List // of *storedResponse, most recent first
	byID     map[string]*list.Element
	perUser  map[uint32]int
}

func newResponseStore(maxBytes int64) *responseStore {
	if maxBytes == 0 {
		maxBytes = DefaultResponsesStoreBytes
	}
	return &responseStore{maxBytes: maxBytes, order: list.New(), byID: map[string]*list.Element{}, perUser: map[uint32]int{}}
}

// put stores r as uid's; a store turned off (negative bound) keeps nothing.
func (s *responseStore) put(uid uint32, r *storedResponse) {
	if s.maxBytes < 0 {
		return
	}
	r.id, r.owner = r.obj["id"].(string), uid
	b, _ := json.Marshal(r.messages)
	o, _ := json.Marshal(r.obj)
	r.size = int64(len(b) + len(o))
	if r.size > s.maxBytes {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.byID[r.id] = s.order.PushFront(r)
	s.bytes += r.size
	s.perUser[uid]++
	for s.bytes > s.maxBytes || s.order.Len() > maxStoredResponses {
		s.drop(s.order.Back())
	}
	if s.perUser[uid] > maxStoredPerUser { // the user's oldest
		for e := s.order.Back(); e != nil; e = e.Prev() {
			if e.Value.(*storedResponse).owner == uid {
				s.drop(e)
				break
			}
		}
	}
}

func (s *responseStore) drop(e *list.Element) {
	r := e.Value.(*storedResponse)
	s.order.Remove(e)
	delete(s.byID, r.id)
	s.bytes -= r.size
	if s.perUser[r.owner]--; s.perUser[r.owner] == 0 {
		delete(s.perUser, r.owner)
	}
}

// get returns uid's stored response id, or nil.
func (s *responseStore) get(uid uint32, id string) *storedResponse {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.byID[id]
	if e == nil || e.Value.(*storedResponse).owner != uid {
		return nil
	}
	s.order.MoveToFront(e)
	return e.Value.(*storedResponse)
}

// remove deletes uid's stored response id.
func (s *responseStore) remove(uid uint32, id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.byID[id]
	if e == nil || e.Value.(*storedResponse).owner != uid {
		return false
	}
	s.drop(e)
	return true
}

// randomHex is n random hex digits.
func randomHex(n int) string {
	b := make([]byte, (n+1)/2)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)[:n]
}
