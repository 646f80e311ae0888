// Package specialfiles makes the hostile inputs the bounded-reading tests
// of several packages share (a FIFO nobody writes to, a sparse file past a
// size limit) and runs a load that must neither block nor read forever.
// Test code only.
package specialfiles

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// FIFO makes a named pipe in dir that no process writes to.
func FIFO(tb testing.TB, dir, name string) string {
	tb.Helper()
	p := filepath.Join(dir, name)
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		tb.Fatal(err)
	}
	return p
}

// Sparse makes a file of size bytes that takes no disk blocks: the size is
// what a bounded reader must refuse, not the content.
func Sparse(tb testing.TB, dir, name string, size int64) string {
	tb.Helper()
	p := filepath.Join(dir, name)
	f, err := os.Create(p)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		tb.Fatal(err)
	}
	return p
}

// Load runs load and returns its error, failing the test if it has not
// returned within limit (the class of fault: a read that blocks or never
// ends).
func Load(tb testing.TB, limit time.Duration, what string, load func() error) error {
	tb.Helper()
	done := make(chan error, 1)
	go func() { done <- load() }()
	select {
	case err := <-done:
		return err
	case <-time.After(limit):
		tb.Fatalf("%s blocked for %v", what, limit)
		return nil
	}
}
