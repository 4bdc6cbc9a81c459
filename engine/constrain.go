package engine

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/batchd/batchd/engine/grammar"
	"github.com/batchd/batchd/engine/sample"
)

// candidatesBeforeMask is how many of the model's best tokens a greedy
// step tries one by one, once the grammar rejected the best, before it
// builds the full mask: where the grammar allows much (a string's
// content) one of them fits; where it allows little (a key, a number) the
// trie walk that makes the mask is short.
const candidatesBeforeMask = 32

// errGrammarDeadEnd: no token of the vocabulary fits the grammar here.
var errGrammarDeadEnd = fmt.Errorf("%w: no token of this vocabulary continues the grammar here", ErrInvalidArgument)

// constrainVocab is the vocabulary as grammars see it, built once, at the
// first constrained request: each token's text (none for control tokens).
type constrainVocab struct {
	once  sync.Once
	text  [][]byte
	vocab *grammar.Vocab
}

func (e *Engine) grammarVocab() *constrainVocab {
	cv := &e.gvocab
	cv.once.Do(func() {
		tok := e.m.Tokenizer
		cv.text = make([][]byte, tok.VocabSize())
		for id := range cv.text {
			cv.text[id] = tok.TokenBytes(-1, id)
		}
		cv.vocab = grammar.NewVocab(cv.text)
	})
	return cv
}

// allowed reports whether the grammar takes tok next: an end token when the
// text so far is a sentence, another by its text.
func (rs *reqState) allowed(cv *constrainVocab, tok int) bool {
	if slices.Contains(rs.stopIDs, tok) {
		return rs.gm.AllowsEnd()
	}
	return rs.gm.Allows(cv.text[tok])
}

// sampleConstrained draws a token the grammar allows, as llama.cpp's
// common_sampler_sample: the sampler's own choice if the grammar takes it,
// else the sampler again over the logits with every rejected token at
// -Inf (for a plain softmax draw that is exactly the distribution
// restricted to the grammar). Greedy tries the next best tokens first.
func (e *Engine) sampleConstrained(rs *reqState, logits []float32, history []int) (int, error) {
	cv := e.grammarVocab()
	s := rs.sampler
	s.Penalize(logits, history)
	tok := s.Draw(logits)
	if rs.allowed(cv, tok) {
		return tok, nil
	}
	if s.Greedy() {
		for _, id := range topTokens(logits, candidatesBeforeMask, &rs.top) {
			if rs.allowed(cv, id) {
				return id, nil
			}
		}
	}
	mask, err := cv.vocab.Allowed(rs.gm)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	negInf := float32(math.Inf(-1))
	// End tokens are the grammar's end, whatever their text: allowed only
	// where it may end.
	end := rs.gm.AllowsEnd()
	ends := make([]float32, len(rs.stopIDs))
	for i, id := range rs.stopIDs {
		ends[i] = negInf
		if end {
			ends[i] = logits[id]
		}
	}
	for w, bits := range mask {
		if bits == ^uint64(0) {
			continue
		}
		for b := range 64 {
			if id := w*64 + b; bits&(1<<b) == 0 && id < len(logits) {
				logits[id] = negInf
			}
		}
	}
	for i, l := range ends {
		logits[rs.stopIDs[i]] = l
	}
	if logits[sample.Argmax(logits)] == negInf {
		return 0, errGrammarDeadEnd
	}
	tok = s.Draw(logits)
	if !rs.allowed(cv, tok) { // a draw that rounding sent past the last candidate
		tok = argmaxAllowed(logits)
	}
	return tok, nil
}

// topTokens returns the n best tokens by logit (ties: the lower id first),
// best first, reusing buf.
func topTokens(logits []float32, n int, buf *[]int) []int {
	top := (*buf)[:0]
	better := func(a, b int) bool { return logits[a] > logits[b] || logits[a] == logits[b] && a < b }
	for id := range logits {
		if len(top) == n && !better(id, top[n-1]) {
			continue
		}
		i, _ := slices.BinarySearchFunc(top, id, func(x, t int) int {
			if better(x, t) {
				return -1
			}
			return 1
		})
		if len(top) < n {
			top = append(top, 0)
		}
		copy(top[i+1:], top[i:len(top)-1])
		top[i] = id
	}
	*buf = top
	return top
}

func argmaxAllowed(logits []float32) int {
	best := 0
	for id, l := range logits {
		if cmp.Compare(l, logits[best]) > 0 {
			best = id
		}
	}
	return best
}

// acceptConstrained moves the grammar over a token that was not an end
// token; the error ends the request.
func (e *Engine) acceptConstrained(rs *reqState, tok int) error {
	err := rs.gm.Accept(e.grammarVocab().text[tok])
	if errors.Is(err, grammar.ErrTooComplex) {
		return fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	return err
}
