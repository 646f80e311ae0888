package kube

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/engines/eviction"
	"github.com/wasmsched/wasmsched/host/engines/podremoval"
	"github.com/wasmsched/wasmsched/host/internal/usage"
	"github.com/wasmsched/wasmsched/host/platform/modules"
	"github.com/wasmsched/wasmsched/host/platform/snapshot"
)

var podsResource = schema.GroupResource{Resource: "pods"}

func runningPod(ns, name, uid string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: k8stypes.UID(uid)}}
}

func TestEvictionAPIEvictSendsGraceAndUIDAndMapsErrors(t *testing.T) {
	victim := &abi.Pod{UID: "u1", Namespace: "ns", Name: "v"}
	for _, tc := range []struct {
		name string
		err  error
		// another: the pod named ns/v when the Eviction API answers
		// (nil: none).
		another        *corev1.Pod
		wantNotFound   bool
		wantRetryAfter time.Duration
		wantTooMany    bool
	}{
		{name: "accepted"},
		{name: "budget refuses with Retry-After", err: apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 7),
			wantTooMany: true, wantRetryAfter: 7 * time.Second},
		{name: "budget refuses without Retry-After", err: apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0),
			wantTooMany: true},
		{name: "gone", err: apierrors.NewNotFound(podsResource, "v"), wantNotFound: true},
		{name: "UID precondition fails: another pod has the name", err: apierrors.NewConflict(podsResource, "v", errors.New("Precondition failed: UID")),
			another: runningPod("ns", "v", "u2"), wantNotFound: true},
		{name: "conflict while our pod is still there", err: apierrors.NewConflict(podsResource, "v", errors.New("the object has been modified")),
			another: runningPod("ns", "v", "u1")},
		{name: "server error", err: apierrors.NewInternalError(errors.New("etcd down"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewSimpleClientset()
			if tc.another != nil {
				if err := client.Tracker().Add(tc.another); err != nil {
					t.Fatal(err)
				}
			}
			var sent *policyv1.Eviction
			client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
				if a.GetSubresource() != "eviction" {
					return false, nil, nil
				}
				sent = a.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction)
				return true, nil, tc.err
			})
			grace := int64(12)
			err := EvictionAPI{Client: client}.EvictPod(context.Background(), victim, &grace)
			if sent == nil || sent.Name != "v" || sent.Namespace != "ns" || sent.DeleteOptions == nil ||
				sent.DeleteOptions.Preconditions == nil || string(*sent.DeleteOptions.Preconditions.UID) != "u1" ||
				sent.DeleteOptions.GracePeriodSeconds == nil || *sent.DeleteOptions.GracePeriodSeconds != 12 {
				t.Fatalf("eviction sent: %+v", sent)
			}
			if tc.err == nil {
				if err != nil {
					t.Fatalf("accepted eviction: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			if got := errors.Is(err, podremoval.ErrNotFound); got != tc.wantNotFound {
				t.Fatalf("%v: ErrNotFound = %v, want %v", err, got, tc.wantNotFound)
			}
			var tooMany *podremoval.RefusedError
			if got := errors.As(err, &tooMany); got != tc.wantTooMany {
				t.Fatalf("%v: TooManyRequestsError = %v, want %v", err, got, tc.wantTooMany)
			}
			if tc.wantTooMany && tooMany.RetryAfter != tc.wantRetryAfter {
				t.Fatalf("RetryAfter = %v, want %v", tooMany.RetryAfter, tc.wantRetryAfter)
			}
			if !strings.Contains(err.Error(), "ns/v") {
				t.Fatalf("error %q does not name the pod", err)
			}
		})
	}
}

func TestEvictionAPIDeleteAndPodUID(t *testing.T) {
	client := fake.NewSimpleClientset(runningPod("ns", "v", "u1"))
	var opts metav1.DeleteOptions
	client.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		opts = a.(k8stesting.DeleteAction).GetDeleteOptions()
		return false, nil, nil // the tracker deletes it
	})
	api := EvictionAPI{Client: client}
	ctx := context.Background()
	if uid, err := api.PodUID(ctx, "ns", "v"); err != nil || uid != "u1" {
		t.Fatalf("PodUID = %q, %v; want u1", uid, err)
	}
	zero := int64(0)
	if err := api.DeletePod(ctx, &abi.Pod{UID: "u1", Namespace: "ns", Name: "v"}, &zero); err != nil {
		t.Fatal(err)
	}
	if opts.Preconditions == nil || string(*opts.Preconditions.UID) != "u1" || opts.GracePeriodSeconds == nil || *opts.GracePeriodSeconds != 0 {
		t.Fatalf("delete options %+v", opts)
	}
	if _, err := api.PodUID(ctx, "ns", "v"); !errors.Is(err, podremoval.ErrNotFound) {
		t.Fatalf("PodUID of a deleted pod: %v, want ErrNotFound", err)
	}
	if err := api.DeletePod(ctx, &abi.Pod{UID: "u1", Namespace: "ns", Name: "v"}, nil); !errors.Is(err, podremoval.ErrNotFound) {
		t.Fatalf("deleting a deleted pod: %v, want ErrNotFound", err)
	}
}

func TestEvictionAPIPodUIDReadsTheAPINotACache(t *testing.T) {
	client := fake.NewSimpleClientset()
	gets := 0
	client.PrependReactor("get", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		gets++
		return true, runningPod("ns", "v", "u9"), nil
	})
	uid, err := EvictionAPI{Client: client}.PodUID(context.Background(), "ns", "v")
	if err != nil || uid != "u9" || gets != 1 {
		t.Fatalf("PodUID = %q, %v after %d GETs", uid, err, gets)
	}
}

func TestEvictionAPIEventsGoThroughTheRecorder(t *testing.T) {
	client := eventsV1Clientset()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rec := NewRecorder(ctx, RecorderOptions{Client: client, Instance: "host-1"})
	go rec.Run(ctx)
	pod := &abi.Pod{UID: "u1", Namespace: "ns", Name: "v", SchedulerName: "some-profile"}
	EvictionAPI{Client: client, Recorder: rec}.Event(pod, true, eviction.ReasonEvictBlocked, "refused")
	e := waitEventV1(t, ctx, client, "ns", eviction.ReasonEvictBlocked)
	if e.Type != corev1.EventTypeWarning || e.Note != "refused" || e.Action != ActionEvicting ||
		e.Regarding.Name != "v" || string(e.Regarding.UID) != "u1" ||
		e.ReportingController != EvictionComponent || e.ReportingInstance != "host-1" {
		t.Fatalf("event %+v", e)
	}
}

// nodeSink records the node updates pushed to the scheduler.
type nodeSink struct{ old, new []*abi.Node }

func (s *nodeSink) OnNodeUpdate(old, n *abi.Node) {
	s.old, s.new = append(s.old, old), append(s.new, n)
}

func taintKeys(ts []corev1.Taint) string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Key+":"+string(t.Effect))
	}
	return strings.Join(out, ",")
}

func TestSetEvictionTaintsSwapsOnlyManagedTaints(t *testing.T) {
	added := metav1.NewTime(time.Unix(1000, 0))
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Spec: corev1.NodeSpec{Taints: []corev1.Taint{
		{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule},
		{Key: eviction.TaintPrefix + "DiskPressure", Effect: corev1.TaintEffectNoSchedule},
		{Key: eviction.TaintPrefix + "PIDPressure", Effect: corev1.TaintEffectNoExecute, TimeAdded: &added},
		{Key: "node.kubernetes.io/unreachable", Effect: corev1.TaintEffectNoExecute, TimeAdded: &added},
	}}}
	client := fake.NewSimpleClientset(n)
	// The first update conflicts (someone else wrote the node): the
	// swap is made again on a fresh read.
	conflicts, updates := 1, 0
	client.PrependReactor("update", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		updates++
		if conflicts > 0 {
			conflicts--
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "nodes"}, "n1", errors.New("modified"))
		}
		return false, nil, nil
	})
	sink := &nodeSink{}
	now := time.Unix(2000, 0)
	c := EvictionCluster{Client: client, Nodes: sink, Now: func() time.Time { return now }}
	ctx := context.Background()
	want := []abi.Taint{
		{Key: eviction.TaintPrefix + "MemoryPressure", Effect: abi.EffectNoExecute},
		{Key: eviction.TaintPrefix + "PIDPressure", Effect: abi.EffectNoExecute},
	}
	if err := c.SetEvictionTaints(ctx, "n1", want); err != nil {
		t.Fatal(err)
	}
	if updates != 2 {
		t.Fatalf("%d updates, want 2 (one conflict, one retry)", updates)
	}
	got, err := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const wantKeys = "dedicated:NoSchedule,node.kubernetes.io/unreachable:NoExecute," +
		eviction.TaintPrefix + "MemoryPressure:NoExecute," + eviction.TaintPrefix + "PIDPressure:NoExecute"
	if k := taintKeys(got.Spec.Taints); k != wantKeys {
		t.Fatalf("taints = %s\nwant     %s", k, wantKeys)
	}
	ts := got.Spec.Taints
	if ts[0].Value != "gpu" || !ts[1].TimeAdded.Equal(&added) {
		t.Fatalf("foreign taints changed: %+v", ts[:2])
	}
	if ts[2].TimeAdded == nil || !ts[2].TimeAdded.Time.Equal(now) {
		t.Fatalf("new NoExecute taint's timeAdded = %v, want %v", ts[2].TimeAdded, now)
	}
	if !ts[3].TimeAdded.Equal(&added) {
		t.Fatalf("a taint that stays lost its timeAdded: %v", ts[3].TimeAdded)
	}
	// The scheduler heard of it at once, as the node was before and after.
	if len(sink.new) != 1 || len(sink.new[0].Taints) != 4 || len(sink.old[0].Taints) != 4 ||
		sink.new[0].Taints[2].Key != eviction.TaintPrefix+"MemoryPressure" || sink.old[0].Taints[1].Key != eviction.TaintPrefix+"DiskPressure" {
		t.Fatalf("pushed old %+v new %+v", sink.old, sink.new)
	}

	// Nothing to change: no update, but the scheduler is told again (its
	// cache is what made the coordinator ask).
	updates = 0
	if err := c.SetEvictionTaints(ctx, "n1", want); err != nil || updates != 0 || len(sink.new) != 2 {
		t.Fatalf("no-op swap: %v, %d updates, %d pushes", err, updates, len(sink.new))
	}

	// No taints: every managed one goes, the others stay.
	if err := c.SetEvictionTaints(ctx, "n1", nil); err != nil {
		t.Fatal(err)
	}
	got, _ = client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	if k := taintKeys(got.Spec.Taints); k != "dedicated:NoSchedule,node.kubernetes.io/unreachable:NoExecute" {
		t.Fatalf("after clearing: %s", k)
	}
}

func TestSetEvictionTaintsReportsAMissingNode(t *testing.T) {
	sink := &nodeSink{}
	c := EvictionCluster{Client: fake.NewSimpleClientset(), Nodes: sink}
	err := c.SetEvictionTaints(context.Background(), "gone", []abi.Taint{{Key: eviction.TaintPrefix + "X", Effect: abi.EffectNoSchedule}})
	if err == nil || !strings.Contains(err.Error(), "node gone") || !apierrors.IsNotFound(err) || len(sink.new) != 0 {
		t.Fatalf("missing node: %v, %d pushes", err, len(sink.new))
	}
}

func TestSwapEvictionTaintsReportsChanges(t *testing.T) {
	now := metav1.NewTime(time.Unix(5, 0))
	k := eviction.TaintPrefix + "MemoryPressure"
	have := []corev1.Taint{{Key: "other", Effect: corev1.TaintEffectNoSchedule}, {Key: k, Effect: corev1.TaintEffectNoSchedule}}
	for _, tc := range []struct {
		name    string
		want    []abi.Taint
		changed bool
		keys    string
	}{
		{"same", []abi.Taint{{Key: k, Effect: abi.EffectNoSchedule}}, false, "other:NoSchedule," + k + ":NoSchedule"},
		{"other effect", []abi.Taint{{Key: k, Effect: abi.EffectPreferNoSchedule}}, true, "other:NoSchedule," + k + ":PreferNoSchedule"},
		{"other value", []abi.Taint{{Key: k, Value: "x", Effect: abi.EffectNoSchedule}}, true, "other:NoSchedule," + k + ":NoSchedule"},
		{"removed", nil, true, "other:NoSchedule"},
		{"added", []abi.Taint{{Key: k, Effect: abi.EffectNoSchedule}, {Key: k, Effect: abi.EffectNoExecute}}, true,
			"other:NoSchedule," + k + ":NoSchedule," + k + ":NoExecute"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, changed := swapEvictionTaints(have, tc.want, now)
			if changed != tc.changed || taintKeys(out) != tc.keys {
				t.Fatalf("swap = %s, %v; want %s, %v", taintKeys(out), changed, tc.keys, tc.changed)
			}
			for _, tt := range out {
				if (tt.TimeAdded != nil) != (tt.Effect == corev1.TaintEffectNoExecute) {
					t.Fatalf("taint %+v: timeAdded only on a new NoExecute taint", tt)
				}
			}
		})
	}
	if len(have) != 2 || have[1].Key != k {
		t.Fatal("swap modified its input")
	}
}

// fixedUsage is a usage.Source.
type fixedUsage struct {
	snap *usage.Snapshot
	err  error
}

func (f fixedUsage) Usage(context.Context) (*usage.Snapshot, error) { return f.snap, f.err }

func TestEvictionUsageAdaptsSnapshots(t *testing.T) {
	ctx := context.Background()
	snap := &usage.Snapshot{}
	snap.SetNode("n1", abi.Usage{MilliCPU: 1500})
	snap.SetPod("ns", "p", abi.Usage{Memory: 42})
	u, err := EvictionUsage(fixedUsage{snap: snap}).Usage(ctx)
	if err != nil || u.Node("n1") == nil || u.Node("n1").MilliCPU != 1500 || u.Pod("ns", "p").Memory != 42 || u.Node("n2") != nil {
		t.Fatalf("usage %v, %v", u, err)
	}
	if u, err := EvictionUsage(fixedUsage{}).Usage(ctx); u != nil || err != nil {
		t.Fatalf("no snapshot: %#v, %v; want a nil interface", u, err)
	}
	boom := errors.New("forbidden")
	if u, err := EvictionUsage(fixedUsage{err: boom}).Usage(ctx); u != nil || !errors.Is(err, boom) {
		t.Fatalf("error: %#v, %v", u, err)
	}
}

// fakeSnapshots is a SnapshotSource counting its calls.
type fakeSnapshots struct{ calls int }

func (f *fakeSnapshots) UpdateSnapshot(*snapshot.Snapshot) { f.calls++ }

func TestEvictionClusterReadsTheCache(t *testing.T) {
	src := &fakeSnapshots{}
	EvictionCluster{Cache: src}.UpdateSnapshot(snapshot.New())
	if src.calls != 1 {
		t.Fatalf("%d cache reads", src.calls)
	}
}

func evictionConfig(t *testing.T, policies string) *config.Configuration {
	t.Helper()
	cfg, err := config.Parse([]byte("apiVersion: wasmsched.io/v1alpha1\nkind: WasmSchedulerConfiguration\n" +
		"profiles: [{schedulerName: default-scheduler}]\neviction:\n  syncPeriod: 1s\n  policies:\n" + policies))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestServeRefusesBadEvictionPoliciesAtStart(t *testing.T) {
	for _, tc := range []struct{ name, policies, want string }{
		{"unknown plugin", "  - plugin: NoSuchPolicy\n", `eviction.policies[0].plugin: no module serves plugin "NoSuchPolicy"`},
		{"not an eviction policy", "  - plugin: ResourceOvercommit\n  - plugin: NodeResourcesFit\n",
			`eviction.policies[1].plugin: plugin "NodeResourcesFit" of module "default" is not an eviction policy`},
		{"bad args", "  - plugin: ResourceOvercommit\n    args: {hardRate: -1}\n", "hardRate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			err := Serve(ctx, ServeOptions{Client: fake.NewSimpleClientset(), Config: evictionConfig(t, tc.policies), CacheDir: t.TempDir()})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Serve = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestNewEvictionPartsBuildsTheConfiguredPolicies(t *testing.T) {
	ctx := context.Background()
	opts := modules.Options{CacheDir: t.TempDir()}
	none, err := newEvictionParts(ctx, ServeOptions{Config: config.Default()}, opts, nil, nil,
		EvictionCluster{Cache: liveSnapshot{snapshot.New()}}, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	// Without policies there is still a coordinator (a reload may add
	// some), with nothing to ask.
	if r := none.coord.RunRound(ctx); len(r.Victims) != 0 || len(none.coord.Policies()) != 0 {
		t.Fatalf("no eviction section: %+v", r)
	}
	none.close(ctx)

	cfg := evictionConfig(t, "  - plugin: ResourceOvercommit\n  - plugin: NodePressure\n    dryRun: true\n")
	reg, err := modules.Load(ctx, cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	live := snapshot.New()
	live.SetNode(abi.Node{Name: "n1", Allocatable: abi.Resources{MilliCPU: 1000}})
	for i, name := range []string{"low", "high"} {
		p := &abi.Pod{UID: name, Namespace: "ns", Name: name, NodeName: "n1", Priority: int32(i * 100),
			Containers: []abi.Container{{Requests: abi.Resources{MilliCPU: 1000}}}}
		if err := live.AddPod(p); err != nil {
			t.Fatal(err)
		}
	}
	e, err := newEvictionParts(ctx, ServeOptions{Config: cfg}, opts, reg, nil, EvictionCluster{Cache: liveSnapshot{live}}, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	// The scheduler's registry may go (a reload replaced it): the
	// policies keep their own.
	reg.Close(ctx)
	defer e.close(ctx)
	ps := e.coord.Policies()
	if len(ps) != 2 || ps[0].Name() != "ResourceOvercommit" || ps[1].Name() != "NodePressure" || !ps[1].DryRun {
		t.Fatalf("policies %+v", ps)
	}
	if e.coord.Settings().SyncPeriod != time.Second {
		t.Fatalf("sync period %v", e.coord.Settings().SyncPeriod)
	}
	// A round on an overcommitted node still runs the policies: the
	// lower-priority pod is the victim.
	round := e.coord.RunRound(ctx)
	if len(round.Failures) != 0 || len(round.Victims) != 1 || round.Victims[0].Pod.Name != "low" || round.Victims[0].Policy != "ResourceOvercommit" {
		t.Fatalf("round %+v", round)
	}
	if !e.killer.Holds("low") {
		t.Fatal("the victim was not handed to the killer")
	}
}

// liveSnapshot is a SnapshotSource over a fixed snapshot.
type liveSnapshot struct{ s *snapshot.Snapshot }

func (l liveSnapshot) UpdateSnapshot(dst *snapshot.Snapshot) { dst.UpdateFrom(l.s) }

// recordingKiller is an eviction.PodKiller that kills nothing.
type recordingKiller struct{ reqs []eviction.KillRequest }

func (k *recordingKiller) Submit(reqs []eviction.KillRequest) { k.reqs = append(k.reqs, reqs...) }
func (k *recordingKiller) Holds(string) bool                  { return false }
