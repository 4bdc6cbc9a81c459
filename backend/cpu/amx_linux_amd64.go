//go:build !purego

package cpu

import (
	"unsafe"

	"github.com/batchd/batchd/quant"
	"golang.org/x/sys/cpu"
	"golang.org/x/sys/unix"
)

// haveAMX reports whether the AMX-INT8 kernels run: the CPU has the tiles
// (Sapphire Rapids and later) and Linux granted this process their state,
// which it asks for once, here (arch_prctl ARCH_REQ_XCOMP_PERM for
// XTILEDATA); their float work is AVX-512's, so noavx512 masks them too.
var haveAMX = haveVNNI && cpu.X86.HasAMXTile && cpu.X86.HasAMXInt8 && amxPermitted()

func amxPermitted() bool {
	const reqXcompPerm, xfeatureTileData = 0x1023, 18
	_, _, errno := unix.RawSyscall(unix.SYS_ARCH_PRCTL, reqXcompPerm, xfeatureTileData, 0)
	return errno == 0
}

// amxConfigs[k] is the tile configuration for k tokens (palette 1): tile 0
// the k x 16 sums, tile 1 the k tokens' 32 activations, tile 2 the 8 x 64
// bytes of a packed block (four values of each of sixteen rows a row),
// tile 3 the -128s (8 rows of 64); tiles 4-6 as 0-2, for odd blocks.
var amxConfigs = func() (c [17][64]byte) {
	for k := 1; k <= 16; k++ {
		c[k][0] = 1
		c[k][16], c[k][48] = 64, byte(k)
		c[k][18], c[k][49] = 32, byte(k)
		c[k][20], c[k][50] = 64, 8
		c[k][22], c[k][51] = 64, 8
		c[k][24], c[k][52] = 64, byte(k) // tiles 4-6: the second set, as 0-2
		c[k][26], c[k][53] = 32, byte(k)
		c[k][28], c[k][54] = 64, 8
	}
	return c
}()

//go:noescape
func q80AMX16(cfg *byte, w *byte, qs *int8, d *float32, qstride, dstride, nb, ntok int, out *float32, ostride int)

//go:noescape
func q80AMX32(cfg *byte, w *byte, qs *int8, d *float32, qstride, dstride, nb, n0, n1 int, out *float32, ostride int)

// amxConfigs32[k] is q80AMX32's configuration for k tokens (17 to 32) in
// two tiles, (k+1)/2 and k/2: tiles 0, 1 and 6 the first's sums and
// activations, 4, 5 and 7 the second's, 2 and 3 as in amxConfigs.
var amxConfigs32 = func() (c [33][64]byte) {
	for k := 17; k <= 32; k++ {
		m0, m1 := byte((k+1)/2), byte(k/2)
		c[k][0] = 1
		for t, cr := range [8][2]byte{{64, m0}, {32, m0}, {64, 8}, {64, 8}, {64, m1}, {32, m1}, {64, m0}, {64, m1}} {
			c[k][16+2*t], c[k][48+t] = cr[0], cr[1]
		}
	}
	return c
}()

// q80PackedAMX is q80Packed16VNNI on AMX, up to sixteen tokens a tile: the
// same integers (without nsum: the tile cancels the bias) and float work,
// so the same bits. The tokens split evenly over the tiles (20 as 10 and
// 10, not 16 and 4): a tile's cost is mostly per block, whatever its rows.
func q80PackedAMX(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int) {
	q80AMXTiles(w, qs, d, qstride, dstride, nb, ntok, out, ostride, 16)
}

// q80PackedAMXOnce is q80PackedAMX in passes of up to 32 tokens, two tiles
// sharing each block's weights (q80AMX32), for groups a matmul reads
// once (decode steps): their weights stream from memory, and one pass
// per block asks half the bandwidth of two. Groups read again from cache
// (prompts) run faster on q80AMX16's double-buffered tiles.
func q80PackedAMXOnce(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int) {
	q80AMXTiles(w, qs, d, qstride, dstride, nb, ntok, out, ostride, 32)
}

func q80AMXTiles(w *byte, qs *int8, d *float32, qstride, dstride, nb, ntok int, out *float32, ostride, most int) {
	passes := (ntok + most - 1) / most
	for i := range passes {
		t := i * ntok / passes
		k := (i+1)*ntok/passes - t
		q := (*int8)(unsafe.Add(unsafe.Pointer(qs), t*qstride))
		dt := (*float32)(unsafe.Add(unsafe.Pointer(d), 4*t*dstride))
		o := (*float32)(unsafe.Add(unsafe.Pointer(out), 4*t*ostride))
		if k <= 16 {
			q80AMX16(&amxConfigs[k][0], w, q, dt, qstride, dstride, nb, k, o, ostride)
			continue
		}
		q80AMX32(&amxConfigs32[k][0], w, q, dt, qstride, dstride, nb, (k+1)/2, k/2, o, ostride)
	}
}

//go:noescape
func nibblesToQ80AMX(src *byte, nb int, dst *byte, grid *byte)

// amxGrids are the 4-bit formats' values plus 128, by nibble: their packed
// groups become Q8_0's (nibblesToQ80AMX) for the Q8_0 AMX kernel, whose
// integers and float steps are theirs too (rows32Go).
var amxGrids = func() (g [2][16]byte) {
	for i := range 16 {
		g[0][i] = byte(120 + i) // Q4_0: nibble - 8
		g[1][i] = byte(int(quant.IQ4Grid[i]) + 128)
	}
	return g
}()

// amxNibbles is what expands a packed group of t (16 rows of nb blocks)
// into dst as packQ80 would lay out their values, or nil.
func amxNibbles(t quant.DType) func(dst, src []byte, nb int) {
	var grid *[16]byte
	switch t {
	case quant.Q4_0:
		grid = &amxGrids[0]
	case quant.IQ4_NL:
		grid = &amxGrids[1]
	default:
		return nil
	}
	return func(dst, src []byte, nb int) {
		_, _ = dst[nb*544-1], src[nb*288-1]
		nibblesToQ80AMX(&src[0], nb, &dst[0], &grid[0])
	}
}

// amxKernel is t's AMX kernel on its packed rows, or nil; once, for a
// matmul that reads each group once.
func amxKernel(t quant.DType, once bool) rows16Kernel {
	if t == quant.Q8_0 && once {
		return q80PackedAMXOnce
	}
	if t == quant.Q8_0 {
		return q80PackedAMX
	}
	return nil
}
