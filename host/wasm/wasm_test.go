package wasm_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/metrics"
	"github.com/wasmsched/wasmsched/host/policy"
	"github.com/wasmsched/wasmsched/host/snapshot"
	"github.com/wasmsched/wasmsched/host/wasm"
	"github.com/wasmsched/wasmsched/internal/testlog"
	"github.com/wasmsched/wasmsched/internal/testmetrics"
	"github.com/wasmsched/wasmsched/internal/testwasm"
)

// sharedCacheDir is the compilation cache of the tests' runtimes: each
// test makes its own runtime, but the Go build of a guest, slow to compile
// (above all with -race), is compiled once.
var sharedCacheDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "wasmsched-wasm-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sharedCacheDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func newRuntime(t *testing.T) (*wasm.Runtime, *testlog.Buffer) {
	t.Helper()
	logs := &testlog.Buffer{}
	log := hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Trace})
	rt, err := wasm.NewRuntime(sharedCacheDir, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	return rt, logs
}

func testdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCompileRefusesModulesThatAreNotWasmschedReactors(t *testing.T) {
	rt, _ := newRuntime(t)
	for _, tc := range []struct {
		file string
		want []string
	}{
		{"bad_exports.wasm", []string{"missing export wasmsched_call", "export wasmsched_input has signature (i64) -> (i32), want (i32) -> (i32)"}},
		{"command.wasm", []string{"is a command (exports _start)", "-buildmode=c-shared"}},
		{"foreign_import.wasm", []string{"imports env.open_socket, which the host does not provide"}},
		{"garbage", []string{`module "garbage": module cannot be instrumented: not a Wasm 1.0 binary`}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			var bin []byte
			if tc.file == "garbage" {
				bin = []byte("\x00asm but not really")
			} else {
				bin = testdata(t, tc.file)
			}
			_, err := rt.Compile(context.Background(), tc.file, bin, wasm.Limits{})
			if err == nil {
				t.Fatal("compile succeeded, want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestLoadRefusesABIVersionMismatch(t *testing.T) {
	rt, _ := newRuntime(t)
	ctx := context.Background()
	b, err := rt.Compile(ctx, "v2", testdata(t, "abi_v2.wasm"), wasm.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = policy.Load(ctx, b, policy.Config{Name: "v2"})
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf(`module "v2": built for ABI v2.0, but this host speaks ABI v1.%d`, abi.VersionMinor)) {
		t.Fatalf("err = %v, want an ABI version mismatch naming both versions", err)
	}
}

// builds runs a test against the TinyGo and the Go build of a guest.
func builds(t *testing.T, g testwasm.Guest, fn func(t *testing.T, bin []byte)) {
	t.Run("tinygo", func(t *testing.T) { fn(t, testwasm.TinyGoBytes(t, g)) })
	t.Run("go", func(t *testing.T) { fn(t, testwasm.GoBytes(t, g)) })
}

func TestLoadRefusesModuleMissingARequiredPlugin(t *testing.T) {
	builds(t, testwasm.Misbehave, func(t *testing.T, bin []byte) {
		rt, _ := newRuntime(t)
		ctx := context.Background()
		b, err := rt.Compile(ctx, "misbehave", bin, wasm.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = policy.Load(ctx, b, policy.Config{Name: "misbehave", Require: []string{"Misbehave", "NodePorts"}})
		if !errors.Is(err, policy.ErrMissingPlugin) || !strings.Contains(err.Error(), `"NodePorts" (it implements Misbehave)`) {
			t.Fatalf("err = %v, want a missing-plugin error naming NodePorts and what the module has", err)
		}
	})
}

func oneNode() *snapshot.Snapshot {
	s := snapshot.New()
	s.SetNode(abi.Node{Name: "n1", AllowedPods: 110, Allocatable: abi.Resources{MilliCPU: 4000, Memory: 8 << 30}})
	return s
}

// runFilter runs one cycle of the Misbehave plugin for a pod named name.
func runFilter(ctx context.Context, m *policy.Module, snap *snapshot.Snapshot, name string) (*abi.FilterReply, error) {
	c, err := m.Get(ctx)
	if err != nil {
		return nil, err
	}
	defer m.Put(ctx, c)
	if err := c.Sync(ctx, snap); err != nil {
		return nil, err
	}
	if err := c.StartCycle(ctx, &abi.Pod{Name: name, Namespace: "default", UID: name}); err != nil {
		return nil, err
	}
	slots := []uint32{snap.Nodes()[0].Slot}
	return c.Filter(ctx, 0, slots)
}

// TestMisbehavingGuestYieldsErrorAndHostKeepsServing also checks that each
// failure is counted as what it was: a trap under guest_traps_total, a
// runaway loop under guest_deadline_exceeded_total, both labelled with the
// module and plugin, and that lost instances leave module_instances. The
// memory hog is counted once under either: whether the guest's allocator
// gives up before the deadline depends on the build and the machine.
func TestMisbehavingGuestYieldsErrorAndHostKeepsServing(t *testing.T) {
	builds(t, testwasm.Misbehave, func(t *testing.T, bin []byte) {
		rt, logs := newRuntime(t)
		ctx := context.Background()
		const deadline = 200 * time.Millisecond
		b, err := rt.Compile(ctx, "misbehave", bin, wasm.Limits{MemoryBytes: 32 << 20, CallTimeout: deadline})
		if err != nil {
			t.Fatal(err)
		}
		reg := prometheus.NewRegistry()
		met, err := metrics.New(reg)
		if err != nil {
			t.Fatal(err)
		}
		m, err := policy.Load(ctx, b, policy.Config{Name: "misbehave", PoolSize: 2, Metrics: met})
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close(ctx)
		snap := oneNode()
		labels := testmetrics.Labels{"module": "misbehave", "plugin": "Misbehave"}
		traps := func() float64 { return testmetrics.Value(t, reg, "wasmsched_guest_traps_total", labels) }
		deadlines := func() float64 {
			return testmetrics.Value(t, reg, "wasmsched_guest_deadline_exceeded_total", labels)
		}
		instances := func() float64 {
			return testmetrics.Value(t, reg, "wasmsched_module_instances", testmetrics.Labels{"module": "misbehave"})
		}

		for i, tc := range []struct {
			pod              string
			want             string
			traps, deadlines float64 // added by this pod; -1: either, once
		}{
			{"trap", "instance lost", 1, 0},
			{"loop", "deadline of 200ms exceeded", 0, 1},
			{"hog", "instance lost", -1, -1},
		} {
			traps0, deadlines0 := traps(), deadlines()
			start := time.Now()
			_, err := runFilter(ctx, m, snap, tc.pod)
			took := time.Since(start)
			if !errors.Is(err, policy.ErrInstanceBroken) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: err = %v, want a broken-instance error saying %q", tc.pod, err, tc.want)
			}
			if !strings.Contains(err.Error(), `filter plugin "Misbehave"`) {
				t.Errorf("%s: error %q does not name the plugin", tc.pod, err)
			}
			// Generous bound: the deadline plus instantiation on a loaded machine.
			if took > 10*deadline {
				t.Errorf("%s: took %v, want it stopped near the %v deadline", tc.pod, took, deadline)
			}
			if got := m.Lost(); got != int64(i+1) {
				t.Errorf("after %s: %d instances lost, want %d", tc.pod, got, i+1)
			}
			dt, dd := traps()-traps0, deadlines()-deadlines0
			if tc.traps < 0 && dt+dd != 1 || tc.traps >= 0 && (dt != tc.traps || dd != tc.deadlines) {
				t.Errorf("%s (%v): counted %v traps and %v deadlines; want %v and %v (-1: one of either)",
					tc.pod, err, dt, dd, tc.traps, tc.deadlines)
			}
			if got := instances(); got != 0 {
				t.Errorf("after %s: %v live instances, want 0 (one instance, lost)", tc.pod, got)
			}
			// The module keeps serving with a fresh instance.
			r, err := runFilter(ctx, m, snap, "ok")
			if err != nil {
				t.Fatalf("after %s, a well-behaved call failed: %v", tc.pod, err)
			}
			if len(r.Indexes) != 1 || r.Indexes[0] != 0 {
				t.Fatalf("after %s, the node did not pass: %+v", tc.pod, r)
			}
			if got := instances(); got != 1 {
				t.Errorf("after %s and a good call: %v live instances, want 1", tc.pod, got)
			}
		}
		if _, err := runFilter(ctx, m, snap, "log"); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(logs.String(), "misbehave says hello from n1: module=misbehave plugin=Misbehave") {
			t.Errorf("guest log line missing or untagged; logs:\n%s", logs)
		}
	})
}

func TestReplyOutsideGuestMemoryBreaksTheInstance(t *testing.T) {
	rt, _ := newRuntime(t)
	ctx := context.Background()
	b, err := rt.Compile(ctx, "bad-reply", testdata(t, "bad_reply.wasm"), wasm.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = policy.Load(ctx, b, policy.Config{Name: "bad-reply"})
	if err == nil || !strings.Contains(err.Error(), "outside guest memory") {
		t.Fatalf("err = %v, want the out-of-memory reply refused", err)
	}
}
