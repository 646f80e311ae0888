package preemption_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/engines/preemption"
	"github.com/wasmsched/wasmsched/host/run/memapi"
	"github.com/wasmsched/wasmsched/host/run/sim"
	"github.com/wasmsched/wasmsched/internal/testwait"
)

// raceEnv is a simulation driven cycle by cycle, with a gate on the API
// that holds the deletion of chosen victims until released, so a test can
// schedule other pods while a preemption goroutine is in the middle of
// its work.
type raceEnv struct {
	t       *testing.T
	env     *sim.Env
	m       *metrics
	mu      sync.Mutex
	hold    map[string]chan struct{} // victim name -> released when closed
	reached map[string]chan struct{} // closed when a held call arrives
}

func startRace(t *testing.T, args string, o *sim.Objects, fail func(op memapi.Op, pod *abi.Pod) error, hold ...string) *raceEnv {
	t.Helper()
	r := &raceEnv{t: t, m: &metrics{}, hold: map[string]chan struct{}{}, reached: map[string]chan struct{}{}}
	for _, h := range hold {
		r.hold[h], r.reached[h] = make(chan struct{}), make(chan struct{})
	}
	var once sync.Map
	inject := func(op memapi.Op, pod *abi.Pod) error {
		if op == memapi.OpDelete || op == memapi.OpEvict {
			r.mu.Lock()
			ch, reached := r.hold[pod.Name], r.reached[pod.Name]
			r.mu.Unlock()
			if ch != nil {
				if _, dup := once.LoadOrStore(pod.Name, true); !dup {
					close(reached)
				}
				<-ch
			}
		}
		if fail != nil {
			return fail(op, pod)
		}
		return nil
	}
	env, err := sim.Start(context.Background(), o, sim.Options{Config: profileConfig(t, args), NativeBuiltin: true,
		CacheDir: t.TempDir(), Seed: 1, APIFailures: inject, PreemptionMetrics: r.m})
	if err != nil {
		t.Fatal(err)
	}
	r.env = env
	t.Cleanup(func() {
		r.releaseAll()
		env.Preemption.Wait()
		env.Close(context.Background())
	})
	return r
}

func (r *raceEnv) releaseAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for n, ch := range r.hold {
		close(ch)
		delete(r.hold, n)
	}
}

// waitHeld waits until the deletion of the named victim is being held.
func (r *raceEnv) waitHeld(name string) {
	r.t.Helper()
	select {
	case <-r.reached[name]:
	case <-time.After(10 * time.Second):
		r.t.Fatalf("the deletion of %s never started", name)
	}
}

// cycle runs one scheduling cycle (bindings finish, preemptions do not).
func (r *raceEnv) cycle() {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.env.Scheduler.ScheduleOne(ctx); err != nil {
		r.t.Fatal(err)
	}
	r.env.Scheduler.WaitBindings()
}

func (r *raceEnv) add(yaml string) {
	r.t.Helper()
	o := &sim.Objects{}
	if err := o.Read("more.yaml", strings.NewReader(yaml)); err != nil {
		r.t.Fatal(err)
	}
	if err := r.env.AddPods(o.Pods...); err != nil {
		r.t.Fatal(err)
	}
}

func (r *raceEnv) uid(name string) string { return "uid-default/" + name }

func (r *raceEnv) nominated(name string) string { return r.env.Queue.NominatedNode(r.uid(name)) }

func (r *raceEnv) settle() *sim.Report {
	r.t.Helper()
	r.releaseAll()
	r.env.Preemption.Wait()
	rep, err := r.env.Settle(context.Background())
	if err != nil {
		r.t.Fatal(err)
	}
	return rep
}

// The KEP-4832 set-up: pod1 (mid) preempts v1 and v2 (low, 1 CPU each) on
// n1 (2 CPU); v1 goes, the deletion of v2 (the last victim) is held. So
// n1 has 1 CPU free and pod1 is nominated there while its goroutine runs.
func racing(t *testing.T, fail func(op memapi.Op, pod *abi.Pod) error, extra ...string) *raceEnv {
	docs := append([]string{nodeYAML("n1", "2"),
		podYAML("v1", "low", "n1", "1", "", ""), podYAML("v2", "low", "n1", "1", "", ""),
		podYAML("pod1", "mid", "", "2", "", "")}, extra...)
	r := startRace(t, "", objects(t, docs...), fail, "v2")
	r.cycle() // pod1: no node fits; PostFilter nominates n1 and starts the goroutine
	r.waitHeld("v2")
	if got := r.nominated("pod1"); got != "n1" {
		t.Fatalf("pod1 nominated to %q, want n1 at once", got)
	}
	testwait.Eventually(t, 5*time.Second, func() bool { return r.env.Cache.GetPod(r.uid("v1")) == nil }, "v1 was never deleted")
	// The gate holds pod1 back while its last victim is alive, even
	// though v1's deletion was an event that retries parked pods.
	if active, _, _ := r.env.Queue.PendingPods(); active != 0 {
		t.Fatalf("%d pods active while pod1's preemption runs; pod1 must be gated", active)
	}
	if !r.env.Preemption.IsPodRunningPreemption(r.uid("pod1")) {
		t.Fatal("pod1's preemption not seen as running")
	}
	return r
}

func TestRaceLowerOrEqualPriorityPodDoesNotTakeTheNominatedRoom(t *testing.T) {
	for _, class := range []string{"low", "mid"} {
		t.Run(class, func(t *testing.T) {
			r := racing(t, nil, nodeYAML("n2", "4"), podYAML("filler", "top", "n2", "3", "", ""))
			r.add(podYAML("pod2", class, "", "500m", "", ""))
			r.cycle()
			// n1 has 1 CPU free and would score better (emptier) than n2, but
			// pod1 (nominated, priority >= pod2's) is counted there.
			if p := r.env.Report().Pod("default", "pod2"); p.Status != sim.StatusScheduled || p.Node != "n2" {
				t.Fatalf("pod2 = %+v, want it on n2", p)
			}
			rep := r.settle()
			if p := rep.Pod("default", "pod1"); p.Status != sim.StatusScheduled || p.Node != "n1" {
				t.Fatalf("pod1 = %+v, want it on n1 after its preemption", p)
			}
		})
	}
}

func TestRaceHigherPriorityPodMayTakeTheNominatedRoom(t *testing.T) {
	r := racing(t, nil, nodeYAML("n2", "4"), podYAML("filler", "top", "n2", "3", "", ""))
	r.add(podYAML("pod2", "high", "", "500m", "", ""))
	r.cycle()
	if p := r.env.Report().Pod("default", "pod2"); p.Status != sim.StatusScheduled || p.Node != "n1" {
		t.Fatalf("pod2 = %+v, want it on n1 (pod1's lower-priority nomination does not hold it back)", p)
	}
	rep := r.settle()
	// As with synchronous preemption, pod1 then finds n1 short of room:
	// the remaining pods there are of higher or equal priority.
	if p := rep.Pod("default", "pod1"); p.Status != sim.StatusUnschedulable {
		t.Fatalf("pod1 = %+v", p)
	}
}

func TestRaceLowerOrEqualPriorityPreemptionCountsTheNominatedPod(t *testing.T) {
	r := racing(t, nil, nodeYAML("n2", "1"), podYAML("v3", "low", "n2", "1", "", ""))
	r.add(podYAML("pod2", "mid", "", "1", "", ""))
	r.cycle()
	// n1 has 1 CPU free, but pod1 (nominated, equal priority) is counted:
	// pod2 fits nowhere, and its preemption must make room for both pods
	// on n1, which removing v2 does not, so it preempts v3 on n2.
	if got := r.nominated("pod2"); got != "n2" {
		t.Fatalf("pod2 nominated to %q, want n2", got)
	}
	if got := r.nominated("pod1"); got != "n1" {
		t.Fatalf("pod1's nomination moved to %q", got)
	}
	rep := r.settle()
	if got := victims(rep); !reflect.DeepEqual(got, []string{"default/v1@n1/delete", "default/v3@n2/delete", "default/v2@n1/delete"}) &&
		!reflect.DeepEqual(got, []string{"default/v1@n1/delete", "default/v2@n1/delete", "default/v3@n2/delete"}) {
		t.Fatalf("victims %v", got)
	}
	if p1, p2 := rep.Pod("default", "pod1"), rep.Pod("default", "pod2"); p1.Node != "n1" || p2.Node != "n2" {
		t.Fatalf("pod1 on %q, pod2 on %q", p1.Node, p2.Node)
	}
}

func TestRaceHigherPriorityPreemptionIgnoresTheNominatedPod(t *testing.T) {
	r := racing(t, nil, nodeYAML("n2", "2"), podYAML("v3", "mid", "n2", "2", "", ""))
	r.add(podYAML("pod2", "high", "", "2", "", ""))
	r.cycle()
	// pod2 ignores pod1's lower-priority nomination: removing v2 (priority
	// 10, already being deleted for pod1) beats removing v3 (500) on n2.
	if got := r.nominated("pod2"); got != "n1" {
		t.Fatalf("pod2 nominated to %q, want n1", got)
	}
	rep := r.settle()
	if p := rep.Pod("default", "pod2"); p.Status != sim.StatusScheduled || p.Node != "n1" {
		t.Fatalf("pod2 = %+v", p)
	}
	if p := rep.Pod("default", "pod1"); p.Status != sim.StatusUnschedulable || p.NominatedNode != "" {
		t.Fatalf("pod1 = %+v: it cannot fit n1 any more and its nomination must be gone", p)
	}
	if rep.Pod("default", "v3").Status == sim.StatusPreempted {
		t.Fatal("v3 preempted needlessly")
	}
}

func TestFailedPreemptionRevertsTheNominationAndSkipsTheLastVictim(t *testing.T) {
	fail := func(op memapi.Op, pod *abi.Pod) error {
		if op == memapi.OpDelete && pod.Name == "v1" {
			return memapi.ErrInternal
		}
		return nil
	}
	o := objects(t, nodeYAML("n1", "2"), podYAML("v1", "low", "n1", "1", "", ""), podYAML("v2", "low", "n1", "1", "", ""),
		podYAML("pod1", "mid", "", "2", "", ""))
	r := startRace(t, "", o, fail)
	r.cycle()
	r.env.Preemption.Wait()
	if got := r.nominated("pod1"); got != "" {
		t.Fatalf("nomination %q kept after a failed preemption", got)
	}
	if p := r.env.Cluster().Pod(r.uid("pod1")); p.NominatedNodeName != "" {
		t.Fatalf("status.nominatedNodeName %q kept", p.NominatedNodeName)
	}
	if r.env.Cluster().Pod(r.uid("v2")) == nil {
		t.Fatal("the last victim was deleted although another victim's deletion failed")
	}
	if !reflect.DeepEqual(r.m.results, []string{preemption.ResultError}) {
		t.Fatalf("goroutine results %v", r.m.results)
	}
	// Always re-activated: out of unschedulablePods without an event,
	// through its backoff (a failing API must not be retried in a loop).
	if active, backoff, parked := r.env.Queue.PendingPods(); active+backoff != 1 || parked != 0 {
		t.Fatalf("active=%d backoff=%d unschedulable=%d, want pod1 requeued", active, backoff, parked)
	}
	var warned bool
	for _, e := range r.env.Cluster().Timeline() {
		warned = warned || (e.Op == memapi.OpEvent && e.Pod == "default/pod1" && strings.Contains(e.Detail, "Warning FailedPreemption"))
	}
	if !warned {
		t.Fatal("no FailedPreemption event on the preemptor")
	}
}

// kubernetes issue #141694: a preemption whose victim is already gone
// (NotFound, so no delete event will ever come) must not strand the
// preemptor until the five-minute flush. A deletion's conflict is a gone
// victim too: its UID precondition failed, another pod has the name now.
func TestPreemptorIsAlwaysReactivated(t *testing.T) {
	for name, gone := range map[string]error{"not found": memapi.ErrNotFound, "conflict": memapi.ErrConflict} {
		t.Run(name, func(t *testing.T) {
			inject := func(op memapi.Op, pod *abi.Pod) error {
				if op == memapi.OpDelete && pod.Name == "v1" {
					return gone // counted as done, yet nothing changes
				}
				return nil
			}
			o := objects(t, nodeYAML("n1", "1"), podYAML("v1", "low", "n1", "1", "", ""), podYAML("pod1", "mid", "", "1", "", ""))
			r := startRace(t, "", o, inject)
			r.cycle()
			r.env.Preemption.Wait()
			if !reflect.DeepEqual(r.m.results, []string{preemption.ResultSuccess}) {
				t.Fatalf("goroutine results %v", r.m.results)
			}
			if active, backoff, parked := r.env.Queue.PendingPods(); active != 1 {
				t.Fatalf("active=%d backoff=%d unschedulable=%d: pod1 must be re-activated when the goroutine ends", active, backoff, parked)
			}
			if got := r.nominated("pod1"); got != "n1" {
				t.Fatalf("nomination %q, want n1 kept after success", got)
			}
		})
	}
}

func TestSyncModeFailureKeepsTheNominationAndRetriesAfterBackoff(t *testing.T) {
	fail := func(op memapi.Op, pod *abi.Pod) error {
		if op == memapi.OpDelete {
			return memapi.ErrInternal
		}
		return nil
	}
	o := objects(t, nodeYAML("n1", "1"), podYAML("v1", "low", "n1", "1", "", ""), podYAML("pod1", "mid", "", "1", "", ""))
	r := startRace(t, "{asyncPreemption: false}", o, fail)
	r.cycle()
	p := r.env.Report().Pod("default", "pod1")
	if p.Status != sim.StatusSchedulerError || !strings.Contains(p.Message, "internal error (500)") {
		t.Fatalf("pod1 = %+v", p)
	}
	if _, backoff, _ := r.env.Queue.PendingPods(); backoff != 1 {
		t.Fatal("an API error must back the pod off as an error")
	}
	if len(r.m.results) != 0 {
		t.Fatalf("sync mode ran a goroutine: %v", r.m.results)
	}
}

var _ = errors.Is
var _ = corev1.PodSpec{}

// The gate opens once the last victim is gone, even while the goroutine
// is still busy (here clearing a lower-priority nomination, held by the
// API), so the final delete event can requeue the preemptor at once
// (kube-scheduler PR #134294).
func TestGateOpensWhenTheLastVictimIsGone(t *testing.T) {
	release := make(chan struct{})
	reached := make(chan struct{})
	var once sync.Once
	hold := func(op memapi.Op, pod *abi.Pod) error {
		if op == memapi.OpNominate && pod.Name == "small" && pod.NominatedNodeName == "n1" {
			once.Do(func() { close(reached) })
			<-release
		}
		return nil
	}
	o := objects(t, nodeYAML("n1", "2"), podYAML("v1", "low", "n1", "1", "", ""), podYAML("v2", "low", "n1", "1", "", ""),
		podYAML("pod1", "mid", "", "2", "", ""), `---
apiVersion: v1
kind: Pod
metadata: {name: small}
spec: {priorityClassName: low, containers: [{name: c, image: i, resources: {requests: {cpu: "3"}}}]}
status: {nominatedNodeName: n1}
`)
	r := startRace(t, "", o, hold)
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	r.cycle() // pod1 preempts v1 and v2, then clears small's nomination: held
	select {
	case <-reached:
	case <-time.After(10 * time.Second):
		t.Fatal("the goroutine never cleared the lower-priority nomination")
	}
	if r.env.Cache.GetPod(r.uid("v2")) != nil {
		t.Fatal("the last victim is still there")
	}
	if r.env.Preemption.IsPodRunningPreemption(r.uid("pod1")) {
		t.Fatal("the gate still holds pod1 although its last victim is gone")
	}
	if got := r.nominated("small"); got != "" {
		t.Fatalf("small still nominated to %q in memory", got)
	}
	close(release)
	rep := r.settle()
	if p := rep.Pod("default", "pod1"); p.Status != sim.StatusScheduled || p.Node != "n1" {
		t.Fatalf("pod1 = %+v", p)
	}
}
