//go:build !amd64

package sample

var haveAVX2 = false

func maxF32AVX2(x *float32, n int) float32          { panic("no simd") }
func indexF32AVX2(x *float32, n int, v float32) int { panic("no simd") }
