package preemption_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/engines/preemption"
	"github.com/wasmsched/wasmsched/host/platform/guest"
	"github.com/wasmsched/wasmsched/host/platform/runtime/native"
	"github.com/wasmsched/wasmsched/host/run/sim"
	"github.com/wasmsched/wasmsched/plugins-wasm/defaults"
)

// countingBackend serves the default bundle's native twin, counting the
// calls by function; with asMinor set it presents itself as a module of
// that ABI minor version, so the host talks to it as to an older module.
type countingBackend struct {
	inner   guest.Backend
	asMinor *uint16
	mu      sync.Mutex
	calls   map[abi.Func]int
}

func newCounting(asMinor *uint16) *countingBackend {
	return &countingBackend{inner: native.New(nil, defaults.Plugins()...), asMinor: asMinor, calls: map[abi.Func]int{}}
}

func (b *countingBackend) NewInstance(ctx context.Context) (guest.Instance, error) {
	inst, err := b.inner.NewInstance(ctx)
	if err != nil {
		return nil, err
	}
	return &countingInstance{Instance: inst, b: b}, nil
}

func (b *countingBackend) Close(ctx context.Context) error { return b.inner.Close(ctx) }

func (b *countingBackend) count(fn abi.Func) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls[fn]
}

type countingInstance struct {
	guest.Instance
	b *countingBackend
}

func (i *countingInstance) ABIVersion(ctx context.Context) (uint32, error) {
	if i.b.asMinor != nil {
		return abi.PackVersion(abi.VersionMajor, *i.b.asMinor), nil
	}
	return i.Instance.ABIVersion(ctx)
}

func (i *countingInstance) Call(ctx context.Context, fn abi.Func, arg uint32, n int) ([]byte, error) {
	i.b.mu.Lock()
	i.b.calls[fn]++
	i.b.mu.Unlock()
	reply, err := i.Instance.Call(ctx, fn, arg, n)
	if err != nil || fn != abi.FuncManifest || i.b.asMinor == nil || len(reply) == 0 || reply[0] != abi.ReplyOK {
		return reply, err
	}
	var m abi.Manifest
	d := abi.NewDecoder(reply[1:])
	d.Manifest(&m)
	if d.Err() != nil {
		return nil, d.Err()
	}
	m.VersionMinor = *i.b.asMinor
	var e abi.Encoder
	e.U8(abi.ReplyOK)
	e.Manifest(&m)
	return e.B, nil
}

// runWith runs a cluster with the default plugins served by b.
func runWith(t *testing.T, o *sim.Objects, b guest.Backend) *sim.Report {
	t.Helper()
	cfg, err := config.Parse([]byte(`apiVersion: wasmsched.io/v1alpha1
kind: WasmSchedulerConfiguration
modules:
- {name: default, path: in-process}
profiles:
- schedulerName: default-scheduler
`))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := sim.Run(context.Background(), o, sim.Options{Config: cfg, CacheDir: t.TempDir(), Seed: 1,
		Backends: map[string]guest.Backend{"default": b}})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// editClusters are clusters whose preemptions take every kind of what-if
// edit: victims the guest mirrors (pods with anti-affinity) and victims it
// does not, budgets, several preemptors (so later cycles see nominated
// pods), and a preemptor whose spread constraint sends the dry runs node
// by node.
func editClusters(t *testing.T) map[string]*sim.Objects {
	var base []string
	for i := 1; i <= 6; i++ {
		n := fmt.Sprintf("n%d", i)
		base = append(base, nodeYAML(n, "2"))
		class := []string{"low", "mid"}[i%2]
		base = append(base,
			podYAML("a-"+n, "low", n, fmt.Sprintf("%dm", 500+50*i), "app: x", ""),
			podYAML("b-"+n, class, n, fmt.Sprintf("%dm", 300+100*i), "app: w", ""),
			podYAML("c-"+n, "low", n, "300m", "app: z",
				"affinity: {podAntiAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 1, podAffinityTerm: {topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app: q}}}}]}}"))
	}
	base = append(base, pdbYAML("pdb-x", "x", 1))
	preemptors := []string{
		podYAML("big-1", "high", "", "1500m", "app: big", ""),
		podYAML("big-2", "high", "", "1200m", "app: big", ""),
		podYAML("top-1", "top", "", "1700m", "app: top", ""),
		podYAML("mid-1", "mid", "", "800m", "app: m", ""),
	}
	spread := podYAML("spread", "high", "", "1500m", "app: big",
		"topologySpreadConstraints: [{maxSkew: 5, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: big}}}]")
	return map[string]*sim.Objects{
		"batched":      objects(t, append(append([]string{}, base...), preemptors...)...),
		"node by node": objects(t, append(append([]string{}, base...), spread, preemptors[0], preemptors[2])...),
	}
}

// The batched what-if edits (ABI v1.5's edit_view) and the per-pod calls
// an older module gets (add_pod, remove_pod) choose the same victims and
// place every pod alike, on both dry-run paths.
func TestBatchedEditsAndPerPodCallsAgree(t *testing.T) {
	v14 := uint16(4)
	for name, o := range editClusters(t) {
		t.Run(name, func(t *testing.T) {
			var paths []bool
			preemption.SetDebugBatch(func(b bool) { paths = append(paths, b) })
			defer preemption.SetDebugBatch(nil)
			batched, perPod := newCounting(nil), newCounting(&v14)
			repB := runWith(t, o, batched)
			pathsB := paths
			paths = nil
			repP := runWith(t, o, perPod)
			if len(repB.Preemptions) < 2 {
				t.Fatalf("only %d preemptions: the cluster does not exercise the dry runs", len(repB.Preemptions))
			}
			perNode := false
			for _, b := range pathsB {
				perNode = perNode || !b
			}
			if len(pathsB) == 0 || perNode != (name == "node by node") || !reflect.DeepEqual(paths, pathsB) {
				t.Fatalf("dry-run paths %v (v1.5) and %v (v1.4); want node by node among them: %v", pathsB, paths, name == "node by node")
			}
			if !reflect.DeepEqual(victims(repB), victims(repP)) {
				t.Fatalf("victims with edit_view %v\nwith per-pod calls %v", victims(repB), victims(repP))
			}
			if !reflect.DeepEqual(repB.Pods, repP.Pods) {
				t.Fatalf("pods with edit_view %+v\nwith per-pod calls %+v", repB.Pods, repP.Pods)
			}
			if n := batched.count(abi.FuncAddPod) + batched.count(abi.FuncRemovePod); n != 0 || batched.count(abi.FuncEditView) == 0 {
				t.Fatalf("v1.5 module: %d add_pod/remove_pod calls, %d edit_view", n, batched.count(abi.FuncEditView))
			}
			if perPod.count(abi.FuncEditView) != 0 || perPod.count(abi.FuncRemovePod) == 0 || perPod.count(abi.FuncAddPod) == 0 {
				t.Fatalf("v1.4 module: %d edit_view, %d remove_pod, %d add_pod calls",
					perPod.count(abi.FuncEditView), perPod.count(abi.FuncRemovePod), perPod.count(abi.FuncAddPod))
			}
			// One call per step instead of one per pod.
			if b, p := batched.count(abi.FuncEditView), perPod.count(abi.FuncAddPod)+perPod.count(abi.FuncRemovePod); b >= p {
				t.Fatalf("%d edit_view calls for %d per-pod calls", b, p)
			}
			t.Logf("victims %v; %d edit_view calls against %d add_pod/remove_pod", victims(repB),
				batched.count(abi.FuncEditView), perPod.count(abi.FuncAddPod)+perPod.count(abi.FuncRemovePod))
		})
	}
}

// A guest that refuses an edit fails the preemption attempt with an error
// that says which edit and why, instead of choosing victims on a view it
// did not build.
func TestRefusedEditFailsThePreemption(t *testing.T) {
	o := objects(t, nodeYAML("n1", "1"), podYAML("low", "low", "n1", "1", "", ""), podYAML("big", "high", "", "1", "", ""))
	rep := runWith(t, o, &refusingBackend{countingBackend: newCounting(nil)})
	p := rep.Pod("default", "big")
	if p.Status == sim.StatusScheduled || len(rep.Preemptions) != 0 || !strings.Contains(p.Message, "no pod with UID") {
		t.Fatalf("big = %+v, preemptions %v", p, rep.Preemptions)
	}
}

// refusingBackend answers every edit_view as a guest that does not hold
// the pods the host names would.
type refusingBackend struct{ *countingBackend }

func (b *refusingBackend) NewInstance(ctx context.Context) (guest.Instance, error) {
	inst, err := b.countingBackend.NewInstance(ctx)
	if err != nil {
		return nil, err
	}
	return &refusingInstance{Instance: inst}, nil
}

type refusingInstance struct{ guest.Instance }

func (i *refusingInstance) Call(ctx context.Context, fn abi.Func, arg uint32, n int) ([]byte, error) {
	if fn != abi.FuncEditView {
		return i.Instance.Call(ctx, fn, arg, n)
	}
	var e abi.Encoder
	e.U8(abi.ReplyError)
	e.String(`edit_view: edit 0: no pod with UID "x" on node n1 in the view`)
	return e.B, nil
}
