// Package sample chooses the next token from logits: greedy Argmax (lowest
// id on a tie), temperature, top-k, top-p, min-p and the repetition penalty,
// with a per-sequence seeded RNG so a draw never depends on the batch.
//
// Invariants kept: Params outside their documented ranges are rejected by
// Validate, never clamped; the same seed, logits and history give the same token.
package sample
