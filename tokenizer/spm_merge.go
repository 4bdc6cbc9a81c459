package tokenizer

import (
	"container/heap"
	"context"
)

// merge repeatedly replaces the best-scoring adjacent pair whose
// concatenation is a piece, the leftmost on a tie, as run.c's loop does, but
// in O(n log n): the candidate pairs wait in a priority queue (as in
// llama.cpp's SPM tokenizer), symbols form a linked list, and a queued pair
// that a merge has since changed is skipped when it comes out. Byte-fallback
// pieces never merge. Tokens before start (BOS) are left alone.
func (t *Tokenizer) merge(ctx context.Context, toks []int, start int) ([]int, error) {
	n := len(toks) - start
	if n < 2 {
		return toks, nil
	}
	sym := toks[start:]
	next := make([]int32, n) // -1 ends the list
	prev := make([]int32, n)
	for i := range n {
		next[i], prev[i] = int32(i+1), int32(i-1)
	}
	next[n-1] = -1
	q := &pairQueue{}
	var buf []byte
	push := func(l, r int32) {
		a, b := sym[l], sym[r]
		if t.types[a] == TokenByte || t.types[b] == TokenByte {
			return
		}
		buf = append(append(buf[:0], t.pieces[a]...), t.pieces[b]...)
		if id, ok := t.lookup[string(buf)]; ok {
			heap.Push(q, pair{score: t.scores[id], left: l, right: r, id: id, leftTok: a, rightTok: b})
		}
	}
	for i := int32(0); i+1 < int32(n); i++ {
		push(i, i+1)
	}
	for steps := 0; q.Len() > 0; steps++ {
		if steps&1023 == 1023 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		p := heap.Pop(q).(pair)
		// Stale: one side merged since (its token changed) or was absorbed.
		if next[p.left] != p.right || sym[p.left] != p.leftTok || sym[p.right] != p.rightTok {
			continue
		}
		sym[p.left] = p.id
		sym[p.right] = -1
		nr := next[p.right]
		next[p.left] = nr
		if nr >= 0 {
			prev[nr] = p.left
			push(p.left, nr)
		}
		if pl := prev[p.left]; pl >= 0 {
			push(pl, p.left)
		}
	}
	out := toks[:start]
	for i := int32(0); i >= 0; i = next[i] {
		out = append(out, sym[i])
	}
	return out, nil
}

// pair is a candidate merge of the symbols at left and right (list
// positions) into id; leftTok and rightTok are what they held when queued.
type pair struct {
	score             float32
	left, right       int32
	id                int
	leftTok, rightTok int
}

// pairQueue orders pairs by score, then leftmost first.
type pairQueue []pair

func (q pairQueue) Len() int { return len(q) }
func (q pairQueue) Less(i, j int) bool {
	if q[i].score != q[j].score {
		return q[i].score > q[j].score
	}
	return q[i].left < q[j].left
}
func (q pairQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *pairQueue) Push(x any)   { *q = append(*q, x.(pair)) }
func (q *pairQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}
