package cpu

import (
	"fmt"

	"github.com/batchd/batchd/backend"
)

var _ backend.BlockStore = (*Backend)(nil)

// blockElems is one layer's K (or V) elements in one block.
func (b *Backend) blockElems() int { return b.kvBlock }

// table is the block table share s's layer l addresses: its group's.
func (b *Backend) table(s *backend.SeqInput, l int) []int {
	if g := b.lay.Group[l]; g > 0 {
		return s.Window[g-1]
	}
	return s.Blocks
}

// BlockBytes is one block's K and V over its group's layers, as stored.
func (b *Backend) BlockBytes() int {
	n := b.lay.Slots * b.blockElems()
	return b.kv.K.RowBytes(n) + b.kv.V.RowBytes(n)
}

// ReadBlock copies block id's K and V, slot by slot (K then V), to dst.
func (b *Backend) ReadBlock(id int, dst []byte) { b.blockIO(id, dst, false) }

// WriteBlock stores src, as ReadBlock wrote it, into block id.
func (b *Backend) WriteBlock(id int, src []byte) { b.blockIO(id, src, true) }

func (b *Backend) blockIO(id int, buf []byte, write bool) {
	n, off := b.blockElems(), b.kvAt(id, 0, 0)
	pos := 0
	for j := range b.lay.Slots {
		for _, s := range []kvLayer{b.slotK[j], b.slotV[j]} {
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

// checkTables refuses a share whose block tables do not cover positions
// up to end, or name blocks outside the store: each window table must
// hold every block the share's sliding layers write or read.
func (b *Backend) checkTables(s *backend.SeqInput, i, end int) error {
	need := (end + b.blockSize - 1) / b.blockSize
	if len(s.Blocks) < need {
		return fmt.Errorf("%w: sequence %d has %d blocks for %d tokens", backend.ErrBadBatch, i, len(s.Blocks), end)
	}
	for _, id := range s.Blocks {
		if id < 0 || id >= b.numBlocks {
			return fmt.Errorf("%w: sequence %d block %d outside the pool of %d", backend.ErrBadBatch, i, id, b.numBlocks)
		}
	}
	if len(s.Window) != b.lay.Tables {
		return fmt.Errorf("%w: sequence %d has %d window tables, the layout %d", backend.ErrBadBatch, i, len(s.Window), b.lay.Tables)
	}
	first := max(0, s.Pos-b.c.SlidingWindow+1) / b.blockSize // the oldest block the share's first query sees
	for g, tab := range s.Window {
		if len(tab) < need {
			return fmt.Errorf("%w: sequence %d has %d blocks in window table %d for %d tokens", backend.ErrBadBatch, i, len(tab), g, end)
		}
		for j, id := range tab[:need] {
			if id >= b.numBlocks || id < 0 && (id != -1 || j >= first) {
				return fmt.Errorf("%w: sequence %d window table %d block %d is %d (pool of %d, first seen %d)",
					backend.ErrBadBatch, i, g, j, id, b.numBlocks, first)
			}
		}
	}
	return nil
}
