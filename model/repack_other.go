//go:build !linux

package model

func adviseHuge([]byte) {}
