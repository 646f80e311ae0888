//go:build wasmtime

package wasmtime_test

import (
	"fmt"
	"os"
	"testing"
)

// sharedCacheDir is the compilation cache of the tests' runtimes: each
// test makes its own runtime, but a guest's Go build, slow to compile, is
// compiled once.
var sharedCacheDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "wasmsched-wasmtime-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sharedCacheDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
