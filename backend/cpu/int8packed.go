package cpu

import (
	"encoding/binary"
	"runtime"
	"slices"
	"sync"

	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/quant"
)

// Rows packed for the VNNI row kernels: per group of sixteen rows and per
// block, the rows' scales (head bytes each, row order), then for each
// dword v of the block's values row j's at 16*head+64v+4j, XORed with flip
// (Q8_0's bias of 128). That is the group's 16 blocks again, read as one
// stream where the row kernels gather sixteen and transpose them in
// registers; the integers and the float work are the same, so the sums
// are bit for bit.
//
// Q8_0: fp16 scales, eight dwords of quants (q80Rows16VNNI's Z8..Z15).
// MXFP4: E8M0 bytes, four dwords of nibbles (R16LOAD16's Z4..Z7).
// Q4_0 and IQ4_NL: fp16 scales, four dwords of nibbles.
func packQ80(dst, src []byte, rb, g int) { packRows(dst, src, rb, g, 34, 2, 0x80808080) }

// packQ80S is packQ80 without the bias, for plain AVX2: its sign trick
// takes w as it is, where the bias cost a VPXOR a vector (5-6% of a
// prompt on Zen 5 with the AVX2 kernels).
func packQ80S(dst, src []byte, rb, g int)  { packRows(dst, src, rb, g, 34, 2, 0) }
func packMXFP4(dst, src []byte, rb, g int) { packRows(dst, src, rb, g, 17, 1, 0) }
func packQ40(dst, src []byte, rb, g int)   { packRows(dst, src, rb, g, 18, 2, 0) }

// packRows writes rows [16g, 16g+16) of src (rb bytes a row, blocks of bb
// bytes: head bytes of scale, then the values) packed into dst.
func packRows(dst, src []byte, rb, g, bb, head int, flip uint32) {
	for b := range rb / bb {
		out := dst[16*b*bb : 16*(b+1)*bb]
		for j := range 16 {
			blk := src[(16*g+j)*rb+b*bb : (16*g+j)*rb+(b+1)*bb]
			out[head*j] = blk[0]
			if head == 2 {
				out[2*j+1] = blk[1]
			}
			for v := range (bb - head) / 4 {
				x := binary.LittleEndian.Uint32(blk[head+4*v:]) ^ flip
				binary.LittleEndian.PutUint32(out[16*head+64*v+4*j:], x)
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
}{{quant.Q8_0, packQ80, q80Packed16VNNI}, {quant.MXFP4, packMXFP4, mxfp4Packed16VNNI},
	{quant.Q4_0, packQ40, q40Packed16VNNI}, {quant.IQ4_NL, packQ40, iq4nlPacked16VNNI}}

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
// multiplies their packed copies, where the row kernels run (VNNI), and
// its Q4_K ones on AVX2 without VNNI (packQ4K8): not the token embedding
// table unless it is also the classifier (lookups read rows), nor what
// the pooler reads.
func repack(m *model.Model, kn *kernels) error {
	want := func(w *model.Matrix) bool {
		return w.Rows >= 16 && (w != m.Embed || w == m.Output) && w != m.PosEmbd && !slices.Contains(m.Dense, w)
	}
	switch {
	case !kn.int8 || !kn.simd:
	case kn.vnni:
		for _, f := range packedFormats {
			if err := m.Repack(f.t, layoutRows16, want, packGroups(16, f.t, f.pack)); err != nil {
				return err
			}
		}
	default:
		// The AVX2 row kernels; their prompts take them too (promptInt8),
		// so the file's layout is not read again.
		for i, f := range rows8Formats {
			if kn.rows8Format(f.t) != i {
				continue
			}
			if err := m.Repack(f.t, layoutRows8, want, packGroups(8, f.t, f.pack)); err != nil {
				return err
			}
		}
		// Q4_0 and Q8_0 in the VNNI kernels' groups (q40Rows8AVX2,
		// q80Rows8AVX2 and q80Rows8AVXVNNI take halves); Q8_0 without its
		// bias where no VPDPBUSD reads it.
		if err := m.Repack(quant.Q4_0, layoutRows16, want, packGroups(16, quant.Q4_0, packQ40)); err != nil {
			return err
		}
		if !kn.avxvnni {
			return m.Repack(quant.Q8_0, layoutRows16Signed, want, packGroups(16, quant.Q8_0, packQ80S))
		}
		return m.Repack(quant.Q8_0, layoutRows16, want, packGroups(16, quant.Q8_0, packQ80))
	}
	return nil
}

// The layouts' names for Model.Repack: packRows' sixteen-row groups (Q8_0
// with packQ80's bias), the same without it (packQ80S), and the AVX2
// kernels' eight-row groups (rows8Formats).
const (
	layoutRows16       = "rows16"
	layoutRows16Signed = "rows16-signed"
	layoutRows8        = "rows8"
)

// packGroups is a Repack packer: pack (group g of rows rb bytes wide) over
// a matrix's whole groups of size rows, the rows after them copied as
// they are.
func packGroups(size int, t quant.DType, pack func(dst, src []byte, rb, g int)) func(dst []byte, w *model.Matrix) {
	return func(dst []byte, w *model.Matrix) {
		rb, whole := t.RowBytes(w.Cols), w.Rows/size*size
		// The groups split over the CPUs: a large model's packing is
		// seconds of work.
		var wg sync.WaitGroup
		n := max(1, runtime.GOMAXPROCS(0))
		for s := range n {
			wg.Go(func() {
				for g := s * (whole / size) / n; g < (s+1)*(whole/size)/n; g++ {
					pack(dst[g*size*rb:(g+1)*size*rb], w.Data, rb, g)
				}
			})
		}
		copy(dst[whole*rb:], w.Data[whole*rb:])
		wg.Wait()
	}
}
