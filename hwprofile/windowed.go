package hwprofile

// With window groups a block holds one layer group, and a sequence of n
// tokens holds its main blocks and, for the positions its queries see,
// KVWindowTables blocks more a block: both draw on the one pool, so the
// planner fixes no split and only counts what a sequence takes.

// seqBlocks is the blocks a sequence of n tokens holds as it decodes: its
// main blocks and its window's (the blocks its window reaches and the one
// it writes into).
func (p *Plan) seqBlocks(n int) int {
	b := p.blocksFor(n)
	if p.KVWindowTables > 0 {
		b += p.KVWindowTables * min(p.blocksFor(n), p.blocksFor(p.SlidingWindow)+1)
	}
	return b
}

// longest is the most tokens one sequence can hold: the pool less the
// window blocks it holds beside its main ones while a step's chunk runs
// (never more window blocks than main ones a group).
func (p *Plan) longest() int {
	return longestSeq(p.KVBlocks, p.KVWindowTables, p.blocksFor(p.SlidingWindow+p.MaxNumBatchedTokens)+1) * p.BlockSize
}

// longestSeq is the most main blocks one sequence can hold in a pool of
// blocks, where it holds up to win window blocks in each of tables groups
// (none more than its main blocks; engine.seqBlocks counts alike).
func longestSeq(blocks, tables, win int) int {
	if blocks <= (1+tables)*win {
		return blocks / (1 + tables)
	}
	return blocks - tables*win
}

func (p *Plan) blocksFor(n int) int { return (n + p.BlockSize - 1) / p.BlockSize }
