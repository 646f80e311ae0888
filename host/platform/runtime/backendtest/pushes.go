package backendtest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/internal/fixtures"
	"github.com/wasmsched/wasmsched/host/platform/guest"
	"github.com/wasmsched/wasmsched/host/platform/runtime/wasm"
)

// The host's pushes (a sync of its cluster mirror first of all) run
// under the call timeout plus guest.PushAllowance of the bytes pushed
// (guest.Pushable): moving a big cluster into a fresh instance is the
// host's work and may take many call timeouts, yet a guest that never
// returns from a push is still stopped, once its allowance is spent. The
// cases use testdata/slowpush.wat, whose sync hashes every byte it is
// sent, with a call timeout far shorter than such a sync takes.
var pushCases = []wasmCase{
	{"deadlines/a push runs under the call timeout plus an allowance for its size", pushWithinAllowance},
	{"deadlines/a push that never returns is stopped once its allowance is spent", pushEndless},
	{"deadlines/a fresh instance's first sync of a big cluster answers under a short call timeout", firstSyncAnswers},
	{"deadlines/a guest looping in its first sync is stopped and the instance lost", firstSyncEndless},
}

const (
	// pushTimeout is the call timeout of the push cases: shorter than
	// slowpush takes over pushBytes or over pushCluster's sync.
	pushTimeout = 10 * time.Millisecond
	// pushBytes is what the instance-level cases push.
	pushBytes = 1 << 20
	// pushNodes is the size of the cluster the pool-level cases sync.
	pushNodes = 5000
)

// slowpushEndless is the call that makes slowpush's sync loop forever.
const slowpushEndless abi.Func = 0xFFFFFFFF

// pushWithinAllowance: a sync slower than the call timeout is cut
// without an allowance and answers with one. (The sync cut is four
// times as big, so that it is slower than the call timeout on a fast
// runtime and machine too: slowpush takes 50 ns a byte on wasmtime and
// 200 on wazero on the 2-core development machine.)
func pushWithinAllowance(t *testing.T, s *suite) {
	b, _ := s.compile(t, "slowpush", Guest(t, "slowpush"), wasm.Limits{CallTimeout: pushTimeout})
	_, err := pushSync(t, freshInstance(t, s, b), 4*pushBytes, 0)
	wantFault(t, err, guest.ErrDeadlineExceeded, "wasmsched_call: ", fmt.Sprintf("deadline of %s exceeded", pushTimeout))
	allow := guest.PushAllowance(pushBytes)
	took, err := pushSync(t, freshInstance(t, s, b), pushBytes, allow)
	if err != nil {
		t.Fatalf("a sync of %d bytes with %v allowed: %v", pushBytes, allow, err)
	}
	t.Logf("a sync of %d bytes took %v (call timeout %v, allowance %v)", pushBytes, took, pushTimeout, allow)
}

// pushEndless: a push that never returns is stopped at the call timeout
// plus its allowance, not before and not much later, and the allowance
// ends with the push.
func pushEndless(t *testing.T, s *suite) {
	b, _ := s.compile(t, "slowpush", Guest(t, "slowpush"), wasm.Limits{CallTimeout: pushTimeout})
	const n = pushBytes / 4
	allow := guest.PushAllowance(n)
	inst := freshInstance(t, s, b)
	if _, err := call(inst, slowpushEndless, 0); err != nil {
		t.Fatal(err)
	}
	took, err := pushSync(t, inst, n, allow)
	budget := pushTimeout + allow
	t.Logf("stopped %v after the call timeout plus allowance", took-budget)
	wantFault(t, err, guest.ErrDeadlineExceeded, "wasmsched_call: ",
		fmt.Sprintf("deadline of %s exceeded (the call timeout %s and %s allowed for the state the host pushed)", budget, pushTimeout, allow))
	if took < budget {
		t.Errorf("stopped after %v, before its budget of %v", took, budget)
	}
	if took > budget+maxOverrun {
		t.Errorf("stopped after %v: more than %v past its budget of %v", took, maxOverrun, budget)
	}

	// Once the push is over, calls are back to the call timeout.
	inst = freshInstance(t, s, b)
	if _, err := call(inst, slowpushEndless, 0); err != nil {
		t.Fatal(err)
	}
	inst.(guest.Pushable).AllowPush(allow)
	inst.(guest.Pushable).AllowPush(0)
	_, err = pushSync(t, inst, n, 0)
	wantFault(t, err, guest.ErrDeadlineExceeded, fmt.Sprintf("deadline of %s exceeded", pushTimeout))
}

// firstSyncAnswers: through the pool, a fresh instance's first sync of
// a 5000-node cluster answers although it takes longer than the call
// timeout, and the instance then serves calls under the call timeout.
func firstSyncAnswers(t *testing.T, s *suite) {
	b, _ := s.compile(t, "slowpush", Guest(t, "slowpush"), wasm.Limits{CallTimeout: pushTimeout})
	m := load(t, b, guest.PoolConfig{Name: "slowpush", PoolSize: 1})
	c, err := m.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Put(context.Background(), c)
	snap := fixtures.Cluster(pushNodes, pushNodes)
	start := time.Now()
	if err := c.Sync(context.Background(), snap); err != nil {
		t.Fatalf("first sync of %d nodes under a call timeout of %v: %v", pushNodes, pushTimeout, err)
	}
	took := time.Since(start)
	t.Logf("the first sync of %d nodes took %v (call timeout %v)", pushNodes, took, pushTimeout)
	if took <= pushTimeout {
		t.Fatalf("the sync took %v, no longer than the call timeout %v: the case proves nothing; sync a bigger cluster", took, pushTimeout)
	}
	pod := fixtures.Pod("p", 0)
	if err := c.StartCycle(context.Background(), &pod); err != nil {
		t.Fatalf("the call after the sync: %v", err)
	}
	if c.Broken() || m.Lost() != 0 {
		t.Errorf("the instance was lost (lost %d)", m.Lost())
	}
}

// firstSyncEndless: a guest that never returns from its first sync is
// stopped once the sync's allowance is spent, and the pool loses the
// instance, the error naming the module, the sync and the budget.
func firstSyncEndless(t *testing.T, s *suite) {
	b, _ := s.compile(t, "slowpush", Guest(t, "slowpush"), wasm.Limits{CallTimeout: pushTimeout})
	m := load(t, endlessSync{b}, guest.PoolConfig{Name: "slowpush", PoolSize: 1})
	ctx := context.Background()
	c, err := m.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	snap := fixtures.Cluster(pushNodes/4, 0)
	done := make(chan error, 1)
	go func() { done <- c.Sync(ctx, snap) }()
	select {
	case err = <-done:
	case <-time.After(pushTimeout + guest.PushAllowance(64<<20) + 10*time.Second):
		t.Fatal("the sync was not stopped")
	}
	if !errors.Is(err, guest.ErrInstanceBroken) {
		t.Errorf("err = %v: the instance is not lost", err)
	}
	wantFault(t, err, guest.ErrDeadlineExceeded, `module "slowpush"`, "sync", "allowed for the state the host pushed")
	m.Put(ctx, c)
	if m.Lost() != 1 {
		t.Errorf("lost %d instances, want 1", m.Lost())
	}
}

// endlessSync is a slowpush backend whose instances loop forever in sync.
type endlessSync struct{ guest.Backend }

// NewInstance implements guest.Backend.
func (e endlessSync) NewInstance(ctx context.Context) (guest.Instance, error) {
	inst, err := e.Backend.NewInstance(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := inst.Call(ctx, slowpushEndless, 0, 0); err != nil {
		inst.Close(ctx)
		return nil, err
	}
	return inst, nil
}

// Close leaves the backend to the test's cleanup.
func (e endlessSync) Close(context.Context) error { return nil }

// freshInstance is a new instance of b, closed when the test ends.
func freshInstance(t *testing.T, s *suite, b guest.Backend) guest.Instance {
	t.Helper()
	ctx := context.Background()
	inst, err := b.NewInstance(ctx)
	if err != nil {
		t.Fatalf("%s: new instance: %v", s.rt.Name, err)
	}
	t.Cleanup(func() { inst.Close(ctx) })
	if _, ok := inst.(guest.Pushable); !ok {
		t.Fatalf("%s: instances do not implement guest.Pushable", s.rt.Name)
	}
	return inst
}

// pushSync sends slowpush's sync n bytes with allow on top of the call
// timeout, and says how long the call took.
func pushSync(t *testing.T, inst guest.Instance, n int, allow time.Duration) (time.Duration, error) {
	t.Helper()
	ctx := context.Background()
	p := inst.(guest.Pushable)
	p.AllowPush(allow)
	defer p.AllowPush(0)
	buf, err := inst.Input(ctx, n)
	if err != nil {
		t.Fatalf("input of %d bytes: %v", n, err)
	}
	for i := range buf {
		buf[i] = byte(i)
	}
	start := time.Now()
	_, err = inst.Call(ctx, abi.FuncSync, 0, n)
	return time.Since(start), err
}
