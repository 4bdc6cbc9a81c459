// Package kvcache is the paged KV block pool: pure bookkeeping, no tensors.
//
// It owns a fixed set of blocks (each holding BlockSize token slots), their
// reference counts, an O(1) LRU free list, per-sequence block tables and the
// prefix-cache index that maps a chained block hash to the block holding
// those tokens. The engine asks it which blocks of a prompt are already
// computed, to allocate slots for more tokens, to publish full blocks for
// reuse, and to free a sequence; the model backend reads and writes K/V in
// its own memory at the block ids handed out here.
//
// Invariants kept after every call:
//   - free + used + cached == total, where used blocks have ref > 0, cached
//     blocks are unreferenced but still indexed by hash, and free blocks are
//     unreferenced and unindexed;
//   - a block is on the free list exactly when its ref count is zero;
//   - a hash maps to at most one block and a block's hash never changes
//     while it is indexed (write-once); it is dropped only on eviction.
//   - with events recorded (RecordEvents), the hashes told by Stored and not
//     withdrawn by Removed are exactly the indexed blocks of the shared
//     chain that were committed with their tokens (Told): a subscriber that
//     applies every event holds what the cache can serve.
//
// A Pool is not safe for concurrent use: the engine's step loop owns it.
package kvcache
