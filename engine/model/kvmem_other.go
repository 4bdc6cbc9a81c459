//go:build !linux

package model

func adviseHugePages([]byte) {}
