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

// expand fills the buffer's i-th group from the sixteen rows at w (rb
// bytes apart) of size-byte super-blocks through rt's expansion, growing it
// to hold groups of them.
func (x *amxKBuf) expand(rt amxKRoute, w []byte, rb, nsb, size, i, groups int) {
	if len(x.e) < groups*nsb*rt.bytes {
		x.e = make([]byte, groups*nsb*rt.bytes)
	}
	if len(x.dd) < groups*nsb*32 {
		x.dd = make([]float32, groups*nsb*32)
	}
	rt.expand(&w[0], rb, nsb, &x.e[i*nsb*rt.bytes], &x.dd[i*nsb*32], size)
}

// matmulKAMX is matmulRows16 for the K-quants AMX takes (amxKFormat):
// the groups of sixteen rows expanded a chunk at a time (groupChunk), then
// every pass of promptPass tokens over the chunk's groups, in tiles of up
// to sixteen (matmulRows16Groups' order, for the same reason).
func (kn *kernels) matmulKAMX(out []float32, a *acts, n int, w *model.Matrix, lo, hi, whole int) {
	rt, _ := amxKFormat(w.Type)
	cols, rows, rb := w.Cols, w.Rows, w.Type.RowBytes(w.Cols)
	nsb := cols / qkK
	x := amxKPool.Get().(*amxKBuf)
	defer amxKPool.Put(x)
	pass := min(n, promptPass)
	if len(x.acc) < 16*pass {
		x.acc = make([]float32, 16*pass)
	}
	acc := x.acc[:16*pass]
	groups := max(1, groupChunk/(nsb*rt.bytes))
	end := min(hi, whole)
	for c0 := lo &^ 15; c0 < end; c0 += 16 * groups {
		c1 := min(c0+16*groups, end)
		for g := c0; g < c1; g += 16 {
			x.expand(rt, w.Data[g*rb:(g+16)*rb], rb, nsb, rb/nsb, (g-c0)/16, groups)
		}
		for t := 0; t < n; t += pass {
			k := min(pass, n-t)
			tiles := (k + 15) / 16
			r := (k + tiles - 1) / tiles // k over the fewest tiles, evenly
			cfg := &rt.cfgs[r][0]
			qs, d := &a.q8k.qs[t*cols], &a.q8k.d[t*nsb]
			for g := c0; g < c1; g += 16 {
				i := (g - c0) / 16
				e, dd := &x.e[i*nsb*rt.bytes], &x.dd[i*nsb*32]
				r0, r1 := max(g, lo), min(g+16, hi)
				if r0 == g && r1 == g+16 { // straight into the output's rows
					rt.kernel(cfg, e, dd, qs, d, cols, nsb, nsb, k, r, &out[t*rows+g], 4*rows)
					continue
				}
				rt.kernel(cfg, e, dd, qs, d, cols, nsb, nsb, k, r, &acc[0], 64)
				for j := range k {
					copy(out[(t+j)*rows+r0:(t+j)*rows+r1], acc[16*j+r0-g:16*j+r1-g])
				}
			}
		}
	}
}
