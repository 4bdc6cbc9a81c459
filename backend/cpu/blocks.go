package cpu

import (
	"github.com/batchd/batchd/backend"
)

var _ backend.BlockStore = (*Backend)(nil)

// blockElems is one layer's K (or V) elements in one block.
func (b *Backend) blockElems() int { return b.c.KVHeads * b.blockSize * b.c.HeadDim }

// BlockBytes is one block's K and V over every layer, as stored.
func (b *Backend) BlockBytes() int {
	n := b.blockElems()
	return b.c.AttnLayers() * (b.kv.K.RowBytes(n) + b.kv.V.RowBytes(n))
}

// ReadBlock copies block id's K and V (layer by layer, K then V) to dst.
func (b *Backend) ReadBlock(id int, dst []byte) { b.blockIO(id, dst, false) }

// WriteBlock stores src, as ReadBlock wrote it, into block id.
func (b *Backend) WriteBlock(id int, src []byte) { b.blockIO(id, src, true) }

func (b *Backend) blockIO(id int, buf []byte, write bool) {
	n, off := b.blockElems(), b.kvAt(id, 0, 0)
	pos := 0
	for l := range b.c.Layers {
		if b.c.Recurrent.Layer(l) {
			continue
		}
		for _, s := range []kvLayer{b.k[l], b.v[l]} {
			mem := s.bytes(off, n)
			if write {
				copy(mem, buf[pos:pos+len(mem)])
			} else {
				copy(buf[pos:pos+len(mem)], mem)
			}
			pos += len(mem)
		}
	}
}
