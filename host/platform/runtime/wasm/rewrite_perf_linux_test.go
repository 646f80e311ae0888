package wasm_test

import (
	"context"
	"os"
	"runtime"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/wasmsched/wasmsched/host/internal/fixtures"
	"github.com/wasmsched/wasmsched/host/platform/guest"
	"github.com/wasmsched/wasmsched/host/platform/runtime/wasm"
	"github.com/wasmsched/wasmsched/internal/testwasm"
)

// TestRewritePerfInterleaved (skipped unless WASMSCHED_REWRITE_ROUNDS is
// set) measures what a rewrite of the modules costs or saves on wazero:
// the default bundle compiled with the fill helper (fills.go) and
// without, each round running on both, in alternating order, a cold
// start (instantiate, init and a full sync of 5000 nodes and 10 000
// pods, what replacing an instance costs) and a scheduling pass of the
// whole set over every node. It reports the median over rounds of the
// CPU time of the calling thread (guest code runs on it), which moves
// less with other load on a shared machine than wall time:
//
//	WASMSCHED_REWRITE_ROUNDS=15 go test -run RewritePerfInterleaved -v ./host/platform/runtime/wasm/
func TestRewritePerfInterleaved(t *testing.T) {
	rounds, _ := strconv.Atoi(os.Getenv("WASMSCHED_REWRITE_ROUNDS"))
	if rounds <= 0 {
		t.Skip("set WASMSCHED_REWRITE_ROUNDS to run")
	}
	ctx := context.Background()
	rt, err := wasm.NewRuntime("", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	bin := testwasm.TinyGoBytes(t, testwasm.Default)
	type variant struct {
		name       string
		be         guest.Backend
		sync, pass []float64
	}
	var vs []*variant
	for _, on := range []bool{false, true} {
		wasm.SetFillHelper(on)
		be, err := rt.Compile(ctx, "default-"+strconv.FormatBool(on), bin, wasm.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		defer be.Close(ctx)
		vs = append(vs, &variant{name: map[bool]string{false: "memory.fill", true: "fill helper"}[on], be: be})
	}
	wasm.SetFillHelper(true)
	snap := fixtures.Cluster(5000, 10000)
	all := fixtures.Slots(snap)
	pod := fixtures.Pod("bench", 0)
	feasible := make([]uint32, 0, len(all))
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for round := 0; round < rounds; round++ {
		for i := range vs {
			v := vs[(i+round)%len(vs)]
			t0 := threadCPU()
			m, err := guest.Load(ctx, v.be, guest.PoolConfig{Name: v.name, PoolSize: 1})
			if err != nil {
				t.Fatal(err)
			}
			c, err := m.Get(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Sync(ctx, snap); err != nil {
				t.Fatal(err)
			}
			t1 := threadCPU()
			var plugins []int
			for p := range m.Manifest().Plugins {
				plugins = append(plugins, p)
			}
			const passes = 5
			for k := 0; k < passes; k++ {
				if n, err := fixtures.Pass(ctx, c, plugins, &pod, all, feasible); err != nil || n == 0 {
					t.Fatal(n, err)
				}
			}
			t2 := threadCPU()
			m.Put(ctx, c)
			m.Close(ctx)
			v.sync = append(v.sync, float64(t1-t0)/1e6)
			v.pass = append(v.pass, float64(t2-t1)/float64(passes*len(all)))
		}
	}
	median := func(x []float64) float64 {
		x = slices.Clone(x)
		slices.Sort(x)
		return x[len(x)/2]
	}
	for _, v := range vs {
		t.Logf("%-12s cold start + full sync: median %6.1f ms CPU (min %6.1f); pass: median %6.1f ns/node CPU (min %6.1f)",
			v.name, median(v.sync), slices.Min(v.sync), median(v.pass), slices.Min(v.pass))
	}
}

// threadCPU is the CPU time of the calling OS thread, to the nanosecond.
func threadCPU() time.Duration {
	var ts syscall.Timespec
	const clockThreadCPUTime = 3 // CLOCK_THREAD_CPUTIME_ID
	if _, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		return 0
	}
	return time.Duration(ts.Nano())
}
