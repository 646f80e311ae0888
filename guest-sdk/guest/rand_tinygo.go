//go:build tinygo.wasm

package guest

import "unsafe"

// TinyGo's runtime seeds its map hashing at start-up with two calls to
// arc4random, which it expects from wasi-libc. wasi-libc's arc4random
// (one object file with arc4random_buf and arc4random_uniform) asserts,
// and its assert links fprintf and the rest of stdio: about 17 KB, a quarter
// of a small module. These definitions replace that object file, all three
// symbols of it so that it is never linked (crypto/rand, for one, calls
// arc4random_buf), and ask the host for the bytes directly. //export also
// makes them module exports, which the host ignores.

//go:wasmimport wasi_snapshot_preview1 random_get
func wasiRandomGet(buf unsafe.Pointer, size uint32) uint32

//export arc4random_buf
func arc4randomBuf(buf unsafe.Pointer, size uint) {
	if size > 0 && wasiRandomGet(buf, uint32(size)) != 0 {
		panic("wasmsched guest: random_get failed")
	}
}

//export arc4random
func arc4random() uint32 {
	var v uint32
	arc4randomBuf(unsafe.Pointer(&v), 4)
	return v
}

//export arc4random_uniform
func arc4randomUniform(upper uint32) uint32 {
	if upper < 2 {
		return 0
	}
	// Reject the values below 2^32 mod upper, so every residue is as likely.
	floor := -upper % upper
	for {
		if v := arc4random(); v >= floor {
			return v % upper
		}
	}
}
