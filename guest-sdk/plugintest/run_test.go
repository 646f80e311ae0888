package plugintest

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
)

// toy is a configurable plugin for exercising the runners' rules.
type toy struct {
	preFilter *plugin.Status
	filter    func(n *plugin.NodeInfo) *plugin.Status
	preScore  *plugin.Status
	score     func(n *plugin.NodeInfo) int64
	normalize bool
	filtered  int
}

func (*toy) Name() string { return "Toy" }
func (t *toy) PreFilter(*plugin.CycleState, *abi.Pod) *plugin.Status {
	return t.preFilter
}
func (t *toy) Filter(_ *plugin.CycleState, _ *abi.Pod, n *plugin.NodeInfo) *plugin.Status {
	t.filtered++
	return t.filter(n)
}
func (t *toy) PreScore(*plugin.CycleState, *abi.Pod, []*plugin.NodeInfo) *plugin.Status {
	return t.preScore
}
func (t *toy) Score(_ *plugin.CycleState, _ *abi.Pod, n *plugin.NodeInfo) (int64, *plugin.Status) {
	return t.score(n), nil
}
func (t *toy) NormalizeScore(_ *plugin.CycleState, _ *abi.Pod, s []int64) *plugin.Status {
	if t.normalize {
		for i := range s {
			s[i] *= 10
		}
	}
	return nil
}

// recorder is a testing.TB that records failures instead of failing, so
// the runners' own refusals can be asserted.
type recorder struct {
	testing.TB
	msgs  []string
	fatal bool
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(f string, a ...any) {
	r.msgs = append(r.msgs, fmt.Sprintf(f, a...))
}
func (r *recorder) Fatalf(f string, a ...any) {
	r.msgs = append(r.msgs, fmt.Sprintf(f, a...))
	r.fatal = true
	runtime.Goexit()
}

// record runs fn against a recorder on its own goroutine (Fatalf exits it).
func record(t *testing.T, fn func(tb testing.TB)) *recorder {
	r := &recorder{TB: t}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); fn(r) }()
	wg.Wait()
	return r
}

var (
	small  = MakeNode().Name("small").Label("zone", "a").Capacity(Res(1000, 1<<30)).Obj()
	big    = MakeNode().Name("big").Label("zone", "b").Capacity(Res(8000, 8<<30)).Obj()
	tooBig = plugin.NewStatus(abi.Unschedulable, "too small")
)

func cpu(n *plugin.NodeInfo) int64 { return n.Node.Allocatable.MilliCPU / 1000 }

func TestRunFilterFollowsHostRules(t *testing.T) {
	pod := MakePod().Name("p").Req(Res(2000, 0)).Obj()
	fits := func(n *plugin.NodeInfo) *plugin.Status {
		if n.Node.Allocatable.MilliCPU < 2000 {
			return tooBig
		}
		return nil
	}
	p := &toy{filter: fits}
	got := RunFilter(t, p, pod, small, big)
	if got[0] != tooBig || got[1] != nil {
		t.Fatalf("verdicts = %v, want [too small, pass]", got)
	}

	skip := &toy{preFilter: plugin.NewStatus(abi.Skip), filter: fits}
	if got := RunFilter(t, skip, pod, small, big); got[0] != nil || got[1] != nil || skip.filtered != 0 {
		t.Fatalf("PreFilter Skip: verdicts %v, Filter called %d times; want all pass, none", got, skip.filtered)
	}

	reject := plugin.NewStatus(abi.UnschedulableAndUnresolvable, "no way")
	rj := &toy{preFilter: reject, filter: fits}
	if got := RunFilter(t, rj, pod, small, big); got[0] != reject || got[1] != reject || rj.filtered != 0 {
		t.Fatalf("PreFilter reject: verdicts %v, Filter called %d times", got, rj.filtered)
	}

	bad := &toy{filter: func(*plugin.NodeInfo) *plugin.Status { return plugin.NewStatus(abi.Skip) }}
	r := record(t, func(tb testing.TB) { RunFilter(tb, bad, pod, small) })
	if len(r.msgs) != 1 || !strings.Contains(r.msgs[0], "not a Filter verdict") {
		t.Fatalf("Skip from Filter: failures %q, want one naming the invalid verdict", r.msgs)
	}
}

func TestRunScoreFollowsHostRules(t *testing.T) {
	pod := MakePod().Name("p").Obj()
	p := &toy{score: cpu, normalize: true}
	if got := RunScore(t, p, pod, small, big); got[0] != 10 || got[1] != 80 {
		t.Fatalf("scores = %v, want normalized [10 80]", got)
	}
	skip := &toy{preScore: plugin.NewStatus(abi.Skip), score: cpu}
	if got := RunScore(t, skip, pod, small, big); got[0] != 0 || got[1] != 0 {
		t.Fatalf("PreScore Skip: scores = %v, want zeros", got)
	}
	over := &toy{score: func(*plugin.NodeInfo) int64 { return abi.MaxScore + 1 }}
	r := record(t, func(tb testing.TB) { RunScore(tb, over, pod, small) })
	if len(r.msgs) != 1 || !strings.Contains(r.msgs[0], "outside [0, 100]") {
		t.Fatalf("score 101: failures %q, want one naming the range", r.msgs)
	}
	rejected := &toy{preFilter: plugin.NewStatus(abi.Unschedulable, "nope"), score: cpu}
	if r := record(t, func(tb testing.TB) { RunScore(tb, rejected, pod, small) }); !r.fatal {
		t.Fatal("scoring a pod PreFilter rejected did not fail the test")
	}
}

func TestScheduleWeighsAndFilters(t *testing.T) {
	pod := MakePod().Name("p").Obj()
	onlyB := &toy{filter: func(n *plugin.NodeInfo) *plugin.Status {
		if v, _ := n.Label("zone"); v != "b" {
			return tooBig
		}
		return nil
	}, score: func(*plugin.NodeInfo) int64 { return 0 }}
	node, verdicts := Schedule(t, pod, []*plugin.NodeInfo{small, big}, []plugin.Plugin{onlyB})
	if node != "big" || verdicts[0] != tooBig || verdicts[1] != nil {
		t.Fatalf("Schedule = %q %v, want big with small rejected", node, verdicts)
	}
	none := &toy{filter: func(*plugin.NodeInfo) *plugin.Status { return tooBig }}
	if node, _ := Schedule(t, pod, []*plugin.NodeInfo{small, big}, []plugin.Plugin{none}); node != "" {
		t.Fatalf("Schedule with every node rejected = %q, want none", node)
	}
}

func TestNewRefusesBadArgsAndNames(t *testing.T) {
	reg := plugin.Registration{Name: "Toy", New: func(args *abi.Value, _ plugin.Handle) (plugin.Plugin, error) {
		if args != nil {
			return nil, fmt.Errorf("no args expected")
		}
		return &toy{}, nil
	}}
	if p := New(t, reg, "", nil); p.Name() != "Toy" {
		t.Fatalf("New = %s", p.Name())
	}
	if r := record(t, func(tb testing.TB) { New(tb, reg, `{"x": 1}`, nil) }); !r.fatal || !strings.Contains(r.msgs[0], "no args expected") {
		t.Fatalf("bad args: %q", r.msgs)
	}
	misnamed := plugin.Registration{Name: "Other", New: reg.New}
	if r := record(t, func(tb testing.TB) { New(tb, misnamed, "", nil) }); !r.fatal {
		t.Fatal("a registration whose plugin calls itself otherwise was accepted")
	}
}

func TestNodeAddPodKeepsAggregates(t *testing.T) {
	p := MakePod().Name("a").Req(Res(300, 1<<20)).HostPort("", abi.ProtocolTCP, 80).Obj()
	n := MakeNode().Name("n").Capacity(Res(1000, 1<<30)).AddPod(p).Obj()
	if n.Requested.MilliCPU != 300 || n.PodCount != 1 || len(n.UsedPorts) != 1 || len(n.Pods) != 1 {
		t.Fatalf("after AddPod: requested %d, pods %d, ports %v", n.Requested.MilliCPU, n.PodCount, n.UsedPorts)
	}
}
