package kube

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func fastElection(id string) LeaderElection {
	return LeaderElection{LeaseName: "wasmsched", LeaseNamespace: "kube-system", Identity: id,
		LeaseDuration: 1500 * time.Millisecond, RenewDeadline: time.Second, RetryPeriod: 100 * time.Millisecond}
}

// replica runs runAsLeader in the background and reports when it leads
// and what it returned.
type replica struct {
	leading atomic.Bool
	led     chan struct{}
	done    chan error
	cancel  context.CancelFunc
}

func startReplica(t *testing.T, client *fake.Clientset, id string) *replica {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &replica{led: make(chan struct{}), done: make(chan error, 1), cancel: cancel}
	t.Cleanup(cancel)
	var once atomic.Bool
	go func() {
		r.done <- runAsLeader(ctx, client, fastElection(id), hclog.NewNullLogger(), func(ctx context.Context) {
			r.leading.Store(true)
			if once.CompareAndSwap(false, true) {
				close(r.led)
			}
			<-ctx.Done()
			r.leading.Store(false)
		})
	}()
	return r
}

func waitChan[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
	var zero T
	return zero
}

func TestOneReplicaLeadsAndAStandbyTakesOverWhenItStops(t *testing.T) {
	client := fake.NewSimpleClientset()
	var reads atomic.Int32
	client.PrependReactor("get", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		reads.Add(1)
		return false, nil, nil
	})
	a := startReplica(t, client, "a")
	waitChan(t, a.led, "a to lead")
	// The leader renews without reading the lease first (client-go's
	// fast path), so from here every read is one of b's tries.
	before := reads.Load()
	b := startReplica(t, client, "b")
	eventually(t, "several of b's tries", func() bool { return reads.Load() >= before+3 })
	if b.leading.Load() {
		t.Fatal("b leads while a holds the lease")
	}
	a.cancel()
	if err := waitChan(t, a.done, "a to return"); err != nil {
		t.Fatalf("a stopped on request but returned %v", err)
	}
	if a.leading.Load() {
		t.Fatal("a's scheduling was still running after runAsLeader returned")
	}
	waitChan(t, b.led, "b to take over")
	lease, err := client.CoordinationV1().Leases("kube-system").Get(context.Background(), "wasmsched", metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != "b" {
		t.Fatalf("lease after takeover = %+v, %v; want held by b", lease, err)
	}
}

func TestLosingTheLeaseStopsSchedulingWithAnError(t *testing.T) {
	client := fake.NewSimpleClientset()
	var unreachable atomic.Bool
	client.PrependReactor("update", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		if unreachable.Load() {
			return true, nil, errors.New("apiserver unreachable")
		}
		return false, nil, nil
	})
	a := startReplica(t, client, "a")
	waitChan(t, a.led, "a to lead")
	// From now on every renewal fails, as when the API server is
	// unreachable: a must stop scheduling once the renew deadline passes.
	unreachable.Store(true)
	err := waitChan(t, a.done, "a to give up")
	if !errors.Is(err, ErrLeadershipLost) {
		t.Fatalf("runAsLeader returned %v, want ErrLeadershipLost", err)
	}
	if a.leading.Load() {
		t.Fatal("scheduling still running after leadership was lost")
	}
}

func TestLeaderElectionTimingsAreValidated(t *testing.T) {
	for _, tc := range []struct {
		mutate func(*LeaderElection)
		want   string
	}{
		{func(le *LeaderElection) { le.LeaseName = "" }, "lease name"},
		{func(le *LeaderElection) { le.RetryPeriod = 0 }, "retry period"},
		{func(le *LeaderElection) { le.RenewDeadline = le.RetryPeriod }, "renew deadline"},
		{func(le *LeaderElection) { le.LeaseDuration = le.RenewDeadline }, "lease duration"},
	} {
		le := DefaultLeaderElection()
		tc.mutate(&le)
		err := le.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("validate(%+v) = %v, want an error about %s", le, err, tc.want)
		}
	}
	if err := DefaultLeaderElection().Validate(); err != nil {
		t.Errorf("defaults rejected: %v", err)
	}
}
