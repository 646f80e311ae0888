//go:build wasmtime

package wasmtime

import (
	"context"
	"testing"
	"time"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/internal/fixtures"
	"github.com/wasmsched/wasmsched/host/platform/guest"
	"github.com/wasmsched/wasmsched/host/platform/runtime/wasm"
	"github.com/wasmsched/wasmsched/internal/testwasm"
)

// defaultInstance is an initialised instance of the default bundle's
// TinyGo build.
func defaultInstance(tb testing.TB) *instance {
	tb.Helper()
	ctx := context.Background()
	rt, err := NewRuntime("", nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { rt.Close(ctx) })
	b, err := rt.Compile(ctx, "default", testwasm.TinyGoBytes(tb, testwasm.Default), wasm.Limits{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { b.Close(ctx) })
	inst, err := b.NewInstance(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { inst.Close(ctx) })
	return inst.(*instance)
}

// TestUncheckedCallsAgreeWithFuncCall: the one-crossing call path reads
// the same results, and the same memory, as wasmtime-go's checked
// Func.Call.
func TestUncheckedCallsAgreeWithFuncCall(t *testing.T) {
	ctx := context.Background()
	inst := defaultInstance(t)
	v, err := inst.ABIVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got, err := inst.fns[fnVersion].Call(inst.store)
	if err != nil {
		t.Fatal(err)
	}
	if want := uint32(got.(int32)); v != want || v>>16 != abi.VersionMajor {
		t.Fatalf("ABI version %#x by the unchecked call, %#x by Func.Call; want major %d", v, want, abi.VersionMajor)
	}
	buf, err := inst.Input(ctx, 16)
	if err != nil {
		t.Fatal(err)
	}
	ptr, err := inst.fns[fnInput].Call(inst.store, int32(16))
	if err != nil {
		t.Fatal(err)
	}
	mem := inst.mem.UnsafeData(inst.store)
	if len(mem) != len(inst.calls.memory()) {
		t.Fatalf("memory of %d bytes by the call block, %d by wasmtime-go", len(inst.calls.memory()), len(mem))
	}
	copy(buf, "unchecked call")
	if p := ptr.(int32); string(mem[p:p+14]) != "unchecked call" {
		t.Fatalf("the input buffer the unchecked call returned is not where Func.Call says: %q", mem[p:p+16])
	}
}

// BenchmarkRawCall is the cost of one call into the guest (its ABI
// version export, which does nothing) through the call block and through
// wasmtime-go's Func.Call.
func BenchmarkRawCall(b *testing.B) {
	ctx := context.Background()
	inst := defaultInstance(b)
	b.Run("path=unchecked", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := inst.ABIVersion(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("path=Func.Call", func(b *testing.B) {
		inst.store.SetEpochDeadline(1 << 40)
		for i := 0; i < b.N; i++ {
			if _, err := inst.fns[fnVersion].Call(inst.store); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// capture is a backend that remembers the instances it makes.
type capture struct {
	*Backend
	made []*instance
}

func (c *capture) NewInstance(ctx context.Context) (guest.Instance, error) {
	inst, err := c.Backend.NewInstance(ctx)
	if err == nil {
		c.made = append(c.made, inst.(*instance))
	}
	return inst, err
}

// BenchmarkFuelRate measures how much fuel the default bundle's TinyGo
// build burns per second of Filter and Score calls over 5000 nodes, the
// rate FuelPerSecond converts timeouts with.
func BenchmarkFuelRate(b *testing.B) {
	ctx := context.Background()
	rt, err := NewRuntimeWithOptions("", nil, Options{Interrupt: InterruptFuel})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close(ctx)
	be, err := rt.Compile(ctx, "default", testwasm.TinyGoBytes(b, testwasm.Default), wasm.Limits{})
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close(ctx)
	cb := &capture{Backend: be}
	m, err := guest.Load(ctx, cb, guest.PoolConfig{Name: "default", PoolSize: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close(ctx)
	c, err := m.Get(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer m.Put(ctx, c)
	snap := fixtures.Cluster(5000, 10000)
	all := fixtures.Slots(snap)
	pod := fixtures.Pod("fuel", 0)
	if err := c.Sync(ctx, snap); err != nil {
		b.Fatal(err)
	}
	inst := cb.made[len(cb.made)-1]
	var fuel uint64
	var spent time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := c.StartCycle(ctx, &pod); err != nil {
			b.Fatal(err)
		}
		for p, info := range m.Manifest().Plugins {
			if !info.Points.Has(abi.PointFilter) && !info.Points.Has(abi.PointScore) {
				continue
			}
			start := time.Now()
			if info.Points.Has(abi.PointFilter) {
				_, err = c.Filter(ctx, p, all)
			} else {
				_, err = c.Score(ctx, p, all)
			}
			spent += time.Since(start)
			if err != nil {
				b.Fatal(err)
			}
			left, err := inst.store.GetFuel()
			if err != nil {
				b.Fatal(err)
			}
			fuel += be.fuel - left
		}
	}
	b.ReportMetric(float64(fuel)/spent.Seconds(), "fuel/s")
}
