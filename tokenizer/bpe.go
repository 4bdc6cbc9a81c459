package tokenizer

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"
)

// bpeModel is byte-level BPE (tokenizer.ggml.model "gpt2"): text is split
// into words by the pre-tokenizer, each word's bytes become GPT-2's
// byte-level characters, and adjacent pairs merge lowest rank first
// (leftmost on a tie), as llama.cpp's llm_tokenizer_bpe_session does.
type bpeModel struct {
	pre *preTokenizer
	// merges maps a pair of token ids to its rank; result[rank] is the
	// merged token (-1 when the merged text is not in the vocabulary).
	merges map[uint64]int32
	result []int32
	// byteTok is the token of each byte's character (-1 if missing).
	byteTok [256]int32
	// ignoreMerges: a word that is a token as a whole is that token
	// (llama-bpe and tekken).
	ignoreMerges bool
	// spm is SentencePiece-style BPE (tokenizer.ggml.model "gemma4"):
	// spaces become U+2581, words are runs of newlines or of anything
	// else, symbols are raw UTF-8 characters, and a symbol that is no
	// token falls back to <0xNN> byte tokens (byteTok).
	spm bool
}

func pairKey(l, r int32) uint64 { return uint64(uint32(l))<<32 | uint64(uint32(r)) }

func newBPE(t *Tokenizer, merges []string, pre string, spm bool) (*bpeModel, error) {
	m := &bpeModel{spm: spm, merges: make(map[uint64]int32, len(merges)), result: make([]int32, len(merges))}
	if spm {
		m.pre = &preTokenizer{name: "gemma4"} // encodeSPM splits; llama.cpp ignores the file's name
	} else {
		p, err := newPreTokenizer(pre)
		if err != nil {
			return nil, err
		}
		m.pre = p
	}
	for i, s := range merges {
		m.result[i] = -1
		// The split is at the first space after the first byte, as
		// llama.cpp reads them.
		j := strings.IndexByte(s[min(1, len(s)):], ' ')
		if j < 0 {
			continue
		}
		j += min(1, len(s))
		l, okl := t.lookup[s[:j]]
		r, okr := t.lookup[s[j+1:]]
		if !okl || !okr {
			continue
		}
		k := pairKey(int32(l), int32(r))
		if _, dup := m.merges[k]; dup {
			continue // the first rank wins, as in llama.cpp's map
		}
		m.merges[k] = int32(i)
		if id, ok := t.lookup[s[:j]+s[j+1:]]; ok {
			m.result[i] = int32(id)
		}
	}
	var buf [4]byte
	for b := range 256 {
		n := utf8.EncodeRune(buf[:], bytesToRunes[b])
		key := string(buf[:n])
		if spm {
			key = fmt.Sprintf("<0x%02X>", b)
		}
		m.byteTok[b] = -1
		if id, ok := t.lookup[key]; ok {
			m.byteTok[b] = int32(id)
		}
	}
	return m, nil
}

// encodeBytes is a word's bytes in the byte-level alphabet.
func encodeBytes(word string) string {
	var b strings.Builder
	b.Grow(2 * len(word))
	for i := 0; i < len(word); i++ {
		b.WriteRune(bytesToRunes[word[i]])
	}
	return b.String()
}

// encode appends the tokens of one raw-text fragment.
func (m *bpeModel) encode(ctx context.Context, t *Tokenizer, text string, out []int) ([]int, error) {
	if m.spm {
		return m.encodeSPM(ctx, t, text, out)
	}
	cps := make([]rune, 0, len(text))
	offs := make([]int, 0, len(text)+1)
	for i := 0; i < len(text); {
		r, n := utf8.DecodeRuneInString(text[i:])
		cps, offs = append(cps, r), append(offs, i)
		i += n
	}
	offs = append(offs, len(text))
	lens, err := m.pre.split(ctx, cps)
	if err != nil {
		return nil, err
	}
	var w wordMerger
	at := 0
	for k, n := range lens {
		if k&1023 == 1023 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		word := text[offs[at]:offs[at+n]]
		at += n
		if m.ignoreMerges {
			if id, ok := t.lookup[encodeBytes(word)]; ok {
				out = append(out, id)
				continue
			}
		}
		out = w.merge(m, t, word, out)
	}
	return out, nil
}

// encodeSPM is llama.cpp's gemma4 pre-tokenizer: spaces escaped, then
// runs of newlines and runs of the rest; a run of newlines that is a
// token is that token.
func (m *bpeModel) encodeSPM(ctx context.Context, t *Tokenizer, text string, out []int) ([]int, error) {
	text = strings.ReplaceAll(text, " ", "\u2581")
	var w wordMerger
	for k := 0; text != ""; k++ {
		if k&1023 == 1023 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		nl := text[0] == '\n'
		n := strings.IndexFunc(text, func(r rune) bool { return (r == '\n') != nl })
		if n < 0 {
			n = len(text)
		}
		word := text[:n]
		text = text[n:]
		if id, ok := t.lookup[word]; ok && nl {
			out = append(out, id)
			continue
		}
		out = w.merge(m, t, word, out)
	}
	return out, nil
}

// wordMerger holds the buffers one word's merges reuse.
type wordMerger struct {
	sym        []int32 // token of each symbol, -1 if its text is none
	start, end []int32 // byte range of each symbol in the word
	next, prev []int32
	q          bpeQueue
}

func (w *wordMerger) merge(m *bpeModel, t *Tokenizer, word string, out []int) []int {
	n := len(word)
	w.sym, w.start, w.end = w.sym[:0], w.start[:0], w.end[:0]
	w.next, w.prev = w.next[:0], w.prev[:0]
	for i := 0; i < n; {
		k := len(w.sym)
		w.next, w.prev = append(w.next, int32(k+1)), append(w.prev, int32(k-1))
		if !m.spm {
			w.sym = append(w.sym, m.byteTok[word[i]])
			w.start, w.end = append(w.start, int32(i)), append(w.end, int32(i+1))
			i++
			continue
		}
		_, size := utf8.DecodeRuneInString(word[i:])
		id, ok := t.lookup[word[i:i+size]]
		w.sym = append(w.sym, int32(id))
		if !ok {
			w.sym[k] = -1
		}
		w.start, w.end = append(w.start, int32(i)), append(w.end, int32(i+size))
		i += size
	}
	n = len(w.sym)
	w.next[n-1] = -1
	w.q = w.q[:0]
	push := func(l, r int32) {
		if l < 0 || r < 0 || w.sym[l] < 0 || w.sym[r] < 0 {
			return
		}
		if rank, ok := m.merges[pairKey(w.sym[l], w.sym[r])]; ok {
			w.q.push(bpePair{rank: rank, left: l, right: r, lt: w.sym[l], rt: w.sym[r]})
		}
	}
	for i := int32(0); i+1 < int32(n); i++ {
		push(i, i+1)
	}
	for len(w.q) > 0 {
		p := w.q.pop()
		if w.next[p.left] != p.right || w.sym[p.left] != p.lt || w.sym[p.right] != p.rt {
			continue // stale: a side merged since
		}
		w.sym[p.left] = m.result[p.rank]
		w.end[p.left] = w.end[p.right]
		nr := w.next[p.right]
		w.next[p.left] = nr
		w.next[p.right] = -2 // absorbed: its queued pairs are stale
		if nr >= 0 {
			w.prev[nr] = p.left
		}
		push(w.prev[p.left], p.left)
		push(p.left, nr)
	}
	for i := int32(0); i >= 0; i = w.next[i] {
		if w.sym[i] >= 0 {
			out = append(out, int(w.sym[i]))
			continue
		}
		// Not a token: llama.cpp looks up each byte of the symbol's
		// byte-level text (spm: each byte's <0xNN>) and keeps those that
		// are tokens.
		if m.spm {
			for _, b := range []byte(word[w.start[i]:w.end[i]]) {
				if id := m.byteTok[b]; id >= 0 {
					out = append(out, int(id))
				}
			}
			continue
		}
		enc := encodeBytes(word[w.start[i]:w.end[i]])
		for j := 0; j < len(enc); j++ {
			if id, ok := t.lookup[enc[j:j+1]]; ok {
				out = append(out, id)
			}
		}
	}
	return out
}

type bpePair struct {
	rank, left, right int32
	lt, rt            int32 // the symbols' tokens when queued
}

// bpeQueue is a binary min-heap on (rank, left) without interface boxing.
type bpeQueue []bpePair

func (q bpePair) less(o bpePair) bool {
	return q.rank < o.rank || q.rank == o.rank && q.left < o.left
}

func (q *bpeQueue) push(p bpePair) {
	*q = append(*q, p)
	h := *q
	for i := len(h) - 1; i > 0; {
		j := (i - 1) / 2
		if !h[i].less(h[j]) {
			break
		}
		h[i], h[j] = h[j], h[i]
		i = j
	}
}

func (q *bpeQueue) pop() bpePair {
	h := *q
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	for i := 0; ; {
		l, s := 2*i+1, i
		if l < len(h) && h[l].less(h[s]) {
			s = l
		}
		if r := l + 1; r < len(h) && h[r].less(h[s]) {
			s = r
		}
		if s == i {
			break
		}
		h[i], h[s] = h[s], h[i]
		i = s
	}
	*q = h
	return top
}

// decodeBPE maps a token's byte-level text back to bytes; characters
// outside the alphabet are kept as their UTF-8.
func decodeBPE(piece string) string {
	var b []byte
	for _, r := range piece {
		if c, ok := runesToBytes[r]; ok {
			b = append(b, c)
		} else {
			b = utf8.AppendRune(b, r)
		}
	}
	return string(b)
}
