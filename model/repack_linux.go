package model

import "golang.org/x/sys/unix"

// adviseHuge asks for transparent huge pages: a decode step streams every
// repacked matrix, and 4 KiB pages would cost a TLB miss every 4 KiB.
func adviseHuge(mem []byte) { _ = unix.Madvise(mem, unix.MADV_HUGEPAGE) }
