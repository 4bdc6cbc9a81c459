package cpu

import (
	"slices"

	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/quant"
)

// Rows packed for the VNNI row kernels. Q8_0: per group of sixteen rows and
// per block, the rows' fp16 scales (32 bytes, row order) and then, for v in
// 0..7, row j's quants 4v..4v+3 plus 128 at 32+64v+4j. That is the group's
// 16*34 bytes again, read as one stream where q80Rows16VNNI gathers
// sixteen and transposes them in registers; the integers and the float
// work are the same, so the sums are bit for bit.

// q80PackedBlock is one block of a packed group.
const q80PackedBlock = 16 * 34

// packQ80 writes rows [16g, 16g+16) of the Q8_0 matrix src (rb bytes a row)
// packed into dst (16*rb bytes).
func packQ80(dst, src []byte, rb, g int) {
	nb := rb / 34
	for b := range nb {
		out := dst[b*q80PackedBlock : (b+1)*q80PackedBlock]
		for j := range 16 {
			blk := src[(16*g+j)*rb+b*34:]
			out[2*j], out[2*j+1] = blk[0], blk[1]
			for v := range 8 {
				for i := range 4 {
					out[32+64*v+4*j+i] = blk[2+4*v+i] ^ 0x80
				}
			}
		}
	}
}

// MXFP4 rows packed alike: per group and block the rows' E8M0 bytes (16),
// then for k in 0..3 row j's nibble bytes 4k..4k+3 at 16+64k+4j: the
// group's 16*17 bytes.
const mxfp4PackedBlock = 16 * 17

// packMXFP4 is packQ80 for MXFP4.
func packMXFP4(dst, src []byte, rb, g int) {
	nb := rb / 17
	for b := range nb {
		out := dst[b*mxfp4PackedBlock : (b+1)*mxfp4PackedBlock]
		for j := range 16 {
			blk := src[(16*g+j)*rb+b*17:]
			out[j] = blk[0]
			for k := range 4 {
				copy(out[16+64*k+4*j:16+64*k+4*j+4], blk[1+4*k:1+4*k+4])
			}
		}
	}
}

// packedFormats are the formats repacked for the VNNI row kernels: each
// one's packer (group g of rows rb bytes wide) and kernel.
var packedFormats = []struct {
	t    quant.DType
	pack func(dst, src []byte, rb, g int)
	kern rows16Kernel
}{{quant.Q8_0, packQ80, q80Packed16VNNI}, {quant.MXFP4, packMXFP4, mxfp4Packed16VNNI}}

// packedKernel is the row kernel for t's packed layout, or nil.
func packedKernel(t quant.DType) rows16Kernel {
	for _, f := range packedFormats {
		if f.t == t {
			return f.kern
		}
	}
	return nil
}

// repack gives m's matrices in packedFormats that the int8 path
// multiplies their packed copies, where the row kernels run (VNNI): not
// the token embedding table unless it is also the classifier (lookups
// read rows), nor what the pooler reads.
func repack(m *model.Model, kn *kernels) error {
	if !kn.int8 || !kn.vnni {
		return nil
	}
	want := func(w *model.Matrix) bool {
		return w.Rows >= 16 && (w != m.Embed || w == m.Output) && w != m.PosEmbd && !slices.Contains(m.Dense, w)
	}
	for _, f := range packedFormats {
		err := m.Repack(f.t, want, func(dst []byte, w *model.Matrix) {
			rb, whole := f.t.RowBytes(w.Cols), w.Rows&^15
			for g := range whole / 16 {
				f.pack(dst[g*16*rb:(g+1)*16*rb], w.Data, rb, g)
			}
			copy(dst[whole*rb:], w.Data[whole*rb:])
		})
		if err != nil {
			return err
		}
	}
	return nil
}
