package guest_test

import (
	"context"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/platform/guest"
)

// growFake is a module whose instances report a linear memory of 16 MiB,
// or what the test sets on the last one made, under a 64 MiB limit.
type growFake struct{ last *growInstance }

func (f *growFake) NewInstance(context.Context) (guest.Instance, error) {
	f.last = &growInstance{size: 16 << 20}
	return f.last, nil
}
func (f *growFake) Close(context.Context) error { return nil }

type growInstance struct {
	in   []byte
	size uint64
}

func (i *growInstance) MemoryBytes() (size, limit uint64) { return i.size, 64 << 20 }

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
