package vpod

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/wasmsched/wasmsched/host/engines/decision"
)

// BenchmarkPlaceAllExplain is BenchmarkPlaceAll on the Wasm bundle with
// decision records off and on (every Schedule call's record kept in a
// ring of decision.DefaultRingSize, as serve keeps them), rounds
// alternated so both see the same machine: compare ns/vreplica of
// explain=off and explain=on of one run (cpu-ns/vreplica: the
// process's CPU time, steadier than wall time on a shared machine). WASMSCHED_BENCH_ROUNDS sets the
// rounds (default 3).
func BenchmarkPlaceAllExplain(b *testing.B) {
	ctx := context.Background()
	rounds := 3
	if v, err := strconv.Atoi(os.Getenv("WASMSCHED_BENCH_ROUNDS")); err == nil && v > 0 {
		rounds = v
	}
	p, err := NewPolicies(ctx, knativeRegistry(b, "wasm"), benchPolicy, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close(ctx)
	vpods, total := benchVPodList()
	for r := 1; r <= rounds; r++ {
		for _, on := range []bool{false, true} {
			mode := "off"
			if on {
				mode = "on"
			}
			b.Run(fmt.Sprintf("round=%d/explain=%s", r, mode), func(b *testing.B) {
				var placed int64
				var cpu time.Duration
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					c := benchClusterOf(vpods)
					rng := rand.New(rand.NewSource(int64(i)))
					o := Options{Rand: rng.Int63n}
					var ring *decision.Ring
					if on {
						ring = decision.NewRing(decision.DefaultRingSize)
						o.Decisions = ring
					}
					s, err := New(Settings{Name: "bench", Namespace: testNS, StatefulSet: testSTS, Capacity: benchCapacity, Strategy: StrategyPolicy, SchedPolicy: benchPolicy},
						c, p, o)
					if err != nil {
						b.Fatal(err)
					}
					cpu0 := processCPU()
					b.StartTimer()
					for _, v := range vpods {
						ps, err := s.Schedule(ctx, v)
						if err != nil {
							b.Fatalf("%s: %v", v.Key, err)
						}
						c.Commit(v.Key, ps)
					}
					placed += total
					b.StopTimer()
					cpu += processCPU() - cpu0
					if on {
						if _, _, added, _ := ring.Stats(); added != len(vpods) {
							b.Fatalf("ring got %d records for %d vpods", added, len(vpods))
						}
					}
					b.StartTimer()
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(placed), "ns/vreplica")
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(placed), "cpu-ns/vreplica")
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
