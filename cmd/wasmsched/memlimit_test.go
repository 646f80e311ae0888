package main

import (
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

// TestMemoryLimit: --memory-limit parses auto, none and byte counts and
// refuses the rest by name; auto follows GOMEMLIMIT, then the cgroup's
// limit (v2, v1, "max", v1's unlimited), and sets nothing without one.
func TestMemoryLimit(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1)) // restore

	for _, bad := range []string{"lots", "-1", "0", "1.5Ei0"} {
		var m memoryLimit
		if err := m.Set(bad); err == nil {
			t.Errorf("Set(%q) accepted", bad)
		}
	}
	noEnv := func(string) string { return "" }
	cg := func(files map[string]string) string {
		dir := t.TempDir()
		for f, v := range files {
			p := filepath.Join(dir, f)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	for _, tc := range []struct {
		flag  string
		env   func(string) string
		root  string
		want  int64
		runtm int64 // the runtime's limit afterwards
	}{
		{flag: "192Mi", env: noEnv, root: cg(nil), want: 192 << 20, runtm: 192 << 20},
		{flag: "none", env: noEnv, root: cg(map[string]string{"memory.max": "1000"}), want: 0, runtm: math.MaxInt64},
		{flag: "auto", env: noEnv, root: cg(map[string]string{"memory.max": "1000000000\n"}), want: 900000000, runtm: 900000000},
		{flag: "auto", env: noEnv, root: cg(map[string]string{"memory.max": "max\n"}), want: 0, runtm: -1},
		{flag: "auto", env: noEnv, root: cg(map[string]string{"memory/memory.limit_in_bytes": "2000000000"}), want: 1800000000, runtm: 1800000000},
		{flag: "auto", env: noEnv, root: cg(map[string]string{"memory/memory.limit_in_bytes": "9223372036854771712"}), want: 0, runtm: -1},
		{flag: "auto", env: noEnv, root: cg(nil), want: 0, runtm: -1},
	} {
		debug.SetMemoryLimit(math.MaxInt64)
		var m memoryLimit
		if err := m.Set(tc.flag); err != nil {
			t.Fatal(err)
		}
		got, from, err := m.apply(tc.env, tc.root)
		if err != nil || got != tc.want || from == "" {
			t.Errorf("%s: %d (%q), %v; want %d", tc.flag, got, from, err, tc.want)
		}
		if now := debug.SetMemoryLimit(-1); tc.runtm >= 0 && now != tc.runtm {
			t.Errorf("%s: runtime limit %d, want %d", tc.flag, now, tc.runtm)
		}
	}

	// GOMEMLIMIT wins over the cgroup under auto
	debug.SetMemoryLimit(300 << 20) // as the runtime would have from GOMEMLIMIT=300MiB
	var m memoryLimit
	got, from, err := m.apply(func(k string) string {
		if k == "GOMEMLIMIT" {
			return "300MiB"
		}
		return ""
	}, cg(map[string]string{"memory.max": "1000000000"}))
	if err != nil || got != 300<<20 || from != "GOMEMLIMIT" {
		t.Errorf("auto with GOMEMLIMIT: %d (%q), %v", got, from, err)
	}

	// an unreadable limit is an error naming the file
	_, _, err = m.apply(noEnv, cg(map[string]string{"memory.max": "lots"}))
	if err == nil || !strings.Contains(err.Error(), "memory.max") {
		t.Errorf("bad memory.max: %v", err)
	}
}
