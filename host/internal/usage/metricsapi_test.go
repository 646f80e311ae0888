package usage

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	"k8s.io/metrics/pkg/client/clientset/versioned/fake"

	"github.com/wasmsched/wasmsched/internal/testlog"
)

// The fake clientset lists NodeMetrics as resource "nodes" and PodMetrics
// as "pods" (their REST paths), which its tracker cannot guess from the
// kinds, so objects go in through Tracker().Create with these.
var (
	nodesGVR = metricsv1beta1.SchemeGroupVersion.WithResource("nodes")
	podsGVR  = metricsv1beta1.SchemeGroupVersion.WithResource("pods")
)

type clock struct{ t atomic.Int64 }

func (c *clock) now() time.Time          { return time.Unix(0, c.t.Load()) }
func (c *clock) advance(d time.Duration) { c.t.Add(int64(d)) }

func newFake(t *testing.T) *fake.Clientset {
	t.Helper()
	cs := fake.NewSimpleClientset()
	add := func(gvr schema.GroupVersionResource, obj runtime.Object, ns string) {
		if err := cs.Tracker().Create(gvr, obj, ns); err != nil {
			t.Fatal(err)
		}
	}
	n1, bad := nodeMetrics("n1", "2", "4Gi"), nodeMetrics("half", "1", "")
	add(nodesGVR, &n1, "")
	add(nodesGVR, &bad, "")
	web := podMetrics("team", "web", ctr("app", "100m", "64Mi"), ctr("side", "20m", "16Mi"))
	db := podMetrics("data", "db", ctr("pg", "1", "1Gi"))
	empty := podMetrics("team", "starting")
	add(podsGVR, &web, "team")
	add(podsGVR, &db, "data")
	add(podsGVR, &empty, "team")
	return cs
}

func lists(cs *fake.Clientset) int {
	n := 0
	for _, a := range cs.Actions() {
		if a.GetVerb() == "list" {
			n++
		}
	}
	return n
}

func TestMetricsAPIReadsEveryNamespace(t *testing.T) {
	cs := newFake(t)
	m := NewMetricsAPI(cs, MetricsAPIOptions{})
	snap, err := m.Usage(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if u := snap.Node("n1"); u == nil || u.MilliCPU != 2000 || u.Memory != 4<<30 || u.Timestamp != t0.UnixNano() {
		t.Fatalf("n1 = %+v", u)
	}
	if u := snap.Pod("team", "web"); u == nil || u.MilliCPU != 120 || u.Memory != 80<<20 {
		t.Fatalf("team/web = %+v", u)
	}
	if u := snap.Pod("data", "db"); u == nil || u.MilliCPU != 1000 {
		t.Fatalf("data/db = %+v", u)
	}
	// Incomplete records are no data, not zeros.
	if snap.Node("half") != nil || snap.Pod("team", "starting") != nil {
		t.Fatal("an incomplete record became a usage")
	}
	for _, a := range cs.Actions() {
		if a.GetResource().Resource == "pods" && a.GetNamespace() != "" {
			t.Fatalf("pods listed in namespace %q, want all", a.GetNamespace())
		}
	}
}

func TestMetricsAPICachesForTheTTL(t *testing.T) {
	cs := newFake(t)
	c := &clock{}
	m := NewMetricsAPI(cs, MetricsAPIOptions{TTL: time.Second, Now: c.now})
	first, err := m.Usage(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c.advance(999 * time.Millisecond)
	again, err := m.Usage(context.Background())
	if err != nil || again != first || lists(cs) != 2 {
		t.Fatalf("within the TTL: same snapshot %v, %d lists, err %v; want one node and one pod list", again == first, lists(cs), err)
	}
	n2 := nodeMetrics("n2", "1", "1Gi")
	if err := cs.Tracker().Create(nodesGVR, &n2, ""); err != nil {
		t.Fatal(err)
	}
	c.advance(time.Millisecond)
	fresh, err := m.Usage(context.Background())
	if err != nil || fresh == first || lists(cs) != 4 || fresh.Node("n2") == nil {
		t.Fatalf("after the TTL: new snapshot %v, %d lists, n2 %+v, err %v", fresh != first, lists(cs), fresh.Node("n2"), err)
	}

	// Concurrent callers of one round share one fetch.
	c.advance(time.Hour)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := m.Usage(context.Background()); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if lists(cs) != 6 {
		t.Fatalf("%d lists after 8 concurrent calls, want 6", lists(cs))
	}
}

func TestMetricsAPINotServed(t *testing.T) {
	gr := schema.GroupResource{Group: metricsv1beta1.GroupName, Resource: "nodes"}
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"group not registered", apierrors.NewGenericServerResponse(404, "list", gr, "", "the server could not find the requested resource", 0, true)},
		{"not found", apierrors.NewNotFound(gr, "")},
		{"backend down", apierrors.NewServiceUnavailable("the server is currently unable to handle the request")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := newFake(t)
			var served atomic.Bool
			cs.PrependReactor("list", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
				if served.Load() {
					return false, nil, nil
				}
				return true, nil, tc.err
			})
			logs := &testlog.Buffer{}
			m := NewMetricsAPI(cs, MetricsAPIOptions{TTL: -1, Log: hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Info})})
			for i := 0; i < 3; i++ {
				snap, err := m.Usage(context.Background())
				if err != nil {
					t.Fatalf("err = %v, want none", err)
				}
				if snap == nil || snap.Node("n1") != nil || snap.Pod("team", "web") != nil {
					t.Fatalf("snapshot has data: %+v", snap)
				}
			}
			if lists(cs) != 3 {
				t.Fatalf("%d lists, want 3 (a negative TTL refetches)", lists(cs))
			}
			if n := strings.Count(logs.String(), "not served"); n != 1 {
				t.Fatalf("logged %d times, want once:\n%s", n, logs.String())
			}
			if !strings.Contains(logs.String(), "[INFO]") || !strings.Contains(logs.String(), "will see no data") {
				t.Fatalf("log = %s", logs.String())
			}
			served.Store(true)
			snap, err := m.Usage(context.Background())
			if err != nil || snap.Node("n1") == nil {
				t.Fatalf("once served: %+v, %v", snap, err)
			}
			if !strings.Contains(logs.String(), "served again") {
				t.Fatalf("the recovery is not logged:\n%s", logs.String())
			}
		})
	}
}

func TestMetricsAPIReturnsOtherErrors(t *testing.T) {
	cs := newFake(t)
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: metricsv1beta1.GroupName, Resource: "pods"}, "", errors.New("RBAC"))
	cs.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, forbidden
	})
	m := NewMetricsAPI(cs, MetricsAPIOptions{TTL: time.Hour})
	for i := 0; i < 2; i++ {
		snap, err := m.Usage(context.Background())
		if snap != nil || !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "usage: list PodMetrics") {
			t.Fatalf("snap %v, err = %v; want the wrapped Forbidden", snap, err)
		}
	}
	// An error is not cached: the second call listed again.
	if lists(cs) != 4 {
		t.Fatalf("%d lists, want 4", lists(cs))
	}
}

func TestMetricsAPIWaitHonoursTheContext(t *testing.T) {
	m := NewMetricsAPI(newFake(t), MetricsAPIOptions{})
	m.lock <- struct{}{} // another caller is fetching
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := m.Usage(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the deadline", err)
	}
}
