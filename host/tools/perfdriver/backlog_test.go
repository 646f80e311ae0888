package perfdriver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/clock"
)

// fakeProcess is a Scheduler that is this test process (so /proc has its
// CPU time and peak RSS) and runs fakeScheduler while "running".
type fakeProcess struct {
	cancel  context.CancelFunc
	exited  chan struct{}
	err     error
	stopped atomic.Bool
}

func (p *fakeProcess) PID() int                { return os.Getpid() }
func (p *fakeProcess) Exited() <-chan struct{} { return p.exited }
func (p *fakeProcess) Err() error              { return p.err }
func (p *fakeProcess) Stop() error {
	p.stopped.Store(true)
	p.cancel()
	return nil
}

// startFake returns an Options.StartScheduler that starts fakeScheduler
// for schedulerName, and, when events is set, has every binding followed
// by a Scheduled Event. seen, if set, is called at the start.
func startFake(t *testing.T, client *fake.Clientset, schedulerName string, events bool, seen func(), proc **fakeProcess) func(context.Context) (Scheduler, error) {
	return func(ctx context.Context) (Scheduler, error) {
		if seen != nil {
			seen()
		}
		sctx, cancel := context.WithCancel(context.Background())
		p := &fakeProcess{cancel: cancel, exited: make(chan struct{})}
		if proc != nil {
			*proc = p
		}
		if events {
			client.PrependReactor("update", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
				pod := a.(k8stesting.UpdateAction).GetObject().(*corev1.Pod)
				go func() {
					e := &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name + ".scheduled"},
						Reason: "Scheduled", Regarding: corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name}}
					if _, err := client.EventsV1().Events(pod.Namespace).Create(sctx, e, metav1.CreateOptions{}); err != nil && sctx.Err() == nil {
						t.Errorf("fake scheduler: post Event: %v", err)
					}
				}()
				return false, nil, nil
			})
		}
		fakeScheduler(sctx, t, client, schedulerName)
		return p, nil
	}
}

// In a backlog run no pod is bound until every measured pod exists; then
// the driver starts the scheduler, measures from there, counts the
// Events, reads the process's CPU time and peak RSS, and stops it.
func TestBacklogStartsTheSchedulerOnceThePodsExist(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := fake.NewClientset()
	var atStart int
	var proc *fakeProcess
	seen := func() {
		pods, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Error(err)
		}
		atStart = len(pods.Items)
	}
	rep, err := Run(ctx, client, Options{Nodes: 3, InitPods: 6, InitPodsBound: true, Pods: 25, SchedulerName: "perf-test", Parallelism: 4,
		Backlog: true, StartScheduler: startFake(t, client, "perf-test", true, seen, &proc), EventsWait: 20 * time.Second, Label: "fake"})
	if err != nil {
		t.Fatal(err)
	}
	if atStart != 31 {
		t.Errorf("%d pods existed when the scheduler started, want all 31 (6 init, 25 measured)", atStart)
	}
	if !rep.Complete || !rep.Backlog || rep.Label != "fake" || rep.Bound != 25 || rep.PodsPerSecond <= 0 || rep.WallSeconds <= 0 || rep.CreateSeconds <= 0 {
		t.Errorf("report = %+v", rep)
	}
	if rep.SchedulerCPUSeconds <= 0 || rep.SchedulerPeakRSSBytes <= 0 || rep.ColdStartSeconds <= 0 {
		t.Errorf("scheduler facts: CPU %v s, peak RSS %d, cold start %v s", rep.SchedulerCPUSeconds, rep.SchedulerPeakRSSBytes, rep.ColdStartSeconds)
	}
	// The init pods were created bound: the scheduler placed the 25 measured ones.
	if want := rep.SchedulerCPUSeconds / 25; rep.SchedulerCPUSecondsPerPod != want {
		t.Errorf("CPU per pod %v, want %v", rep.SchedulerCPUSecondsPerPod, want)
	}
	if rep.Events == nil || rep.Events.PodsScheduled != 25 || rep.Events.Scheduled != 25 || rep.Events.FailedBindings != 0 {
		t.Errorf("events = %+v", rep.Events)
	}
	if !proc.stopped.Load() {
		t.Error("the scheduler was not stopped")
	}
}

// A measured pod bound while no scheduler was started means another
// scheduler serves the pods: the backlog would measure nothing.
func TestBacklogRefusesAnotherScheduler(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := fake.NewClientset()
	fakeScheduler(ctx, t, client, "perf-test") // already running
	// Slow the creates so that the running scheduler binds some first.
	client.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		time.Sleep(5 * time.Millisecond)
		return false, nil, nil
	})
	started := false
	_, err := Run(ctx, client, Options{Nodes: 2, Pods: 20, SchedulerName: "perf-test", Parallelism: 1, Backlog: true,
		StartScheduler: func(context.Context) (Scheduler, error) { started = true; return nil, errors.New("unreachable") }})
	if err == nil || !strings.Contains(err.Error(), "before the scheduler was started: another scheduler serves spec.schedulerName \"perf-test\"") {
		t.Fatalf("err = %v", err)
	}
	if started {
		t.Error("the scheduler was started anyway")
	}
}

// A scheduler that exits during the run ends it, and the error says how
// it exited rather than only that a context was canceled.
func TestRunEndsWhenTheSchedulerExits(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := fake.NewClientset()
	start := func(context.Context) (Scheduler, error) {
		p := &fakeProcess{cancel: func() {}, exited: make(chan struct{}), err: errors.New("scheduler command \"x\" (pid 7) ended: exit status 2")}
		go func() { time.Sleep(200 * time.Millisecond); close(p.exited) }()
		return p, nil
	}
	rep, err := Run(ctx, client, Options{Nodes: 2, Pods: 10, StartScheduler: start, Timeout: 30 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "exit status 2") {
		t.Fatalf("err = %v", err)
	}
	if rep == nil || rep.Complete || !strings.Contains(rep.Incomplete, "exit status 2") {
		t.Fatalf("report = %+v", rep)
	}
}

func TestBacklogOptionsAreChecked(t *testing.T) {
	start := func(context.Context) (Scheduler, error) { return nil, errors.New("unreachable") }
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{Nodes: 5, Pods: 4, Backlog: true}, "needs the command that starts it"},
		{Options{Nodes: 5, Pods: 4, InitPods: 3, Backlog: true, StartScheduler: start}, "3 init pods would wait for a scheduler that is not running yet; create them bound"},
		{Options{Nodes: 5, Pods: 4, SchedulerPID: os.Getpid(), StartScheduler: start}, "scheduler pid and a scheduler to start"},
		{Options{Nodes: 5, Pods: 4, EventsWait: -time.Second}, "events wait"},
	} {
		if _, err := Run(context.Background(), fake.NewClientset(), c.o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.o, err, c.want)
		}
	}
}

// Events are counted per pod and per occurrence: a series counts its
// repeats, a core/v1 Event its count, and a FailedScheduling Event whose
// note says the binding was rejected is a failed binding.
func TestCountEvents(t *testing.T) {
	ctx := context.Background()
	pod := func(name string) corev1.ObjectReference {
		return corev1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: name}
	}
	var objs []runtime.Object
	add := func(name, reason, note string, regarding corev1.ObjectReference, series int32, count int32) {
		e := &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Reason: reason, Note: note, Regarding: regarding, DeprecatedCount: count}
		if series > 0 {
			e.Series = &eventsv1.EventSeries{Count: series}
		}
		objs = append(objs, e)
	}
	add("a", "Scheduled", "Successfully assigned ns/pod-0 to n", pod("pod-0"), 0, 0)
	add("b", "Scheduled", "Successfully assigned ns/pod-1 to n", pod("pod-1"), 0, 0)
	add("c", "Scheduled", "again", pod("pod-1"), 3, 0)
	add("d", "FailedScheduling", "binding rejected: etcdserver: request timed out", pod("pod-2"), 0, 2)
	add("e", "FailedScheduling", "0/3 nodes are available: 3 Insufficient cpu.", pod("pod-2"), 2, 0)
	add("f", "Scheduled", "not a pod", corev1.ObjectReference{Kind: "Node", Name: "pod-3"}, 0, 0)
	client := fake.NewClientset(objs...)
	c, err := countEvents(ctx, client, "ns")
	if err != nil {
		t.Fatal(err)
	}
	want := EventCount{Listed: 6, PodsScheduled: 2, Scheduled: 5, FailedScheduling: 4, FailedBindings: 2}
	if c != want {
		t.Errorf("count = %+v, want %+v", c, want)
	}

	client.PrependReactor("list", "events", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, fmt.Errorf("the server could not find the requested resource")
	})
	if _, err := countEvents(ctx, client, "ns"); err == nil || !strings.Contains(err.Error(), `list the Events of namespace "ns" (events.k8s.io/v1)`) {
		t.Errorf("err = %v", err)
	}
}

// waitEvents stops waiting at its deadline with what it counted, when a
// pod never gets its Scheduled Event.
func TestWaitEventsGivesUpAtTheDeadline(t *testing.T) {
	client := fake.NewClientset(&eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}, Reason: "Scheduled",
		Regarding: corev1.ObjectReference{Kind: "Pod", Name: "pod-0"}})
	c, waited, err := waitEvents(context.Background(), client, clock.RealClock{}, "ns", 2, 300*time.Millisecond)
	if err != nil || c.PodsScheduled != 1 || waited < 300*time.Millisecond {
		t.Errorf("count %+v after %v, err %v", c, waited, err)
	}
}

func TestStartCommand(t *testing.T) {
	c, err := StartCommand("sleep 30", &strings.Builder{})
	if err != nil {
		t.Fatal(err)
	}
	// The shell execs the command: the PID becomes sleep's.
	var comm []byte
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if comm, err = os.ReadFile(fmt.Sprintf("/proc/%d/comm", c.PID())); err != nil || string(comm) == "sleep\n" {
			break
		}
	}
	if err != nil || strings.TrimSpace(string(comm)) != "sleep" {
		t.Errorf("process %d is %q (%v), want sleep", c.PID(), comm, err)
	}
	if c.Err() != nil {
		t.Errorf("running: Err = %v", c.Err())
	}
	if err := c.Stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
	select {
	case <-c.Exited():
	default:
		t.Error("not exited after Stop")
	}

	var out strings.Builder
	c, err = StartCommand(`sh -c "echo broken >&2; exit 3"`, &out)
	if err != nil {
		t.Fatal(err)
	}
	<-c.Exited()
	if err := c.Err(); err == nil || !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "ended") {
		t.Errorf("Err = %v", err)
	}
	if err := c.Stop(); err == nil {
		t.Error("Stop of a process that had ended on its own: no error")
	}
	if !strings.Contains(out.String(), "broken") {
		t.Errorf("output %q", out.String())
	}
	if _, err := StartCommand("  ", &out); err == nil {
		t.Error("an empty command: no error")
	}
}
