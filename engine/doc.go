// Package engine runs requests through a paged continuous-batching loop.
//
// One goroutine (Engine.Run) owns the scheduler, the KV block pool and the
// backend. Each step the Scheduler, a synchronous state machine, spends a
// token budget over running sequences first (decodes and prompt chunks) and
// then admits waiting ones; when KV blocks run out it preempts the least
// urgent running sequence and recomputes it later. The backend runs one
// forward pass over the step; each sequence samples with its own seeded
// sampler, so batching never changes a request's tokens.
//
// Invariants kept:
//   - every accepted request ends with exactly one terminal event;
//   - at every step boundary KV blocks are conserved (free + used + cached ==
//     total) and a finished, cancelled or preempted sequence holds none;
//   - greedy tokens are the same alone, batched, chunked, preempted and resumed,
//     or served from the prefix cache;
//   - the loop never blocks on a reader: Streams buffer and merge deltas.
//
// The engine knows nothing of sockets; errors wrap the category sentinels
// (ErrInvalidArgument, ErrNotFound, ErrResourceExhausted, ErrUnavailable,
// ErrInternal) for the ipc layer to map.
package engine
