package cpu

import (
	"slices"

	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/quant"
)

// Q8_0 rows packed for the VNNI row kernel: per group of sixteen rows and
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

// repackQ80 gives m's Q8_0 matrices that the int8 path multiplies their
// packed copies, where the row kernels run (VNNI): not the token
// embedding table unless it is also the classifier (lookups read rows).
func repackQ80(m *model.Model, kn *kernels) error {
	if !kn.int8 || !kn.vnni {
		return nil
	}
	want := func(w *model.Matrix) bool {
		return w.Rows >= 16 && (w != m.Embed || w == m.Output) && w != m.PosEmbd && !slices.Contains(m.Dense, w)
	}
	return m.Repack(quant.Q8_0, want, func(dst []byte, w *model.Matrix) {
		rb, whole := quant.Q8_0.RowBytes(w.Cols), w.Rows&^15
		for g := range whole / 16 {
			packQ80(dst[g*16*rb:(g+1)*16*rb], w.Data, rb, g)
		}
		copy(dst[whole*rb:], w.Data[whole*rb:])
	})
}
