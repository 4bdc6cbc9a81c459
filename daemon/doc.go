// Package daemon is batchd's lifecycle and command line: it loads the model,
// sizes and starts the engine, and runs the in-process tools (generate).
//
// It wires components explicitly (OpenEngine) and closes them in reverse
// start order; nothing here runs at package init.
package daemon
