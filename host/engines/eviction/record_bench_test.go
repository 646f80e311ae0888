package eviction

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/engines/decision"
	"github.com/wasmsched/wasmsched/host/platform/modules"
)

// BenchmarkEvictionRoundExplain is BenchmarkEvictionRound's steady round
// (5000 nodes, 50 000 pods, the three default policies on the Wasm
// bundle) with decision records off and on (each round's record kept in
// a ring of decision.DefaultRingSize, as serve keeps them), rounds
// alternated so both see the same machine: compare ns/op of
// explain=off and explain=on of one run (cpu-ms/round: the
// process's CPU time, steadier than wall time on a shared machine). WASMSCHED_BENCH_ROUNDS sets the
// rounds (default 3), WASMSCHED_BENCH_NODES the nodes.
func BenchmarkEvictionRoundExplain(b *testing.B) {
	nodes, rounds := 5000, 3
	if v, err := strconv.Atoi(os.Getenv("WASMSCHED_BENCH_NODES")); err == nil && v > 0 {
		nodes = v
	}
	if v, err := strconv.Atoi(os.Getenv("WASMSCHED_BENCH_ROUNDS")); err == nil && v > 0 {
		rounds = v
	}
	c, u := benchCluster(nodes, 10)
	cfg := config.Default()
	cfg.Eviction = &config.Eviction{Policies: []config.EvictionPolicy{
		{Plugin: "ResourceOvercommit"}, {Plugin: "NodePressure"}, {Plugin: "UsageThreshold"}}}
	ctx := context.Background()
	want := referenceVictims(b, cfg, c, u)
	reg, err := modules.Load(ctx, cfg, modules.Options{CacheDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer reg.Close(ctx)
	coord := benchCoordinator(b, cfg, reg, c, u)
	defer coord.Close(ctx)
	checkRound(b, "first round", coord.RunRound(ctx), want)
	for r := 1; r <= rounds; r++ {
		for _, on := range []bool{false, true} {
			mode := "off"
			if on {
				mode = "on"
			}
			b.Run(fmt.Sprintf("round=%d/explain=%s", r, mode), func(b *testing.B) {
				var ring *decision.Ring
				coord.decisions = nil
				if on {
					ring = decision.NewRing(decision.DefaultRingSize)
					coord.decisions = ring
				}
				var cpu time.Duration
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					cpu0 := processCPU()
					rd := coord.RunRound(ctx)
					b.StopTimer()
					cpu += processCPU() - cpu0
					checkRound(b, fmt.Sprintf("round %d", i+1), rd, want)
					if on != (rd.Record() != nil) {
						b.Fatalf("explain=%s: record %v", mode, rd.Record() != nil)
					}
					b.StartTimer()
				}
				b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/round")
			})
		}
	}
}

// processCPU is the CPU time (user and system) the process has used: on
// a shared machine it moves less with other load than wall time does.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
