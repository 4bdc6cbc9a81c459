// Package grammar constrains generation to a formal language: grammars in
// llama.cpp's GBNF syntax, JSON Schemas turned into GBNF as llama.cpp's
// json-schema-to-grammar turns them, and the per-sequence matcher that
// says which tokens may come next.
//
// A Grammar is immutable and shared by every request that uses it (the
// engine caches compiled grammars by their text). Its states are the sets
// of parse stacks llama.cpp keeps, interned: a state, and each transition
// out of it, is computed once per grammar, so the same schema on many
// requests pays for each state once. A Matcher is one sequence's position:
// a state plus the bytes of a character a token left unfinished.
//
// Which tokens a state allows comes from walking the vocabulary's byte trie
// (Vocab) against the state, never from testing every token one by one; a
// step first checks the token the sampler wanted, and builds the full mask
// only when the grammar rejects it. What a grammar may cost is bounded:
// rules and symbols at compile time, stacks per state and states per
// grammar at run time (ErrTooComplex).
//
// This package imports nothing of batchd's: the engine gives it the
// vocabulary as token byte strings.
package grammar
