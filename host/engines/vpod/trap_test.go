package vpod

import (
	"context"
	"errors"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/platform/guest"
	"github.com/wasmsched/wasmsched/host/platform/modules"
	"github.com/wasmsched/wasmsched/host/platform/runtime/native"
)

// boom is a vpod predicate that panics at its first step: through the
// native runtime the panic is a guest trap, as in Wasm.
type boom struct{}

func (boom) Name() string { return "Boom" }
func (boom) NewVPodFilter([]byte) (plugin.VPodFilter, error) {
	return func(*plugin.VPodState, []int, []*plugin.Status) { panic("boom") }, nil
}

// TestTrappingModule runs a policy whose module traps at every step,
// through the real policy client: the step fails with a *PolicyError
// naming the module, the plugin and the trap, nothing is placed (no
// placements come back), the instance is replaced, and nothing panics.
func TestTrappingModule(t *testing.T) {
	ctx := context.Background()
	cfg := config.Default()
	cfg.Modules = []config.ModuleSpec{{Name: "boom"}}
	reg, err := modules.Load(ctx, cfg, modules.Options{CacheDir: t.TempDir(), NativeBuiltin: true,
		Backends: map[string]guest.Backend{"boom": native.New(nil, plugin.Registration{Name: "Boom",
			New: func(*abi.Value, plugin.Handle) (plugin.Plugin, error) { return boom{}, nil }})}})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close(ctx)
	pol := &Policy{Predicates: []PolicyEntry{pred("Boom")}}
	p, err := NewPolicies(ctx, reg, pol, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	c := zonedCluster(2, 1, 1, vp("v", 2, pl(1, 1)))
	s := newSched(t, Settings{Capacity: 10, Strategy: StrategyPolicy, SchedPolicy: pol}, c, p, Options{})
	for i := 0; i < 2; i++ {
		got, err := s.Schedule(ctx, vp("v", 2, pl(1, 1)))
		var pe *PolicyError
		if !errors.As(err, &pe) || pe.Module != "boom" || pe.Plugin != "Boom" || pe.Reason != "trap" || got != nil {
			t.Fatalf("call %d: %v %v", i, got, err)
		}
	}
}
