package perfdriver

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// A measured pod whose create fails (the API server restarted: the
// connection was reset) ends the run with that error, and the report it
// returns says the run is incomplete and why, with what was measured.
func TestRunWithAFailedCreateIsIncomplete(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := fake.NewClientset()
	fakeScheduler(ctx, t, client, "perf-test")
	var creates atomic.Int32
	client.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		if creates.Add(1) == 12 {
			return true, nil, &resetError{}
		}
		return false, nil, nil
	})
	rep, err := Run(ctx, client, Options{Nodes: 2, Pods: 40, SchedulerName: "perf-test", Parallelism: 1})
	if err == nil || !errors.Is(err, syscall.ECONNRESET) || !strings.Contains(err.Error(), "create pod") {
		t.Fatalf("err = %v, want the failed create", err)
	}
	if rep == nil || rep.Complete || !strings.Contains(rep.Incomplete, "connection reset by peer") {
		t.Fatalf("report %+v: want it incomplete, saying why", rep)
	}
}

// resetError is what a reset connection looks like to client-go.
type resetError struct{}

func (*resetError) Error() string {
	return "write tcp 127.0.0.1:1->127.0.0.1:2: write: connection reset by peer"
}
func (*resetError) Unwrap() error { return syscall.ECONNRESET }
