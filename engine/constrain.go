package engine

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sync"

	"github.com/batchd/batchd/grammar"
	"github.com/batchd/batchd/sample"
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
// first constrained request: each token's text (control tokens as
// written, for the requests that preserve them).
type constrainVocab struct {
	once     sync.Once
	text     [][]byte
	control  []bool  // control tokens: their text only where a request preserves them
	controls []int32 // their ids
	vocab    *grammar.Vocab
}

func (e *Engine) grammarVocab() *constrainVocab {
	cv := &e.gvocab
	cv.once.Do(func() {
		tok := e.m.Tokenizer
		cv.text = make([][]byte, tok.VocabSize())
		cv.control = make([]bool, tok.VocabSize())
		for id := range cv.text {
			cv.text[id] = tok.TokenBytes(-1, id)
			if tok.IsControl(id) {
				cv.text[id] = []byte(tok.PieceText(id))
				cv.control[id] = true
				cv.controls = append(cv.controls, int32(id))
			}
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
	if cv.control[tok] && !rs.preserved(tok) {
		return false
	}
	if rs.hold != nil && rs.hold.freeToken(cv.text[tok]) {
		return true
	}
	return rs.gm.Allows(cv.text[tok])
}

// sampleConstrained draws a token the grammar allows, as llama.cpp's
// common_sampler_sample: the sampler's own choice if the grammar takes it,
// else the sampler again over the logits with every rejected token at
// -Inf (for a plain softmax draw that is exactly the distribution
// restricted to the grammar). Greedy takes the best allowed token: from
// the state's cached mask, else the next best tokens tried one by one,
// else a new mask.
func (e *Engine) sampleConstrained(rs *reqState, logits []float32, history []int) (int, error) {
	cv := e.grammarVocab()
	s := rs.sampler
	s.Penalize(logits, history)
	tok := s.Draw(logits)
	if rs.allowed(cv, tok) {
		return tok, nil
	}
	mask, cached := cv.vocab.Cached(rs.gm)
	if !cached && s.Greedy() {
		for _, id := range topTokens(logits, candidatesBeforeMask, &rs.top) {
			if rs.allowed(cv, id) {
				return id, nil
			}
		}
	}
	if !cached {
		var err error
		if mask, err = cv.vocab.Allowed(rs.gm); err != nil {
			return 0, fmt.Errorf("%w: %w", ErrInvalidArgument, err)
		}
	}
	end := rs.gm.AllowsEnd()
	if s.Greedy() && mask.IDs != nil {
		return greedySparse(logits, mask.IDs, rs.stopIDs, end, func(id int) bool { return !cv.control[id] || rs.preserved(id) })
	}
	restrict(logits, mask, rs.stopIDs, end)
	for _, id := range cv.controls { // control tokens the request does not keep write nothing
		if !rs.preserved(int(id)) && !slices.Contains(rs.stopIDs, int(id)) {
			logits[id] = float32(math.Inf(-1))
		}
	}
	if s.Greedy() {
		tok = sample.Argmax(logits)
	} else {
		tok = s.Draw(logits)
	}
	if sample.NonFinite(logits[tok]) {
		if math.IsNaN(float64(logits[tok])) {
			return 0, errNonFinite
		}
		return 0, errGrammarDeadEnd
	}
	if !rs.allowed(cv, tok) { // a draw that rounding sent past the last candidate
		tok = sample.Argmax(logits)
	}
	return tok, nil
}

// greedySparse is the best of a short list of allowed tokens (the lowest
// id on a tie, as Argmax), end tokens among them where the grammar may end.
func greedySparse(logits []float32, ids []int32, stops []int, end bool, ok func(int) bool) (int, error) {
	best, bv := -1, float32(math.Inf(-1))
	for _, id := range ids {
		if l := logits[id]; l > bv && !slices.Contains(stops, int(id)) && ok(int(id)) {
			best, bv = int(id), l
		}
	}
	if end {
		for _, id := range stops {
			if l := logits[id]; l > bv || l == bv && id < best {
				best, bv = id, l
			}
		}
	}
	if best < 0 || math.IsInf(float64(bv), -1) {
		return 0, errGrammarDeadEnd
	}
	if sample.NonFinite(bv) {
		return 0, errNonFinite
	}
	return best, nil
}

// restrict sets every token the mask leaves out to -Inf; end tokens are
// the grammar's end whatever their text, allowed only where it may end.
func restrict(logits []float32, mask *grammar.Mask, stops []int, end bool) {
	negInf := float32(math.Inf(-1))
	ends := make([]float32, len(stops))
	for i, id := range stops {
		ends[i] = negInf
		if end {
			ends[i] = logits[id]
		}
	}
	for w, word := range mask.Bits {
		for out := ^word; out != 0; out &= out - 1 {
			if id := w*64 + bits.TrailingZeros64(out); id < len(logits) {
				logits[id] = negInf
			}
		}
	}
	for i, l := range ends {
		logits[stops[i]] = l
	}
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

// acceptConstrained moves the grammar over a token that was not an end
// token; the error ends the request.
func (e *Engine) acceptConstrained(rs *reqState, tok int) error {
	err := rs.gm.Accept(e.grammarVocab().text[tok])
	if errors.Is(err, grammar.ErrTooComplex) {
		return fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	return err
}

// errNonFinite: the forward pass gave a logit that is not a number (a
// damaged cache file, a broken kernel); the request fails rather than
// answer with text drawn from nothing.
var errNonFinite = fmt.Errorf("%w: the model's output for this sequence is not finite (NaN or infinite logits)", ErrInternal)

// checked returns tok unless its logit shows the row held nothing to
// choose from: every token at -Inf, or NaN.
func checked(row []float32, tok int) (int, error) {
	if sample.NonFinite(row[tok]) {
		return 0, errNonFinite
	}
	return tok, nil
}
