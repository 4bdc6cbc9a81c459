//go:build !linux

package cpu

func adviseHugePages([]byte) {}
