package grammar

import (
	"container/list"
	"crypto/sha256"
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

// GBNFText returns the GBNF s stands for.
func (s Spec) GBNFText() (string, error) {
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
		return SchemaGBNF(s.Schema, SchemaOptions{Strict: s.Strict})
	case s.JSONObject:
		return SchemaGBNF([]byte(`{"type": "object"}`), SchemaOptions{})
	case s.Regex != "":
		return RegexGBNF(s.Regex)
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
func RegexGBNF(re string) (string, error) {
	re = "^" + strings.TrimSuffix(strings.TrimPrefix(re, "^"), "$") + "$"
	c := &converter{rules: map[string]string{}, refs: map[string]value{}, resolving: map[string]bool{}}
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

// Cache keeps compiled grammars by what they were compiled from, so the
// same schema on many requests compiles once (and shares its states and
// masks). It holds at most its size, the least recently used given up.
type Cache struct {
	mu    sync.Mutex
	size  int
	order *list.List // of *cacheEntry, most recent first
	byKey map[[32]byte]*list.Element
}

type cacheEntry struct {
	key [32]byte
	g   *Grammar
}

// NewCache returns a cache of at most size grammars.
func NewCache(size int) *Cache {
	return &Cache{size: max(size, 1), order: list.New(), byKey: map[[32]byte]*list.Element{}}
}

// Get compiles s, or returns the grammar it compiled to before.
func (c *Cache) Get(s Spec) (*Grammar, error) {
	src, err := s.GBNFText()
	if err != nil {
		return nil, err
	}
	key := sha256.Sum256([]byte(src))
	c.mu.Lock()
	if e, ok := c.byKey[key]; ok {
		c.order.MoveToFront(e)
		c.mu.Unlock()
		return e.Value.(*cacheEntry).g, nil
	}
	c.mu.Unlock()
	g, err := Parse(src)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byKey[key]; ok { // compiled meanwhile by another request
		return e.Value.(*cacheEntry).g, nil
	}
	c.byKey[key] = c.order.PushFront(&cacheEntry{key: key, g: g})
	for c.order.Len() > c.size {
		old := c.order.Remove(c.order.Back()).(*cacheEntry)
		delete(c.byKey, old.key)
	}
	return g, nil
}
