// Package sched is the engine's scheduler: a synchronous state machine,
// owned by the engine's loop goroutine, that decides each step which
// sequences run and how many of their tokens each computes, over a
// kvcache.Pool it allocates from and frees to.
//
// It owns the waiting and running sets, the policies that order them
// (fcfs, priority, slo), the batching modes (continuous; static and dynamic
// as request-level baselines), step groups (Config.OwnSteps), drafted
// tokens' places (Sequence.Draft) and the adaptive controller that moves
// the limits. It never sees tensors, requests or a clock: each call brings
// its time and the step's Limits, so its tests are pure logic on a small
// pool.
//
// Invariants: a sequence is in at most one of waiting and running; every
// block a sequence holds is freed when it is preempted, removed or
// expires; a draft is scheduled only into blocks that are free.
package sched
