package guest_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/metrics"
	"github.com/wasmsched/wasmsched/host/platform/guest"
	"github.com/wasmsched/wasmsched/internal/testmetrics"
)

// growFake is a module whose instances report a linear memory of 16 MiB,
// or what the test sets on the last one made, under a 64 MiB limit.
// growFake makes instances of 16 MiB whose memory limit is limit (64 MiB
// when 0).
type growFake struct {
	last  *growInstance
	limit uint64
}

func (f *growFake) NewInstance(context.Context) (guest.Instance, error) {
	f.last = &growInstance{size: 16 << 20, limit: f.limit}
	return f.last, nil
}
func (f *growFake) Close(context.Context) error { return nil }

type growInstance struct {
	in          []byte
	size, limit uint64
}

func (i *growInstance) MemoryBytes() (size, limit uint64) {
	if i.limit == 0 {
		return i.size, 64 << 20
	}
	return i.size, i.limit
}

func (i *growInstance) ABIVersion(context.Context) (uint32, error) {
	return abi.PackVersion(abi.VersionMajor, abi.VersionMinor), nil
}

func (i *growInstance) Input(_ context.Context, n int) ([]byte, error) {
	if n > len(i.in) {
		i.in = make([]byte, n)
	}
	return i.in[:n], nil
}

func (i *growInstance) Call(_ context.Context, fn abi.Func, _ uint32, _ int) ([]byte, error) {
	e := abi.Encoder{}
	e.U8(abi.ReplyOK)
	if fn == abi.FuncManifest {
		e.Manifest(&abi.Manifest{VersionMajor: abi.VersionMajor, VersionMinor: abi.VersionMinor,
			Plugins: []abi.PluginInfo{{Name: "F", Points: abi.PointFilter}}})
	}
	return e.B, nil
}

func (i *growInstance) Close(context.Context) error { return nil }

// TestPutKeepsACollectingGuestThatGrew: an instance whose memory doubled
// past half its limit after it was first returned is replaced when its
// guest may never free (a leaking TinyGo build would trap at its next
// doubling), and kept when the module is known to collect its garbage
// (guest.PoolConfig.Collects: a collector's heap doubles once more when its
// first sync filled it, and replacing it would resync and double again,
// round after round).
func TestPutKeepsACollectingGuestThatGrew(t *testing.T) {
	for _, collects := range []bool{false, true} {
		ctx := context.Background()
		f := &growFake{}
		m, err := guest.Load(ctx, f, guest.PoolConfig{Name: "grow", PoolSize: 1, Collects: collects})
		if err != nil {
			t.Fatal(err)
		}
		c, err := m.Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		m.Put(ctx, c) // first return: 16 MiB
		for _, size := range []uint64{32 << 20, 64 << 20} {
			c, err := m.Get(ctx)
			if err != nil {
				t.Fatal(err)
			}
			f.last.size = size
			m.Put(ctx, c)
		}
		want := int64(1) // replaced at 64 MiB: more than half the limit
		if collects {
			want = 0
		}
		if got := m.Recycled(); got != want {
			t.Errorf("Collects %v: %d instances replaced for growing, want %d", collects, got, want)
		}
		m.Close(ctx)
	}
}

// TestPutReplacesALeakingGuestAtItsSecondDoublingAfterTheMirror bounds
// a guest without a collector by its mirror rather than its limit: an
// instance that grows after more than quickGrowth returns keeps one
// doubling past its mark (16 → 32 MiB) and is replaced at the second
// (any growth past twice the mark), while one that doubles within its
// first returns (its mirror filled the memory it had) keeps the new size
// as its mark and is replaced only past twice that. The limit is 256 MiB,
// so half of it is never the reason here.
func TestPutReplacesALeakingGuestAtItsSecondDoublingAfterTheMirror(t *testing.T) {
	ctx := context.Background()
	cycle := func(m *guest.Pool, f *growFake, size uint64) {
		t.Helper()
		c, err := m.Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if size != 0 {
			f.last.size = size
		}
		m.Put(ctx, c)
	}
	for _, tc := range []struct {
		name    string
		earlyAt int    // return (after the first) at which memory doubles to 32 MiB
		then    uint64 // the next growth
		want    int64  // replaced after it
	}{
		// 100 × 16 MiB, then 32 MiB (kept: one doubling), then 33 MiB
		// (past twice the 16 MiB mark: replaced)
		{name: "grows late", earlyAt: 100, then: 33 << 20, want: 1},
		// doubles on the 3rd return: the mark moves to 32 MiB, so 64 MiB
		// is kept, and 65 MiB is past twice the mark
		{name: "grows early", earlyAt: 3, then: 64 << 20, want: 0},
		{name: "grows early, then twice its mark", earlyAt: 3, then: 65 << 20, want: 1},
	} {
		f := &growFake{limit: 256 << 20}
		m, err := guest.Load(ctx, f, guest.PoolConfig{Name: "grow", PoolSize: 1})
		if err != nil {
			t.Fatal(err)
		}
		cycle(m, f, 0) // first return: 16 MiB
		for i := 1; i < tc.earlyAt; i++ {
			cycle(m, f, 0)
		}
		cycle(m, f, 32<<20)
		if got := m.Recycled(); got != 0 {
			t.Errorf("%s: %d replaced after one doubling past the mark, want 0", tc.name, got)
		}
		for i := 0; i < 200; i++ {
			cycle(m, f, 0) // stays at 32 MiB: kept however long
		}
		if got := m.Recycled(); got != 0 {
			t.Errorf("%s: replaced while its memory stayed within twice its mark", tc.name)
		}
		cycle(m, f, tc.then)
		if got := m.Recycled(); got != tc.want {
			t.Errorf("%s: %d replaced after growing to %d MiB, want %d", tc.name, got, tc.then>>20, tc.want)
		}
		m.Close(ctx)
	}
}

// TestModuleMemoryFollowsInstances: wasmsched_module_memory_bytes and
// Pool.MemoryBytes are the sum of the live instances' linear memory as
// each was last returned, through opens, growth, replacement, loss and
// Close, also with clients checked out and returned concurrently.
func TestModuleMemoryFollowsInstances(t *testing.T) {
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	met, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	f := &sizedFake{}
	m, err := guest.Load(ctx, f, guest.PoolConfig{Name: "mem", PoolSize: 4, Metrics: met})
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, want int64) {
		t.Helper()
		if got := m.MemoryBytes(); got != want {
			t.Errorf("%s: Pool.MemoryBytes %d MiB, want %d MiB", what, got>>20, want>>20)
		}
		if got := testmetrics.Value(t, reg, "wasmsched_module_memory_bytes", testmetrics.Labels{"module": "mem"}); got != float64(want) {
			t.Errorf("%s: wasmsched_module_memory_bytes %v MiB, want %d MiB", what, got/(1<<20), want>>20)
		}
	}
	check("after Load", 16<<20)

	a, _ := m.Get(ctx)
	b, _ := m.Get(ctx) // a second instance
	check("two instances checked out", 32<<20)
	f.setSize(1, 24<<20) // b grows while in use: counted when returned
	check("growing in use", 32<<20)
	m.Put(ctx, b)
	check("returned grown", 40<<20)
	m.Put(ctx, a)

	// concurrent use: every instance returned, the sum still matches
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				c, err := m.Get(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				m.Put(ctx, c)
			}
		}()
	}
	wg.Wait()
	check("after concurrent use", f.liveBytes())

	// a lost instance leaves the count
	c, _ := m.Get(ctx)
	f.fail.Store(true)
	if err := c.PushState(ctx); err == nil || !c.Broken() {
		t.Fatalf("a failing call left the instance usable (%v)", err)
	}
	f.fail.Store(false)
	m.Put(ctx, c)
	check("after a lost instance", f.liveBytes())

	m.Close(ctx)
	check("after Close", 0)
}

// sizedFake is a module whose instances start with 16 MiB of linear
// memory; the test sets an instance's size by the order it was made in,
// and makes every call fail while fail is set.
type sizedFake struct {
	mu    sync.Mutex
	insts []*sizedInstance
	fail  atomic.Bool
}

func (f *sizedFake) NewInstance(context.Context) (guest.Instance, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := &sizedInstance{growInstance: growInstance{size: 16 << 20}, f: f}
	f.insts = append(f.insts, i)
	return i, nil
}
func (f *sizedFake) Close(context.Context) error { return nil }

func (f *sizedFake) setSize(i int, size uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.insts[i].size = size
}

// liveBytes sums the memory of the instances not closed.
func (f *sizedFake) liveBytes() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	var n int64
	for _, i := range f.insts {
		if !i.closed {
			n += int64(i.size)
		}
	}
	return n
}

type sizedInstance struct {
	growInstance
	f      *sizedFake
	closed bool
}

func (i *sizedInstance) MemoryBytes() (size, limit uint64) {
	i.f.mu.Lock()
	defer i.f.mu.Unlock()
	return i.size, 64 << 20
}

func (i *sizedInstance) Call(ctx context.Context, fn abi.Func, arg uint32, n int) ([]byte, error) {
	if i.f.fail.Load() {
		return nil, errors.New("failing on purpose")
	}
	return i.growInstance.Call(ctx, fn, arg, n)
}

func (i *sizedInstance) Close(context.Context) error {
	i.f.mu.Lock()
	defer i.f.mu.Unlock()
	i.closed = true
	return nil
}
