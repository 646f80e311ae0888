package kube

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/engines/preemption"
	"github.com/wasmsched/wasmsched/internal/testwait"
)

// eventsV1Clientset is a fake clientset whose discovery serves
// events.k8s.io/v1, as every API server since Kubernetes 1.19 does.
func eventsV1Clientset() *fake.Clientset {
	client := fake.NewSimpleClientset()
	client.Resources = []*metav1.APIResourceList{{GroupVersion: eventsGroupVersion, APIResources: []metav1.APIResource{{Name: "events", Namespaced: true, Kind: "Event"}}}}
	return client
}

// waitEventV1 waits for the one events.k8s.io/v1 Event of a reason in a
// namespace and returns it.
func waitEventV1(t *testing.T, ctx context.Context, client *fake.Clientset, ns, reason string) eventsv1.Event {
	t.Helper()
	var found []eventsv1.Event
	testwait.Eventually(t, 10*time.Second, func() bool {
		found = found[:0]
		evs, err := client.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		for _, e := range evs.Items {
			if e.Reason == reason {
				found = append(found, e)
			}
		}
		return len(found) > 0
	}, "no %s Event recorded", reason)
	if len(found) != 1 {
		t.Fatalf("%d %s Events, want one: %+v", len(found), reason, found)
	}
	return found[0]
}

// TestRecorderPostsEventsV1AsKubeScheduler: Scheduled, FailedScheduling
// and Preempted go to events.k8s.io/v1 with kube-scheduler's reason,
// action and words, the profile as reporting controller and the
// replica's identity as reporting instance; a repeated Event becomes a
// series; a note past the API's limit is cut, not refused.
func TestRecorderPostsEventsV1AsKubeScheduler(t *testing.T) {
	client := eventsV1Clientset()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rec := NewRecorder(ctx, RecorderOptions{Client: client, Instance: "replica-7"})
	go rec.Run(ctx)
	p := &abi.Pod{UID: "u1", Namespace: "ns", Name: "web", SchedulerName: "my-profile"}
	rec.Scheduled(p, "my-profile", "n1")
	e := waitEventV1(t, ctx, client, "ns", "Scheduled")
	if e.Type != corev1.EventTypeNormal || e.Action != ActionBinding || e.Note != "Successfully assigned ns/web to n1" ||
		e.ReportingController != "my-profile" || e.ReportingInstance != "replica-7" ||
		e.Regarding.Kind != "Pod" || e.Regarding.APIVersion != "v1" || e.Regarding.Name != "web" || e.Regarding.UID != "u1" || e.Series != nil {
		t.Fatalf("Scheduled: %+v", e)
	}
	if got, _ := client.CoreV1().Events("ns").List(ctx, metav1.ListOptions{}); len(got.Items) != 0 {
		t.Fatalf("core/v1 Events posted too: %+v", got.Items)
	}

	// A message with a percent sign is the note as given; a second
	// identical failure counts in the first Event's series.
	const msg = "0/3 nodes are available: 3 Insufficient cpu (100% used)."
	q := &abi.Pod{UID: "u2", Namespace: "ns", Name: "big", SchedulerName: "my-profile"}
	rec.FailedScheduling(q, "my-profile", "Unschedulable", msg)
	e = waitEventV1(t, ctx, client, "ns", "FailedScheduling")
	if e.Type != corev1.EventTypeWarning || e.Action != ActionScheduling || e.Note != msg || e.ReportingController != "my-profile" {
		t.Fatalf("FailedScheduling: %+v", e)
	}
	rec.FailedScheduling(q, "my-profile", "Unschedulable", msg)
	testwait.Eventually(t, 10*time.Second, func() bool {
		evs, err := client.EventsV1().Events("ns").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		for _, e := range evs.Items {
			if e.Reason == "FailedScheduling" && e.Series != nil && e.Series.Count == 2 {
				return true
			}
		}
		return false
	}, "the repeated FailedScheduling did not become a series of 2")

	long := strings.Repeat("é", 700) // 1400 bytes
	PreemptionAPI{Client: client, Recorder: rec}.Event(&abi.Pod{UID: "u3", Namespace: "ns", Name: "victim", SchedulerName: "my-profile"}, false, preemption.ReasonPreempted, long)
	e = waitEventV1(t, ctx, client, "ns", preemption.ReasonPreempted)
	if len(e.Note) > noteLimit || !utf8.ValidString(e.Note) || !strings.HasSuffix(e.Note, " ...") || !strings.HasPrefix(long, strings.TrimSuffix(e.Note, " ...")) ||
		e.Action != ActionPreempting || e.Regarding.Name != "victim" {
		t.Fatalf("Preempted: note of %d bytes %q, %+v", len(e.Note), e.Note, e)
	}
	if e.Related != nil {
		t.Fatalf("Preempted through Event names a related object: %+v", e.Related)
	}

	// Through EventRelated, as preemption calls it, the preemptor is the
	// Event's related object.
	PreemptionAPI{Client: client, Recorder: rec}.EventRelated(&abi.Pod{UID: "u4", Namespace: "ns", Name: "victim2", SchedulerName: "my-profile"},
		&abi.Pod{UID: "u5", Namespace: "ns", Name: "preemptor"}, false, preemption.ReasonPreempted, "Preempted by pod ns/preemptor on node n1")
	testwait.Eventually(t, 10*time.Second, func() bool {
		evs, err := client.EventsV1().Events("ns").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		for _, e := range evs.Items {
			if e.Regarding.Name == "victim2" {
				if e.Related == nil || e.Related.Name != "preemptor" || e.Related.UID != "u5" || e.Related.Kind != "Pod" {
					t.Fatalf("Preempted Event's related is %+v, want the preemptor", e.Related)
				}
				return true
			}
		}
		return false
	}, "no Preempted Event on victim2")
}

// TestRecorderFallsBackToCoreV1: a server that does not serve
// events.k8s.io/v1 gets core/v1 Events with the same words, the profile
// as source component and the replica's identity as source host.
func TestRecorderFallsBackToCoreV1(t *testing.T) {
	client := fake.NewSimpleClientset() // its discovery serves nothing
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rec := NewRecorder(ctx, RecorderOptions{Client: client, Instance: "replica-7"})
	go rec.Run(ctx)
	rec.Scheduled(&abi.Pod{UID: "u1", Namespace: "ns", Name: "web"}, "my-profile", "n1")
	var evs *corev1.EventList
	testwait.Eventually(t, 10*time.Second, func() bool {
		var err error
		evs, err = client.CoreV1().Events("ns").List(ctx, metav1.ListOptions{})
		return err == nil && len(evs.Items) == 1
	}, "no core/v1 Event recorded")
	e := evs.Items[0]
	if e.Reason != "Scheduled" || e.Message != "Successfully assigned ns/web to n1" || e.Source.Component != "my-profile" || e.Source.Host != "replica-7" ||
		e.InvolvedObject.Name != "web" || e.InvolvedObject.UID != "u1" {
		t.Fatalf("event %+v", e)
	}
}

func TestTruncate(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"0123456789abc", 10, "012345 ..."},
		{"ééééé", 8, "éé ..."}, // 10 bytes: cut at a rune boundary
	} {
		if got := truncate(tc.in, tc.n); got != tc.want || len(got) > tc.n {
			t.Errorf("truncate(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

// TestRecorderBoundsEventWritesInFlight: a burst of Events is written
// with at most maxEventWritesInFlight requests at once, as an API server
// sees them, and every one of them is written.
func TestRecorderBoundsEventWritesInFlight(t *testing.T) {
	var mu sync.Mutex
	inFlight, peak, created := 0, 0, 0
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodGet && r.URL.Path == "/apis/"+eventsGroupVersion {
			_, _ = w.Write([]byte(`{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"events.k8s.io/v1","resources":[{"name":"events","namespaced":true,"kind":"Event","verbs":["create"]}]}`))
			return
		}
		if r.Method != http.MethodPost {
			http.NotFound(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		inFlight++
		peak = max(peak, inFlight)
		mu.Unlock()
		<-release
		mu.Lock()
		inFlight--
		created++
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(body)
	}))
	defer srv.Close()
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	client, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, QPS: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rec := NewRecorder(ctx, RecorderOptions{Client: client, Instance: "replica-7"})
	go rec.Run(ctx)
	const n = 5 * maxEventWritesInFlight
	for i := range n {
		rec.Scheduled(&abi.Pod{UID: fmt.Sprint("u", i), Namespace: "ns", Name: fmt.Sprint("p", i)}, "my-profile", "n1")
	}
	testwait.Eventually(t, 10*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return inFlight == maxEventWritesInFlight
	}, "the writes in flight did not reach the bound")
	time.Sleep(100 * time.Millisecond) // room to overshoot, were it possible
	close(release)
	testwait.Eventually(t, 10*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return created == n
	}, "not every Event was written")
	if peak != maxEventWritesInFlight {
		t.Errorf("peak %d writes in flight, want %d", peak, maxEventWritesInFlight)
	}
}

// TestRecorderFailedSchedulingWritesOnlyAChange: with the informer's
// copy of the pod, a FailedScheduling refers to the pod's
// resourceVersion (a changed pod gets a new Event), writes the condition
// only when the pod does not show it already, and keeps its
// lastTransitionTime while it stays False, as kube-scheduler does.
func TestRecorderFailedSchedulingWritesOnlyAChange(t *testing.T) {
	client := eventsV1Clientset()
	var mu sync.Mutex
	var patches []string
	client.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		patches = append(patches, string(a.(k8stesting.PatchAction).GetPatch()))
		return true, &corev1.Pod{}, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rec := NewRecorder(ctx, RecorderOptions{Client: client, Instance: "replica-7"})
	go rec.Run(ctx)
	cached := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "big", UID: "u1", ResourceVersion: "10"}}
	var cmu sync.Mutex
	rec.usePods(func(namespace, name string) *corev1.Pod {
		cmu.Lock()
		defer cmu.Unlock()
		if namespace == "ns" && name == "big" {
			return cached.DeepCopy()
		}
		return nil
	})
	p := &abi.Pod{UID: "u1", Namespace: "ns", Name: "big", SchedulerName: "my-profile"}
	patchCount := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(patches)
	}
	eventAt := func(rv string) {
		t.Helper()
		testwait.Eventually(t, 10*time.Second, func() bool {
			evs, err := client.EventsV1().Events("ns").List(ctx, metav1.ListOptions{})
			if err != nil {
				return false
			}
			for _, e := range evs.Items {
				if e.Reason == "FailedScheduling" && e.Regarding.ResourceVersion == rv {
					return true
				}
			}
			return false
		}, "no FailedScheduling Event referring to resourceVersion %s", rv)
	}

	rec.FailedScheduling(p, "my-profile", "Unschedulable", "first")
	eventAt("10")
	testwait.Eventually(t, 10*time.Second, func() bool { return patchCount() == 1 }, "the condition was not written")

	// The pod shows the condition now: the same failure writes nothing.
	since := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	cmu.Lock()
	cached.ResourceVersion = "11"
	cached.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "first", LastTransitionTime: since}}
	cmu.Unlock()
	rec.FailedScheduling(p, "my-profile", "Unschedulable", "first")
	eventAt("11")
	time.Sleep(100 * time.Millisecond)
	if n := patchCount(); n != 1 {
		t.Fatalf("%d status patches after an unchanged failure, want 1", n)
	}

	// A new message is written, keeping the time the pod became
	// unschedulable.
	rec.FailedScheduling(p, "my-profile", "Unschedulable", "second")
	testwait.Eventually(t, 10*time.Second, func() bool { return patchCount() == 2 }, "the changed condition was not written")
	mu.Lock()
	last := patches[1]
	mu.Unlock()
	if !strings.Contains(last, `"message":"second"`) || !strings.Contains(last, `"lastTransitionTime":"2026-01-02T03:04:05Z"`) {
		t.Errorf("patch %s: want the new message and the old lastTransitionTime", last)
	}
}

// TestPatchQueueKeepsTheLatestPerPodAndKind: a newer patch of a pod
// replaces its waiting one of the same kind, in the older one's place;
// other kinds and pods keep theirs, oldest first.
func TestPatchQueueKeepsTheLatestPerPodAndKind(t *testing.T) {
	q := newPatchQueue()
	q.add(statusPatch{uid: "a", kind: patchCondition, body: []byte("a1")})
	q.add(statusPatch{uid: "b", kind: patchCondition, body: []byte("b1")})
	q.add(statusPatch{uid: "a", kind: patchNomination, body: []byte("an")})
	q.add(statusPatch{uid: "a", kind: patchCondition, body: []byte("a2")})
	if q.len() != 3 {
		t.Fatalf("%d waiting, want 3", q.len())
	}
	var got []string
	for p, ok := q.next(); ok; p, ok = q.next() {
		got = append(got, string(p.body))
	}
	if fmt.Sprint(got) != "[a2 b1 an]" {
		t.Errorf("drained %v, want [a2 b1 an]", got)
	}
}

// TestRecorderDropsNoStatusPatchUnderABacklog: thousands of failures
// reported before the patcher runs are all written.
func TestRecorderDropsNoStatusPatchUnderABacklog(t *testing.T) {
	client := eventsV1Clientset()
	var patched atomic.Int64
	client.PrependReactor("patch", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		patched.Add(1)
		return true, &corev1.Pod{}, nil
	})
	client.PrependReactor("create", "events", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, &eventsv1.Event{}, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rec := NewRecorder(ctx, RecorderOptions{Client: client, Instance: "replica-7"})
	const n = 3000
	for i := range n {
		rec.FailedScheduling(&abi.Pod{UID: fmt.Sprint("u", i), Namespace: "ns", Name: fmt.Sprint("p", i)}, "my-profile", "Unschedulable", "no")
	}
	go rec.Run(ctx)
	testwait.Eventually(t, 20*time.Second, func() bool { return patched.Load() == n }, "%d of %d status patches written", patched.Load(), n)
}

// TestInstanceSinkCreatesThroughRESTClient: with a real clientset the
// sink posts an Event to its namespace's events.k8s.io/v1 collection, with
// no query parameters and the replica's reportingInstance, and hands the
// broadcaster the server's copy back (series are patched against it).
func TestInstanceSinkCreatesThroughRESTClient(t *testing.T) {
	srv := newRecordingServer(t, func(e eventsv1.Event) (int, any) {
		e.ResourceVersion = "7"
		return http.StatusCreated, e
	})
	client, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, ContentConfig: rest.ContentConfig{ContentType: "application/json"}})
	if err != nil {
		t.Fatal(err)
	}
	sink := newInstanceSink(client, "replica-1")
	if sink.rest == nil {
		t.Fatal("a real clientset's sink posts through the typed client")
	}
	ev := &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p.1"}, Reason: "Scheduled", Note: "Successfully assigned ns/p to n1"}
	created, err := sink.Create(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	if created.ResourceVersion != "7" || created.Name != "p.1" || created.ReportingInstance != "replica-1" {
		t.Fatalf("created = %+v; want the server's copy", created)
	}
	const want = "POST /apis/events.k8s.io/v1/namespaces/ns/events?"
	got, sent := srv.requests()
	if len(got) != 1 || got[0] != want || sent[0].ReportingInstance != "replica-1" || sent[0].Reason != "Scheduled" {
		t.Fatalf("requests = %q, sent %+v; want one %q", got, sent, want)
	}
	if _, err := sink.Create(context.Background(), &eventsv1.Event{}); err == nil {
		t.Fatal("an Event without a namespace was posted")
	}
}
