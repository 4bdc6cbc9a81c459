package engine

import (
	"fmt"
	"github.com/batchd/batchd/engine/sched"
	"github.com/batchd/batchd/model"
	"math"
	"time"
)

// Pooling is how an embedding request's per-token hidden states become
// one vector (llama.cpp's pooling types).
type Pooling int

const (
	PoolMean Pooling = iota + 1 // the mean over every token, BOS/[CLS] and EOS/[SEP] included
	PoolCLS                     // the first token's ([CLS])
	PoolLast                    // the last token's (an appended EOS, as Qwen3-Embedding)
	PoolRank                    // a reranker's: its head's scores (model.RankHead)
)

func (p Pooling) String() string {
	switch p {
	case PoolMean:
		return "mean"
	case PoolCLS:
		return "cls"
	case PoolLast:
		return "last"
	case PoolRank:
		return "rank"
	}
	return fmt.Sprintf("pooling(%d)", int(p))
}

// ParsePooling reads a pooling name: mean, cls, last or rank.
func ParsePooling(s string) (Pooling, error) {
	for _, p := range []Pooling{PoolMean, PoolCLS, PoolLast, PoolRank} {
		if p.String() == s {
			return p, nil
		}
	}
	return 0, fmt.Errorf("%w: pooling %q: want mean, cls, last or rank", ErrInvalidArgument, s)
}

// Embed makes a request an embedding: its prompt runs through the model,
// nothing is generated, and the terminal event carries the pooled final
// hidden states (Event.Embedding). The prompt is never served from the
// prefix cache (MEAN and CLS need every token's state).
type Embed struct {
	Pooling Pooling
	// Normalize divides the vector by its Euclidean norm, as OpenAI's and
	// Ollama's APIs return it (llama.cpp: products summed in float64, then
	// each value times float32(1/norm)).
	Normalize bool
}

// pooler accumulates one embedding request's hidden states.
type pooler struct {
	embed Embed
	head  *model.RankHead // PoolRank's
	dense []*model.Matrix // model.Model.Dense: after pooling, before normalising
	sum   []float64
	row   []float32 // CLS: the first row; LAST: the latest
	n     int
}

// add takes a share's rows (n rows of dim floats).
func (p *pooler) add(rows []float32, dim int, first bool) {
	n := len(rows) / dim
	switch p.embed.Pooling {
	case PoolMean:
		if p.sum == nil {
			p.sum = make([]float64, dim)
		}
		for i := range n {
			for j, v := range rows[i*dim : (i+1)*dim] {
				p.sum[j] += float64(v)
			}
		}
	case PoolCLS:
		if first {
			p.row = append(p.row[:0], rows[:dim]...)
		}
	case PoolLast:
		p.row = append(p.row[:0], rows[(n-1)*dim:]...)
	case PoolRank:
		if p.head.Last {
			p.row = append(p.row[:0], rows[(n-1)*dim:]...)
		} else if first {
			p.row = append(p.row[:0], rows[:dim]...)
		}
	}
	p.n += n
}

// vector is the pooled (and, when asked, normalised) embedding.
func (p *pooler) vector() []float32 {
	out := p.row
	if p.embed.Pooling == PoolRank {
		return rankScores(p.head, out)
	}
	if p.embed.Pooling == PoolMean {
		out = make([]float32, len(p.sum))
		for j, s := range p.sum {
			out[j] = float32(s / float64(p.n))
		}
	}
	for _, d := range p.dense {
		out = matVec(d, nil, out)
	}
	if p.embed.Normalize {
		Normalize(out)
	}
	return out
}

// Normalize divides v by its Euclidean norm in place, as llama.cpp's
// common_embd_normalize does: products summed in float64, then each value
// times float32(1/norm). A zero vector stays as it is.
func Normalize(v []float32) {
	var ss float64
	for _, x := range v {
		ss += float64(x) * float64(x)
	}
	if ss > 0 {
		scale := float32(1 / math.Sqrt(ss))
		for j := range v {
			v[j] *= scale
		}
	}
}

// checkEmbed refuses what an embedding request cannot have.
func checkEmbed(r Request) []error {
	var errs []error
	switch r.Embed.Pooling {
	case PoolMean, PoolCLS, PoolLast, PoolRank:
	default:
		errs = append(errs, fmt.Errorf("embedding pooling %v: want mean, cls, last or rank", r.Embed.Pooling))
	}
	if r.Embed.Pooling == PoolRank && r.Embed.Normalize {
		errs = append(errs, fmt.Errorf("a reranker's scores are not normalised"))
	}
	if r.Grammar != nil || r.Logprobs || len(r.Stop) > 0 || len(r.StopTokenIDs) > 0 || r.MaxTokens > 1 {
		errs = append(errs, fmt.Errorf("an embedding generates nothing: no grammar, logprobs, stops or max_tokens"))
	}
	return errs
}

// pooled takes an embedding share's hidden states; the share that ends
// the prompt ends the request with its vector. A share from position 0
// starts over (a preempted request recomputes its prompt).
func (e *Engine) pooled(rs *reqState, sc sched.Scheduled, rows []float32, now time.Time) {
	if sc.Start == 0 {
		rs.pool = &pooler{embed: rs.pool.embed, head: rs.pool.head, dense: rs.pool.dense}
	}
	rs.pool.add(rows, e.m.Config.Dim, sc.Start == 0)
	if sc.Start+sc.N < sc.Seq.PromptLen {
		return
	}
	rs.embedding = rs.pool.vector()
	if rs.firstToken.IsZero() {
		rs.firstToken = now
	}
	e.finish(rs, FinishStop, nil, now)
}
