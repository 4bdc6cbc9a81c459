package cpu

import "golang.org/x/sys/unix"

func adviseHugePages(mem []byte) { _ = unix.Madvise(mem, unix.MADV_HUGEPAGE) }
