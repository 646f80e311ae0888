package main

import (
	"fmt"
	"math"
	"runtime/debug"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/wasmsched/wasmsched/host/platform/cgroup"
)

// memoryLimit is serve's --memory-limit: the Go runtime's soft memory
// limit (runtime/debug.SetMemoryLimit), which makes the garbage collector
// run more often as the process nears it instead of letting the heap grow
// to twice what is live (GOGC=100). The scheduler's live heap is mostly
// the cluster (informer caches, the snapshot, the guests' linear memory),
// so without a limit its peak is about twice that; a limit trades
// collector CPU for that headroom.
//
// "auto" (the default) leaves a GOMEMLIMIT from the environment alone and
// otherwise takes 90% of the container's memory limit (cgroup v2
// memory.max, v1 memory.limit_in_bytes), as a pod's resources.limits.memory
// sets it: the collector works harder near the limit rather than the
// kernel killing the container. Without either, there is no limit. "none"
// sets none; a byte count ("192Mi") sets that.
type memoryLimit struct {
	value string // as given: "auto", "none" or a quantity
	bytes int64  // the parsed quantity, for a byte count
}

func (m *memoryLimit) String() string {
	if m.value == "" {
		return "auto"
	}
	return m.value
}

func (m *memoryLimit) Type() string { return "auto|none|bytes" }

func (m *memoryLimit) Set(s string) error {
	switch s {
	case "auto", "none":
		m.value, m.bytes = s, 0
		return nil
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return fmt.Errorf("want auto, none or a byte count such as 192Mi: %w", err)
	}
	n, ok := q.AsInt64()
	if !ok || n <= 0 {
		return fmt.Errorf("%s: want a positive byte count that fits in 63 bits", s)
	}
	m.value, m.bytes = s, n
	return nil
}

// autoMemoryShare is the share of the container's memory limit "auto"
// gives the Go runtime: the rest covers what the runtime does not count
// (the binary's pages, compiled Wasm code, memory being returned).
const autoMemoryShare = 0.9

// apply sets the runtime's limit and says what it set, for the log: the
// bytes (0: none) and where they came from. getenv and cgroupRoot are
// os.Getenv and "/sys/fs/cgroup" outside tests.
func (m *memoryLimit) apply(getenv func(string) string, cgroupRoot string) (int64, string, error) {
	switch m.value {
	case "none":
		debug.SetMemoryLimit(math.MaxInt64)
		return 0, "--memory-limit none", nil
	case "", "auto":
		if env := getenv("GOMEMLIMIT"); env != "" {
			return debug.SetMemoryLimit(-1), "GOMEMLIMIT", nil // the runtime applied it at start
		}
		limit, err := cgroup.MemoryLimit(cgroupRoot)
		if err != nil {
			return 0, "", fmt.Errorf("--memory-limit auto: %w", err)
		}
		if limit <= 0 {
			return 0, "no container memory limit", nil
		}
		n := int64(float64(limit) * autoMemoryShare)
		debug.SetMemoryLimit(n)
		return n, "90% of the container's memory limit", nil
	}
	debug.SetMemoryLimit(m.bytes)
	return m.bytes, "--memory-limit", nil
}
