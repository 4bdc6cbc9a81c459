// Package models keeps the daemon's models: which exist (a models
// directory and configured entries, names and aliases), which are loaded,
// and when to load and unload them. It is bookkeeping only: loading a file
// is the caller's Loader, so the package knows no engine or tensor.
//
// Invariants: a model loads at most once at a time (concurrent first
// requests share the load); a model with a lease (a request in flight) is
// never unloaded; the loaded models' bytes never exceed the memory budget
// and their number never exceeds MaxLoaded, the least recently used idle
// model giving way first; every lease is released exactly once.
package models
