package cpu

import (
	"unsafe"

	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/quant"
)

// The row-lane form of the int8 path on AVX512-VNNI, for every format it
// has: Q8_0, Q4_0 and the other 32-value formats (Q4_1, Q5_0, Q5_1,
// IQ4_NL), IQ4_XS and the K-quants. A kernel call covers sixteen rows,
// each in a lane of its own, so a token's float work per block (convert,
// scale, add) is one instruction for sixteen rows where the element-lane
// form (dotQ40Go) spends one per row, and each row's block is transposed
// once for every token of the pass. A row's result is its blocks' exact
// integer sums scaled and added in block order (rows32Go, dotKRowGo,
// dotQ6KGo, dotQ3KGo, dotQ2KGo, dotIQ4XSGo), whichever rows, shares or
// tokens it shares a call with. Without VNNI, Q8_0 and Q5_K run their Go
// loops and the others their AVX2 kernels (int8b.go, int8k.go, int8x.go).

// rowsTokens is the most tokens a kernel call takes: its accumulators and
// results (64 floats a token) live in the share's scratch.
const rowsTokens = 64

// promptPass is the pass of tokens for matmuls of more than rowsTokens
// (prompts): fewer tokens a pass keep a pass's activations nearer the
// core while the chunk of groups (groupChunk) stays in L2. pp512 ran
// 1.03-1.10x faster on AMX and VNNI than with passes of 64 (16 measured
// as 32; 48 and 128 slower).
const promptPass = 32

// amxTokens is the fewest tokens a call gives the AMX kernels rather than
// the VNNI ones: a prompt's passes, not decode batches. Their kernels are
// 1.3-1.9x VNNI's from 16 tokens (BenchmarkAMXvsVNNI, BenchmarkAMXQ4K),
// but whole decode steps at 32 sequences measured no faster with them
// (docs/bench/issue46-amx.md), and Q4_K's expansion is paid per matmul.
const amxTokens = 64

// amxQ80Tokens is amxTokens for Q8_0's own packed groups: no expansion to
// pay, and in a decode step (each group read once) two tiles of tokens
// share each block's weights (q80PackedAMXOnce), which made Gemma-3 steps
// of 32 sequences 1.23-1.29x the VNNI kernel's (docs/bench/issue42-46-amx32.md).
const amxQ80Tokens = 16

// rows16Kernel is a format's sixteen-row kernel.
type rows16Kernel func(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int)

// q40Row and q80Row describe Q4_0 and Q8_0 blocks for rows32Go (they have
// no lane kernels of this form).
var (
	q40Row = block32{kind: quant.Q4_0, size: 18}
	q80Row = block32{kind: quant.Q8_0, size: 34}
)

// dotQ4KRowGo is the Q4_K x q8_K dot of one row and one token as its row
// kernel computes it: per super-block the exact integers S (each
// sub-block's 6-bit scale times its integer) and M (each 6-bit min times
// minus the sub-block's activation sum, nsum), then acc + (d_a d) S, then
// + (d_a dmin) M.
func dotQ4KRowGo(w []byte, qs []int8, d []float32, nsum []int32, nsb int) float32 {
	return dotKRowGo(w, 144, 16, -1, qs, d, nsum, nsb)
}

// dotQ5KRowGo is dotQ4KRowGo for Q5_K: value l of sub-block j has bit j of
// qh[l] as its fifth.
func dotQ5KRowGo(w []byte, qs []int8, d []float32, nsum []int32, nsb int) float32 {
	return dotKRowGo(w, 176, 48, 16, qs, d, nsum, nsb)
}

// dotKRowGo is the two: size-byte super-blocks, nibbles at qOff (chunk
// j/2's low nibbles are sub-block j even, its high ones j odd), fifth bits
// at qhOff (none if negative).
func dotKRowGo(w []byte, size, qOff, qhOff int, qs []int8, d []float32, nsum []int32, nsb int) float32 {
	var acc float32
	for b := range nsb {
		blk, x := w[b*size:(b+1)*size], qs[b*qkK:(b+1)*qkK]
		sc, m := quant.K4ScaleMins(blk)
		var S, M int32
		for j := range 8 {
			q := blk[qOff+32*(j/2):]
			var p int32
			for i, v := range x[32*j : 32*j+32] {
				nib := q[i] & 0xf
				if j%2 == 1 {
					nib = q[i] >> 4
				}
				if qhOff >= 0 {
					nib |= (blk[qhOff+i] >> j & 1) << 4
				}
				p += int32(nib) * int32(v)
			}
			S += int32(sc[j]) * p
			M += int32(m[j]) * nsum[8*b+j]
		}
		acc = acc + float32((d[b]*f16(blk))*float32(S))
		acc = acc + float32((d[b]*f16(blk[2:]))*float32(M))
	}
	return acc
}

// rows32Go is the dot of one row of a 32-value format (int8b.go's, Q4_0's
// or Q8_0's) and one token as the row kernels compute it: per block the
// exact integer sum of its values (less any offset) times the activations,
// times (weight scale times activation scale), added in block order; for
// the _1 formats then the min times the activations' sum.
func rows32Go(w []byte, qs []int8, d []float32, nb int, f *block32) float32 {
	var acc float32
	var v [32]int32
	for b := range nb {
		blk, x := w[b*f.size:(b+1)*f.size], qs[b*q8Block:(b+1)*q8Block]
		f.values(blk, &v)
		var p, s int32
		for e, q := range x {
			p += v[e] * int32(q)
			s += int32(q)
		}
		acc = acc + float32(float32(p)*(f16(blk)*d[b]))
		if f.min {
			acc = acc + float32(float32(s)*(f16(blk[2:])*d[b]))
		}
	}
	return acc
}

// rowKernel is t's sixteen-row kernel (AVX512-VNNI).
func rowKernel(t quant.DType) rows16Kernel {
	switch t {
	case quant.Q8_0:
		return q80Rows16VNNI
	case quant.Q4_0:
		return q40Rows16VNNI
	case quant.Q4_1:
		return q41Rows16VNNI
	case quant.Q5_0:
		return q50Rows16VNNI
	case quant.Q5_1:
		return q51Rows16VNNI
	case quant.IQ4_NL:
		return iq4nlRows16VNNI
	case quant.MXFP4:
		return mxfp4Rows16VNNI
	case quant.IQ4_XS:
		return iq4xsRows16VNNI
	case quant.Q2_K:
		return q2kRows16VNNI
	case quant.Q3_K:
		return q3kRows16VNNI
	case quant.Q4_K:
		return q4kRows16VNNI
	case quant.Q5_K:
		return q5kRows16VNNI
	case quant.Q6_K:
		return q6kRows16VNNI
	}
	panic("no row kernel for " + t.String())
}

// fewTokens is the most tokens a matmul runs Q4_K, Q5_K and Q6_K on their
// row-major kernels (int8fewk_amd64.s) rather than the row lanes, which
// transpose sixteen rows: work a prompt shares over its tokens, but at one
// or two tokens their streams left a third of the bandwidth unused
// (Gemma-3 Q4_K_M: batch 1 43 against 58 tok/s, 2 sequences 88 against
// 108; at three the lanes are ahead, 135 against 132).
const fewTokens = 2

// fewKernel is t's row-major kernel for fewTokens or fewer, or nil.
func fewKernel(t quant.DType) rows16Kernel {
	switch t {
	case quant.Q4_K:
		return q4kRowsFewVNNI
	case quant.Q5_K:
		return q5kRowsFewVNNI
	case quant.Q6_K:
		return q6kRowsFewVNNI
	}
	return nil
}

// matmulRows16 is matmulInt8 on a row kernel: groups of sixteen rows
// aligned to the matrix (a share's first and last group may reach outside
// [lo, hi): computed whole, only its own rows kept), rows past the last
// whole group (every row without VNNI) by the format's Go loop (rowTail),
// tokens in passes of up to rowsTokens. q8_0 activations have a scale and
// a negated sum per 32 values; q8_K ones a scale per 256 and a negated sum
// per 32, or (Q6_K, Q3_K, Q2_K) an int16 sum per 16.
func (kn *kernels) matmulRows16(out []float32, a *acts, n int, w *model.Matrix, lo, hi int, scratch []float32, kern rows16Kernel) {
	cols, rows, rb := w.Cols, w.Rows, w.Type.RowBytes(w.Cols)
	whole := rows &^ 15
	if !kn.simd || !kn.vnni {
		whole = 0
	}
	if _, ok := amxKFormat(w.Type); ok && kn.amx && n >= amxTokens {
		kn.matmulKAMX(out, a, n, w, lo, hi, whole)
	} else {
		kn.matmulRows16Groups(out, a, n, w, lo, hi, whole, scratch, kern)
	}
	for r := max(lo, whole); r < hi; r++ {
		for t := range n {
			out[t*rows+r] = rowTail(w.Data[r*rb:(r+1)*rb], a, t, w.Type, cols)
		}
	}
}

// matmulRows16Groups is matmulRows16's whole groups on the row kernels.
func (kn *kernels) matmulRows16Groups(out []float32, a *acts, n int, w *model.Matrix, lo, hi, whole int, scratch []float32, kern rows16Kernel) {
	cols, rows, rb := w.Cols, w.Rows, w.Type.RowBytes(w.Cols)
	qs, d, nsum, nb, dn := a.q8.qs, a.q8.d, a.q8.nsum, cols/q8Block, cols/q8Block
	if int8Kind(w.Type) == actQ8_K {
		qs, d, nsum, nb, dn = a.q8k.qs, a.q8k.d, a.q8k.nsum, cols/qkK, cols/qkK
	}
	if t := w.Type; t == quant.Q6_K || t == quant.Q3_K || t == quant.Q2_K {
		// These kernels read the 16-sums (int16): as many bytes a token as
		// the 32-sums, so nsum's indexing below finds them too.
		nsum = unsafe.Slice((*int32)(unsafe.Pointer(unsafe.SliceData(a.q8k.bs))), len(a.q8k.bs)/2)
	}
	// Accumulators (and the super-block formats' integer sums) take 48
	// floats a token, results 16.
	pass := min(rowsTokens, len(scratch)/64)
	if n > pass {
		pass = min(pass, promptPass)
	}
	acc, res := scratch[:48*pass], scratch[48*pass:64*pass]
	r := kn.rows16Route(w, n, pass, nb, rb, kern)
	defer r.done()
	data, kern, many, manyFrom, expand, grp, chunk := r.data, r.kern, r.many, r.manyFrom, r.expand, r.grp, r.chunk
	one := func(g, t int, src *byte) {
		k := min(pass, n-t)
		kern := kern
		if k >= manyFrom {
			kern = many
		}
		if g >= lo && g+16 <= hi {
			kern(src, rb, &qs[t*cols], &d[t*dn], &nsum[t*cols/q8Block], cols, dn, nb, k, &acc[0], &out[t*rows+g], rows)
			return
		}
		kern(src, rb, &qs[t*cols], &d[t*dn], &nsum[t*cols/q8Block], cols, dn, nb, k, &acc[0], &res[0], 16)
		for j := range k {
			for r := max(g, lo); r < min(g+16, hi); r++ {
				out[(t+j)*rows+r] = res[j*16+r-g]
			}
		}
	}
	// Groups in chunks of about groupChunk bytes (as the kernel reads them),
	// each chunk swept by every pass of tokens: its weights stay in L2 from
	// one pass to the next while a pass's activations stay in cache across
	// its groups. Group by group, every group streamed all the tokens'
	// activations from L2 again.
	end := min(hi, whole)
	for c0 := lo &^ 15; c0 < end; c0 += chunk {
		c1 := min(c0+chunk, end)
		expanded := false
		for t := 0; t < n; t += pass {
			for g := c0; g < c1; g += 16 {
				src := &data[g*rb]
				if grp != nil && min(pass, n-t) >= manyFrom {
					if !expanded {
						for e := c0; e < c1; e += 16 {
							expand(grp[(e-c0)/16*nb*544:], data[e*rb:(e+16)*rb], nb)
						}
						expanded = true
					}
					src = &grp[(g-c0)/16*nb*544]
				}
				one(g, t, src)
			}
		}
	}
}

// rows16Route is what matmulRows16Groups runs a matrix's groups on.
type rows16Route struct {
	data       []byte       // the groups: the file's, or their packed copy
	kern, many rows16Kernel // for passes of fewer than manyFrom tokens, and of more
	manyFrom   int
	expand     func(dst, src []byte, nb int) // packed groups to Q8_0's for many (AMX), or nil
	grp        []byte                        // where expand writes a chunk of groups
	chunk      int                           // rows a chunk: about groupChunk bytes as the kernels read them
	done       func()
}

// rows16Route picks the kernels. AMX takes the passes of amxTokens (Q8_0:
// amxQ80Tokens) or more: Q8_0's packed groups as they are, Q4_0's and
// IQ4_NL's turned into Q8_0's (in grp) where the matmul has amxTokens to
// pay for that, and then each pass of amxQ80Tokens or more.
func (kn *kernels) rows16Route(w *model.Matrix, n, pass, nb, rb int, kern rows16Kernel) rows16Route {
	r := rows16Route{data: w.Data, kern: kern, many: kern, manyFrom: amxTokens, done: func() {}}
	r.chunk = 16 * max(1, groupChunk/(16*rb))
	p, pk := w.Packed(), packedKernel(w.Type)
	if k := fewKernel(w.Type); k != nil && n <= fewTokens {
		r.kern = k
	}
	if p == nil || pk == nil {
		return r
	}
	r.data, r.kern, r.many = p, pk, pk
	if ak := amxKernel(w.Type, n <= pass); kn.amx && ak != nil {
		r.many, r.manyFrom = ak, amxQ80Tokens
	} else if kn.amx && n >= amxTokens {
		if r.expand = amxNibbles(w.Type); r.expand != nil {
			r.many, r.manyFrom = amxKernel(quant.Q8_0, false), amxQ80Tokens
			groups := max(1, groupChunk/(nb*544)) // expanded groups a chunk
			r.chunk = 16 * groups
			r.grp, r.done = amxScratch(groups * nb * 544)
		}
	}
	return r
}

// groupChunk is how many bytes of packed (or expanded) groups a matmul's
// passes of tokens sweep together: half the L2 (within 128 KiB to 2 MiB),
// leaving the rest to the passes' activations. On Sapphire Rapids (2 MiB)
// prompts ran 4-12% faster (pp512, Gemma-3, Qwen3.5 and L110 Q8_0) than
// group by group.
var groupChunk = min(max(l2Bytes(2<<20)/2, 128<<10), 2<<20) // a variable for tests

// rowTail is one row's result for token t by its format's Go loop (a
// switch, not a function value: nothing escapes).
func rowTail(row []byte, a *acts, t int, typ quant.DType, cols int) float32 {
	if nsb := cols / qkK; int8Kind(typ) == actQ8_K {
		qs, d := a.q8k.qs[t*cols:(t+1)*cols], a.q8k.d[t*nsb:(t+1)*nsb]
		switch typ {
		case quant.Q6_K:
			return dotQ6KGo(row, qs, d, a.q8k.bs[t*cols/16:(t+1)*cols/16], nsb)
		case quant.Q3_K:
			return dotQ3KGo(row, qs, d, a.q8k.bs[t*cols/16:(t+1)*cols/16], nsb)
		case quant.Q2_K:
			return dotQ2KGo(row, qs, d, a.q8k.bs[t*cols/16:(t+1)*cols/16], nsb)
		case quant.Q4_K:
			return dotQ4KRowGo(row, qs, d, a.q8k.nsum[t*cols/32:(t+1)*cols/32], nsb)
		case quant.Q5_K:
			return dotQ5KRowGo(row, qs, d, a.q8k.nsum[t*cols/32:(t+1)*cols/32], nsb)
		case quant.IQ4_XS:
			return dotIQ4XSGo(row, qs, d, nil, nsb)
		}
		panic("no row kernel for " + typ.String())
	}
	nb := cols / q8Block
	qs, d := a.q8.qs[t*cols:(t+1)*cols], a.q8.d[t*nb:(t+1)*nb]
	switch typ {
	case quant.Q8_0:
		return rows32Go(row, qs, d, nb, &q80Row)
	case quant.Q4_0:
		return rows32Go(row, qs, d, nb, &q40Row)
	case quant.Q4_1:
		return rows32Go(row, qs, d, nb, &q41Int8)
	case quant.Q5_0:
		return rows32Go(row, qs, d, nb, &q50Int8)
	case quant.Q5_1:
		return rows32Go(row, qs, d, nb, &q51Int8)
	case quant.IQ4_NL:
		return rows32Go(row, qs, d, nb, &iq4nlInt8)
	case quant.MXFP4:
		return dotMXFP4Go(row, qs, d, nb)
	}
	panic("no row kernel for " + typ.String())
}

// dotMXFP4Go is MXFP4's row against q8_0 activations, as ggml's
// vec_dot_mxfp4_q8_0: per block the exact integer sum of grid values times
// activations, times the activations' scale times the block's (E8M0, halved).
func dotMXFP4Go(w []byte, qs []int8, d []float32, nb int) float32 {
	var acc float32
	for b := range nb {
		blk, x := w[b*17:(b+1)*17], qs[b*q8Block:(b+1)*q8Block]
		var s int32
		for j := range 16 {
			q := blk[1+j]
			s += int32(x[j])*int32(quant.MXFP4Grid[q&0xf]) + int32(x[j+16])*int32(quant.MXFP4Grid[q>>4])
		}
		acc = acc + (d[b]*quant.E8MHalf(blk[0]))*float32(s)
	}
	return acc
}
