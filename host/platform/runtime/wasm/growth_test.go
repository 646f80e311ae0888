package wasm

import (
	"bytes"
	"testing"
	"time"

	"github.com/tetratelabs/wazero/api"
)

// testFlag stands in for an instance's interrupt global.
type testFlag struct {
	api.MutableGlobal // never called: only Get and Set are
	v                 uint64
}

func (f *testFlag) Get() uint64  { return f.v }
func (f *testFlag) Set(v uint64) { f.v = v }

func newTestDeadline() (*deadline, *testFlag) {
	f := &testFlag{}
	return &deadline{flag: f}, f
}

// While held, a deadline's time does not run and a timer firing is
// ignored; resumed, it has the time it had left.
func TestHeldDeadlineDoesNotRunOut(t *testing.T) {
	d, flag := newTestDeadline()
	d.arm(time.Hour)
	d.hold()
	if d.left <= 59*time.Minute || d.left > time.Hour {
		t.Fatalf("held with %v left, want just under an hour", d.left)
	}
	d.fire() // the timer, had it not been stopped
	if flag.v != interruptNone || d.expired.Load() {
		t.Fatalf("a held deadline fired: flag %d", flag.v)
	}
	before := time.Now()
	d.resume()
	if got := d.due.Sub(before); got < 59*time.Minute {
		t.Fatalf("resumed deadline due in %v, want the hour it had left", got)
	}
	if d.disarm() {
		t.Fatal("disarm reports a deadline that never fired")
	}
}

// A deadline whose time had run out when it was held fires as soon as
// it resumes, and one that fired before the hold stays fired.
func TestHeldDeadlineThatRanOutFiresOnResume(t *testing.T) {
	d, flag := newTestDeadline()
	d.arm(time.Hour)
	d.hold()
	d.left = 0 // the time was up when the host took over
	d.resume()
	if flag.v != interruptDeadline || !d.expired.Load() {
		t.Fatalf("flag %d after resuming a deadline with no time left, want %d", flag.v, interruptDeadline)
	}
	if !d.disarm() {
		t.Fatal("disarm does not report the deadline that fired")
	}

	d.arm(time.Hour)
	d.fire()
	d.hold()
	d.resume()
	if !d.disarm() {
		t.Fatal("a deadline that fired before a hold was forgotten")
	}
}

// Growing past the buffer's capacity holds the call's deadline for the
// allocation and copy; growing within it does not need to. The
// deadline is made due before the grow: only a hold and resume around
// the allocation can make it fire (its timer is an hour away).
func TestMemoryGrowthHoldsTheDeadline(t *testing.T) {
	d, flag := newTestDeadline()
	mem := newGrowthAllocator(d).Allocate(0, 64<<20)
	buf := mem.Reallocate(wasmPageSize)
	copy(buf, "guest data")

	d.arm(time.Hour)
	d.due = time.Now().Add(-time.Millisecond)
	buf = mem.Reallocate(4 * wasmPageSize)
	if flag.v != interruptDeadline {
		t.Fatal("growing past the capacity did not hold and resume the deadline")
	}
	d.disarm()
	if len(buf) != 4*wasmPageSize || !bytes.HasPrefix(buf, []byte("guest data")) {
		t.Fatalf("grown buffer: %d bytes, prefix %q", len(buf), buf[:10])
	}
	if !bytes.Equal(buf[wasmPageSize:], make([]byte, 3*wasmPageSize)) {
		t.Fatal("grown pages are not zero")
	}

	buf = mem.Reallocate(5 * wasmPageSize)
	if c := cap(buf); c != 8*wasmPageSize {
		t.Fatalf("capacity %d after growing to 5 pages from 4, want doubling to 8 pages", c)
	}
	d.arm(time.Hour)
	d.due = time.Now().Add(-time.Millisecond)
	buf = mem.Reallocate(6 * wasmPageSize) // within the doubled capacity
	if d.disarm() {
		t.Fatal("growing within the capacity held the deadline")
	}
	if len(buf) != 6*wasmPageSize || !bytes.Equal(buf[wasmPageSize:], make([]byte, 5*wasmPageSize)) {
		t.Fatal("pages within the capacity are not zero")
	}
	if mem.Reallocate(64<<20+wasmPageSize) != nil {
		t.Fatal("growing past the maximum succeeded")
	}
	mem.Free()
}
