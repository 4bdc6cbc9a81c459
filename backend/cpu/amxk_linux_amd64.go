//go:build !purego

package cpu

import (
	"sync"

	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/quant"
)

// Q4_K and Q5_K on AMX (Q6_K: amxq6k_amd64.s). A tile product has one scale, where a super-block
// has a 6-bit scale and min per 32 values; so each group of sixteen rows
// is expanded once per matmul into three byte tiles per 64 values whose
// products give dotKRowGo's exact integers: the values times their
// scale's low three bits, times its high three bits (S = low + 8 high; a
// Q4_K nibble's products reach 105, a Q5_K value's 31 x 7 = 217: still a
// byte), and the mins repeated (minus M). Twelve tile products per
// super-block and token tile replace the VNNI kernel's 64 dot
// instructions per token; the expansion (12 KiB per super-block of a
// group, in L2) is shared by every token of the matmul.

// amxKBytes is a super-block's expanded tiles (4 x 3 KiB).
const amxKBytes = 12288

// kTileConfigs[k] configures tiles for k tokens: the first sums tiles
// (k x 16 sums) and then the activations (k x 64 bytes) with k rows, the
// rest (16 x 64 bytes of expanded weights) with 16, all 64 bytes wide.
func kTileConfigs(sums, tiles int) (c [17][64]byte) {
	for k := 1; k <= 16; k++ {
		c[k][0] = 1
		for t := range tiles {
			c[k][16+2*t], c[k][48+t] = 64, byte(k)
			if t > sums {
				c[k][48+t] = 16
			}
		}
	}
	return c
}

var (
	// q4kAMXConfigs: tiles 0-2 the sums, 3 the activations, 4-6 the
	// weights (q4kAMX).
	q4kAMXConfigs = kTileConfigs(3, 7)
	// q6kAMXConfigs: tiles 0-3 the digit sums, 4 the activations, 5-7 the
	// weights (q6kAMX).
	q6kAMXConfigs = kTileConfigs(4, 8)
)

//go:noescape
func kExpandAMX(w *byte, rb, nsb int, e *byte, dd *float32, size int)

//go:noescape
func q4kAMX(cfg *byte, e *byte, dd *float32, qs *int8, d *float32, qstride, dstride, nsb, ntok, r int, acc *float32, astride int)

//go:noescape
func q6kExpandAMX(w *byte, rb, nsb int, e *byte, dd *float32, size int)

//go:noescape
func q6kAMX(cfg *byte, e *byte, dd *float32, qs *int8, d *float32, qstride, dstride, nsb, ntok, r int, acc *float32, astride int)

// amxKRoute is a K-quant's way through AMX: its expansion of a group of
// sixteen rows (bytes a super-block) and the tile kernel that takes it.
type amxKRoute struct {
	bytes  int
	cfgs   *[17][64]byte
	expand func(w *byte, rb, nsb int, e *byte, dd *float32, size int)
	kernel func(cfg *byte, e *byte, dd *float32, qs *int8, d *float32, qstride, dstride, nsb, ntok, r int, acc *float32, astride int)
}

var (
	q4kRoute = amxKRoute{amxKBytes, &q4kAMXConfigs, kExpandAMX, q4kAMX}
	q6kRoute = amxKRoute{16384, &q6kAMXConfigs, q6kExpandAMX, q6kAMX}
)

// amxKFormat is w's route, if AMX takes its format at matmulKAMX.
func amxKFormat(t quant.DType) (amxKRoute, bool) {
	switch t {
	case quant.Q4_K, quant.Q5_K:
		return q4kRoute, true
	case quant.Q6_K:
		return q6kRoute, true
	}
	return amxKRoute{}, false
}

// amxKBuf is a share's expansion of one group, and its accumulators.
type amxKBuf struct {
	e   []byte
	dd  []float32
	acc []float32
}

var amxKPool = sync.Pool{New: func() any { return new(amxKBuf) }}

// amxScratch lends n bytes of a pooled buffer until done is called.
func amxScratch(n int) (b []byte, done func()) {
	x := amxKPool.Get().(*amxKBuf)
	if len(x.e) < n {
		x.e = make([]byte, n)
	}
	return x.e[:n], func() { amxKPool.Put(x) }
}

// expand fills the buffer from the sixteen rows at w (rb bytes apart) of
// size-byte super-blocks through rt's expansion.
func (x *amxKBuf) expand(rt amxKRoute, w []byte, rb, nsb, size int) {
	if len(x.e) < nsb*rt.bytes {
		x.e = make([]byte, nsb*rt.bytes)
	}
	if len(x.dd) < nsb*32 {
		x.dd = make([]float32, nsb*32)
	}
	rt.expand(&w[0], rb, nsb, &x.e[0], &x.dd[0], size)
}

// matmulKAMX is matmulRows16 for the K-quants AMX takes (amxKFormat):
// each group of sixteen rows expanded, then every token, in tiles of up to
// sixteen.
func (kn *kernels) matmulKAMX(out []float32, a *acts, n int, w *model.Matrix, lo, hi, whole int) {
	rt, _ := amxKFormat(w.Type)
	cols, rows, rb := w.Cols, w.Rows, w.Type.RowBytes(w.Cols)
	nsb := cols / qkK
	x := amxKPool.Get().(*amxKBuf)
	defer amxKPool.Put(x)
	if len(x.acc) < 16*n {
		x.acc = make([]float32, 16*n)
	}
	acc := x.acc[:16*n]
	r := (n + (n+15)/16 - 1) / ((n + 15) / 16) // n over the fewest tiles, evenly
	for g := lo &^ 15; g < min(hi, whole); g += 16 {
		x.expand(rt, w.Data[g*rb:(g+16)*rb], rb, nsb, rb/nsb)
		r0, r1 := max(g, lo), min(g+16, hi)
		cfg := &rt.cfgs[r][0]
		if r0 == g && r1 == g+16 { // straight into the output's rows
			rt.kernel(cfg, &x.e[0], &x.dd[0], &a.q8k.qs[0], &a.q8k.d[0], cols, nsb, nsb, n, r, &out[g], 4*rows)
			continue
		}
		rt.kernel(cfg, &x.e[0], &x.dd[0], &a.q8k.qs[0], &a.q8k.d[0], cols, nsb, nsb, n, r, &acc[0], 64)
		for t := range n {
			copy(out[t*rows+r0:t*rows+r1], acc[16*t+r0-g:16*t+r1-g])
		}
	}
}
