package sample

import "golang.org/x/sys/cpu"

// haveAVX2 gates the vector Argmax.
var haveAVX2 = cpu.X86.HasAVX2

// maxF32AVX2 returns the largest of x[:n] (n a positive multiple of 32), skipping NaNs.
//
//go:noescape
func maxF32AVX2(x *float32, n int) float32

// indexF32AVX2 returns the first i < n with x[i] == v, or -1 (n a multiple of 8).
//
//go:noescape
func indexF32AVX2(x *float32, n int, v float32) int
