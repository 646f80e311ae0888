package backendtest

import (
	"context"
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/wasmsched/wasmsched/host/platform/guest"
	"github.com/wasmsched/wasmsched/host/platform/runtime/wasm"
)

var limitCases = []wasmCase{
	{"limits/memory.grow reaches the cap and no further", memoryGrowStopsAtTheCap},
	{"limits/memory.grow past the cap in one step returns -1", memoryGrowHuge},
	{"limits/initial memory over the cap is refused", refusedAtCompileOrLoad("bigmem", "memory")},
	{"limits/table.grow stops at the cap", tableGrowthIsCapped},
	{"limits/a table declared over the cap is refused", refusedAtCompileOrLoad("bigtable", "table")},
}

// capBytes is the memory cap of the memory cases: 16 pages.
const capBytes = 1 << 20

func memoryGrowStopsAtTheCap(t *testing.T, s *suite) {
	inst, _ := s.instance(t, "traps", wasm.Limits{MemoryBytes: capBytes, CallTimeout: 10 * time.Second})
	reply, err := call(inst, trapsGrowByOne, 0)
	if err != nil {
		t.Fatalf("growing memory page by page: %v (a failed memory.grow returns -1, it does not trap)", err)
	}
	if len(reply) != 4 {
		t.Fatalf("reply of %d bytes, want the u32 page count", len(reply))
	}
	if got, want := binary.LittleEndian.Uint32(reply), uint32(capBytes/(64<<10)); got != want {
		t.Errorf("memory grew to %d pages, want exactly the cap's %d", got, want)
	}
}

func memoryGrowHuge(t *testing.T, s *suite) {
	inst, _ := s.instance(t, "traps", wasm.Limits{MemoryBytes: capBytes, CallTimeout: 10 * time.Second})
	var reply []byte
	var err error
	alloc := allocatedDuring(func() { reply, err = call(inst, trapsGrowHuge, 0) })
	if err != nil {
		t.Fatalf("memory.grow by 65535 pages: %v (want -1, not a trap)", err)
	}
	if len(reply) != 4 || int32(binary.LittleEndian.Uint32(reply)) != -1 {
		t.Errorf("memory.grow by 65535 pages returned %x, want -1", reply)
	}
	if alloc > 16<<20 {
		t.Errorf("the host allocated %d MiB for a memory.grow it refused", alloc>>20)
	}
	// Not a trap: the instance goes on.
	if _, err := call(inst, 0, 0); err != nil {
		t.Errorf("the instance failed after a refused memory.grow: %v", err)
	}
}

// refusedAtCompileOrLoad returns a case checking that the test guest is
// refused, by Compile or else by Load, in an error naming the module and
// saying what.
func refusedAtCompileOrLoad(name, what string) func(t *testing.T, s *suite) {
	return func(t *testing.T, s *suite) {
		b, _, err := s.tryCompile(t, name, Guest(t, name), wasm.Limits{MemoryBytes: capBytes})
		if err == nil {
			var m *guest.Pool
			m, err = guest.Load(context.Background(), b, guest.PoolConfig{Name: name})
			if err == nil {
				m.Close(context.Background())
				t.Fatalf("%s compiled and loaded; want it refused for its %s", name, what)
			}
		}
		wantWords(t, err, `module "`+name+`"`)
		if !strings.Contains(strings.ToLower(err.Error()), what) {
			t.Errorf("err = %q: does not say %q", err, what)
		}
	}
}

func tableGrowthIsCapped(t *testing.T, s *suite) {
	inst, _ := s.instance(t, "hostile", wasm.Limits{CallTimeout: 10 * time.Second})
	var reply []byte
	var err error
	alloc := allocatedDuring(func() { reply, err = call(inst, hostileTable, 0) })
	if err != nil {
		t.Fatalf("table.grow past the cap: %v (a failed table.grow returns -1, it does not trap)", err)
	}
	// The guest returns its table's size as the reply's length.
	if len(reply) > wasm.MaxTableElements {
		t.Errorf("the table grew to %d elements, want at most %d", len(reply), wasm.MaxTableElements)
	}
	if alloc > 16<<20 {
		t.Errorf("the host allocated %d MiB for table.grow, want under 16", alloc>>20)
	}
}
