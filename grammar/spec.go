package grammar

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
)

// Spec says what a request's output must be: at most one field set.
type Spec struct {
	GBNF       string   // a grammar in GBNF (llama.cpp's grammar)
	Schema     []byte   // a JSON Schema (OpenAI's json_schema, llama.cpp's json_schema)
	Strict     bool     // for Schema: refuse keywords the grammar cannot enforce
	JSONObject bool     // any JSON object (OpenAI's json_object)
	Regex      string   // the whole output matches this regular expression (vLLM)
	Choice     []string // the output is one of these strings (vLLM)
}

// Empty reports whether s asks for nothing.
func (s Spec) Empty() bool {
	return s.GBNF == "" && len(s.Schema) == 0 && !s.JSONObject && s.Regex == "" && len(s.Choice) == 0
}

// ErrConflict: a request asked for two kinds of structure at once.
var ErrConflict = errors.New("grammar: set only one of a grammar, a JSON schema, JSON mode, a regex or a choice")

// GBNFText returns the GBNF s stands for; a conversion stops when ctx ends.
func (s Spec) GBNFText(ctx context.Context) (string, error) {
	n := 0
	for _, set := range []bool{s.GBNF != "", len(s.Schema) > 0, s.JSONObject, s.Regex != "", len(s.Choice) > 0} {
		if set {
			n++
		}
	}
	switch {
	case n > 1:
		return "", ErrConflict
	case s.GBNF != "":
		return s.GBNF, nil
	case len(s.Schema) > 0:
		return SchemaGBNF(ctx, s.Schema, SchemaOptions{Strict: s.Strict})
	case s.JSONObject:
		return SchemaGBNF(ctx, []byte(`{"type": "object"}`), SchemaOptions{})
	case s.Regex != "":
		return RegexGBNF(ctx, s.Regex)
	case len(s.Choice) > 0:
		alts := make([]string, len(s.Choice))
		for i, c := range s.Choice {
			alts[i] = formatLiteral(c)
		}
		return "root ::= " + strings.Join(alts, " | ") + "\n", nil
	}
	return "", errors.New("grammar: nothing asked")
}

// RegexGBNF is the grammar of the texts a regular expression matches
// whole (no ^ or $ needed; they are taken off when there).
func RegexGBNF(ctx context.Context, re string) (string, error) {
	re = "^" + strings.TrimSuffix(strings.TrimPrefix(re, "^"), "$") + "$"
	c := newConverter(ctx, false)
	delete(c.rules, "space")
	c.rawPattern(re, "root")
	if c.err != nil {
		var se *SchemaError
		if errors.As(c.err, &se) {
			return "", fmt.Errorf("regex: %s", se.Msg)
		}
		return "", c.err
	}
	return c.format(), nil
}

// Cache keeps compiled grammars by what they were asked for (the spec
// itself, before any conversion), so the same schema on many requests
// converts and compiles once and shares its states and masks; a spec that
// failed fails again at once. Requests asking for the same new spec wait
// for one compilation. It holds at most its size, the least recently used
// given up.
type Cache struct {
	mu    sync.Mutex
	size  int
	order *list.List // of *cacheEntry, most recent first
	byKey map[[32]byte]*list.Element
}

type cacheEntry struct {
	key   [32]byte
	ready chan struct{} // closed once g or err is set
	g     *Grammar
	err   error
}

// NewCache returns a cache of at most size grammars.
func NewCache(size int) *Cache {
	return &Cache{size: max(size, 1), order: list.New(), byKey: map[[32]byte]*list.Element{}}
}

// Len is how many grammars (or their errors) the cache holds.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

// key names a spec: each field with its kind and length, so that no two
// specs share one.
func (s Spec) key() [32]byte {
	h := sha256.New()
	field := func(kind byte, b []byte) {
		var n [9]byte
		n[0] = kind
		binary.BigEndian.PutUint64(n[1:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	field('g', []byte(s.GBNF))
	field('s', s.Schema)
	field('t', []byte{btob(s.Strict), btob(s.JSONObject)})
	field('r', []byte(s.Regex))
	for _, c := range s.Choice {
		field('c', []byte(c))
	}
	var k [32]byte
	h.Sum(k[:0])
	return k
}

func btob(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// Get compiles s, or returns what it compiled to (or failed with) before.
// A compilation ctx cut short is not kept.
func (c *Cache) Get(ctx context.Context, s Spec) (*Grammar, error) {
	key := s.key()
	for {
		c.mu.Lock()
		if el, ok := c.byKey[key]; ok {
			c.order.MoveToFront(el)
			e := el.Value.(*cacheEntry)
			c.mu.Unlock()
			if !closed(e.ready) {
				select {
				case <-e.ready:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			if isContextErr(e.err) && ctx.Err() == nil {
				continue // its requester left; this one compiles
			}
			return e.g, e.err
		}
		e := &cacheEntry{key: key, ready: make(chan struct{})}
		c.byKey[key] = c.order.PushFront(e)
		for c.order.Len() > c.size {
			old := c.order.Remove(c.order.Back()).(*cacheEntry)
			delete(c.byKey, old.key)
		}
		c.mu.Unlock()
		e.g, e.err = compile(ctx, s)
		if isContextErr(e.err) {
			c.mu.Lock()
			if el, ok := c.byKey[key]; ok && el.Value == e {
				c.order.Remove(el)
				delete(c.byKey, key)
			}
			c.mu.Unlock()
		}
		close(e.ready)
		return e.g, e.err
	}
}

func compile(ctx context.Context, s Spec) (*Grammar, error) {
	if len(s.Schema) > 0 && s.GBNF == "" && !s.JSONObject && s.Regex == "" && len(s.Choice) == 0 {
		return FromSchema(ctx, s.Schema, SchemaOptions{Strict: s.Strict}) // parsed once, not again
	}
	src, err := s.GBNFText(ctx)
	if err != nil {
		return nil, err
	}
	return Parse(src)
}

func closed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func isContextErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
