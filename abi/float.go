package abi

import "unsafe"

// float64bits and float64frombits avoid importing math for two functions.
func float64bits(f float64) uint64     { return *(*uint64)(unsafe.Pointer(&f)) }
func float64frombits(b uint64) float64 { return *(*float64)(unsafe.Pointer(&b)) }
