// Package archcheck holds only tests: the import rules that keep the
// packages' layering (docs/ARCHITECTURE.md) and the size limits on product
// code (files under 600 lines, functions under 80; assembly, tests and the
// testing/ harnesses aside).
package archcheck
