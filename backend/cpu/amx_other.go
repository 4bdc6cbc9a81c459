//go:build !linux || !amd64 || purego

package cpu

import (
	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/quant"
)

const haveAMX = false

func amxKernel(quant.DType, bool) rows16Kernel { return nil }

func (kn *kernels) matmulKAMX(out []float32, a *acts, n int, w *model.Matrix, lo, hi, whole int) {
	panic("no AMX")
}

type amxKRoute struct{}

func amxKFormat(quant.DType) (amxKRoute, bool) { return amxKRoute{}, false }

func amxNibbles(quant.DType) func(dst, src []byte, nb int) { return nil }

func amxScratch(int) ([]byte, func()) { return nil, func() {} }
