package cpu

import "github.com/batchd/batchd/quant"

// f16Table is quant's half-to-float table, indexed in the F16 loops here.
var f16Table = quant.F16Table()
