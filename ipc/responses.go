package ipc

import (
	"container/list"
	"crypto/rand"
	"encoding/hex"
	"sync"

	"github.com/batchd/batchd/ipc/wire"
)

// Bounds of the stored responses (store: true), over every user.
const (
	DefaultResponsesStoreBytes = 256 << 20
	maxStoredResponses         = 4096
	maxStoredPerUser           = 512
)

// StoredResponse is a response kept for previous_response_id (and, over
// HTTP, GET): the whole conversation it ended, as chat messages, and the
// Responses API's object for it (nil for one stored over the socket).
type StoredResponse struct {
	Messages []byte // an OpenAI-style messages array (JSON), the answer last
	Object   []byte // the response object (JSON), or nil
}

type storedResponse struct {
	StoredResponse
	id    string
	owner uint32
	size  int64
}

// ResponseStore keeps stored responses in memory for every listener (the
// HTTP API's /v1/responses and the socket's submit), least recently used
// first out, bounded in bytes and in number (per user too); a user sees
// only their own. The zero value is not usable: NewResponseStore.
type ResponseStore struct {
	mu       sync.Mutex
	maxBytes int64
	bytes    int64
	order    *list.List // of *storedResponse, most recent first
	byID     map[string]*list.Element
	perUser  map[uint32]int
}

// NewResponseStore keeps up to maxBytes of responses (0: the default,
// negative: none).
func NewResponseStore(maxBytes int64) *ResponseStore {
	if maxBytes == 0 {
		maxBytes = DefaultResponsesStoreBytes
	}
	return &ResponseStore{maxBytes: maxBytes, order: list.New(), byID: map[string]*list.Element{}, perUser: map[uint32]int{}}
}

// Off says the store keeps nothing (a negative bound).
func (s *ResponseStore) Off() bool { return s.maxBytes < 0 }

// Put stores sr as uid's response id; a store turned off (negative bound)
// keeps nothing, and one response larger than the store is not kept.
func (s *ResponseStore) Put(uid uint32, id string, sr StoredResponse) {
	if s.maxBytes < 0 {
		return
	}
	r := &storedResponse{StoredResponse: sr, id: id, owner: uid, size: int64(len(sr.Messages) + len(sr.Object) + len(id))}
	if r.size > s.maxBytes {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.byID[id]; old != nil { // an id is random; a repeat replaces
		s.drop(old)
	}
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

func (s *ResponseStore) drop(e *list.Element) {
	r := e.Value.(*storedResponse)
	s.order.Remove(e)
	delete(s.byID, r.id)
	s.bytes -= r.size
	if s.perUser[r.owner]--; s.perUser[r.owner] == 0 {
		delete(s.perUser, r.owner)
	}
}

// Get returns uid's stored response id; another user's is not found.
func (s *ResponseStore) Get(uid uint32, id string) (StoredResponse, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.byID[id]
	if e == nil || e.Value.(*storedResponse).owner != uid {
		return StoredResponse{}, false
	}
	s.order.MoveToFront(e)
	return e.Value.(*storedResponse).StoredResponse, true
}

// Delete removes uid's stored response id.
func (s *ResponseStore) Delete(uid uint32, id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.byID[id]
	if e == nil || e.Value.(*storedResponse).owner != uid {
		return false
	}
	s.drop(e)
	return true
}

// ErrResponseNotFound says why previous_response_id names nothing.
func ErrResponseNotFound(id string) *wire.Error {
	return wire.Errorf(wire.CodeNotFound, "previous response %s not found: never stored (store: false), deleted, or evicted "+
		"(server.responses_store_mb bounds what is kept)", id)
}

// NewResponseID is a fresh response id, as OpenAI's: resp_ and 48 hex digits.
func NewResponseID() string { return "resp_" + RandomHex(48) }

// RandomHex is n random hex digits (the ids of responses and their items).
func RandomHex(n int) string {
	b := make([]byte, (n+1)/2)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)[:n]
}
