// Package testlog holds what tests need to read output that other
// goroutines write: loggers, watch loops, guests.
package testlog

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer that one goroutine may write (an hclog sink,
// a command's output) while the test reads it.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
