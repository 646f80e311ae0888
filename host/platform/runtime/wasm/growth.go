package wasm

import (
	"github.com/tetratelabs/wazero/experimental"
)

// growthMemory backs an instance's linear memory (wazero's experimental
// allocator hook) so that growing it is the host's time, not the
// guest's: while the Go heap allocates the larger buffer and copies the
// old contents into it, the call's deadline is held (deadline.hold).
//
// Why: a guest that grows from 128 to 256 MiB in a policy call makes the
// host allocate and copy that much under the Go garbage collector's mark
// assists, which on a loaded machine took seconds and cost a 1 s policy
// call its answer (the eviction bundle at 15 000 nodes). The
// guest asked for the memory, but how long the host takes to provide it
// depends on the host's heap and load, not on the guest's code.
//
// Capacity doubles (up to the maximum) so that a guest growing page by
// page is not copied at every step; fresh capacity is never written, so
// reslicing into it yields zeroed pages as Wasm requires.
type growthMemory struct {
	buf   []byte
	max   uint64
	guard *deadline
}

// newGrowthAllocator returns the allocator for one instance, holding
// guard's deadline while memory grows.
func newGrowthAllocator(guard *deadline) experimental.MemoryAllocator {
	return experimental.MemoryAllocatorFunc(func(capBytes, maxBytes uint64) experimental.LinearMemory {
		return &growthMemory{buf: make([]byte, 0, min(capBytes, maxBytes)), max: maxBytes, guard: guard}
	})
}

// Reallocate implements experimental.LinearMemory: the buffer is size
// bytes long afterwards, or nil past the maximum.
func (m *growthMemory) Reallocate(size uint64) []byte {
	if size > m.max {
		return nil
	}
	if size <= uint64(cap(m.buf)) {
		m.buf = m.buf[:size]
		return m.buf
	}
	m.guard.hold()
	defer m.guard.resume()
	next := min(max(size, 2*uint64(cap(m.buf))), m.max)
	buf := make([]byte, size, next)
	copy(buf, m.buf)
	m.buf = buf
	return m.buf
}

// Free implements experimental.LinearMemory; the garbage collector
// reclaims the buffer once wazero drops it.
func (m *growthMemory) Free() { m.buf = nil }
