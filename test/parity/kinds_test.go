package parity

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"text/tabwriter"
	"time"
)

var flagKind = flag.String("parity.kind", "", "comma-separated case kinds to run: single (the families), "+
	"queue, preemption, profiles, labelkeys (default: all); -parity.n cases of each")

// kindSelected reports whether -parity.kind asks for name.
func kindSelected(t *testing.T, name string) bool {
	if *flagKind == "" {
		return true
	}
	for _, k := range strings.Split(*flagKind, ",") {
		k = strings.TrimSpace(k)
		if _, ok := KindNamed(k); !ok && k != "single" {
			var names []string
			for _, k := range Kinds {
				names = append(names, k.Name)
			}
			t.Fatalf("-parity.kind: no kind %q (kinds: single, %s)", k, strings.Join(names, ", "))
		}
		if k == name {
			return true
		}
	}
	return false
}

// TestParityKinds runs -parity.n cases of each selected kind beyond the
// single-pod families and compares every cycle with kube-scheduler's.
func TestParityKinds(t *testing.T) {
	ctx := context.Background()
	var kinds []Kind
	for _, k := range Kinds {
		if kindSelected(t, k.Name) {
			kinds = append(kinds, k)
		}
	}
	if len(kinds) == 0 {
		t.Skip("-parity.kind selects none of the multi-cycle kinds")
	}
	ws, err := NewWasmsched(ctx, *flagNative)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close(ctx)
	for _, k := range kinds {
		t.Run(k.Name, func(t *testing.T) { runKind(t, ctx, ws, k) })
	}
}

func runKind(t *testing.T, ctx context.Context, ws *Wasmsched, k Kind) {
	var (
		mismatches []*CycleMismatch
		kinds      = map[string]int{}
		cycles     int
		unsched    int
		preempts   int
		tied       int
		harness    []string
	)
	start := time.Now()
	for i := 0; i < *flagN; i++ {
		c := GenerateKind(k, *flagSeed+uint64(i))
		res, err := ws.Cycles(ctx, c)
		if err != nil {
			harness = append(harness, fmt.Sprintf("seed %d: %v", c.Seed, err))
			continue
		}
		up, err := RunUpstreamCycles(ctx, c, res)
		if err != nil {
			harness = append(harness, fmt.Sprintf("seed %d: %v", c.Seed, err))
			continue
		}
		for _, o := range up {
			cycles++
			if o.Message != "" {
				unsched++
			}
			if o.Nominated != "" {
				preempts++
				if len(o.Choices) > 1 {
					tied++
				}
			}
		}
		m := CompareCycles(c, up, res)
		if *flagV {
			verdict := "same"
			if m != nil {
				verdict = m.Kind + ": " + m.Summary()
			}
			t.Logf("%s seed %d (%d cycles): %s", k.Name, c.Seed, len(up), verdict)
		}
		if m == nil {
			continue
		}
		mismatches = append(mismatches, m)
		kinds[m.Kind]++
		if *flagDump != "" {
			if err := dumpCycles(*flagDump, m); err != nil {
				t.Error(err)
			}
		}
	}
	elapsed := time.Since(start)
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tCASES\tCYCLES\tUNSCHEDULABLE\tPREEMPTS\tPREEMPT-TIES\tMISMATCHES\tKINDS")
	var ks []string
	for kk, n := range kinds {
		ks = append(ks, fmt.Sprintf("%s=%d", kk, n))
	}
	sort.Strings(ks)
	fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", k.Name, *flagN, cycles, unsched, preempts, tied, len(mismatches), strings.Join(ks, " "))
	tw.Flush()
	t.Logf("%d cases in %v (%v per case)\n%s", *flagN, elapsed.Round(time.Millisecond), (elapsed / time.Duration(max(*flagN, 1))).Round(time.Microsecond), b.String())
	for _, h := range harness {
		t.Errorf("harness: %s", h)
	}
	if len(mismatches) == 0 {
		return
	}
	ms := append([]*CycleMismatch(nil), mismatches...)
	sort.SliceStable(ms, func(i, j int) bool { return ms[i].Case.size() < ms[j].Case.size() })
	for _, m := range ms[:min(*flagShow, len(ms))] {
		t.Log("\n" + m.Detail())
	}
	var seeds []string
	for _, m := range mismatches {
		seeds = append(seeds, fmt.Sprint(m.Case.Seed))
	}
	t.Errorf("kind %s: %d of %d cases differ from kube-scheduler (seeds %s)", k.Name, len(mismatches), *flagN, strings.Join(seeds, " "))
}

func dumpCycles(dir string, m *CycleMismatch) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("-parity.dump: %w", err)
	}
	y, err := m.Case.YAML()
	if err != nil {
		return err
	}
	head := "# " + strings.ReplaceAll(m.Summary(), "\n", " ") + "\n"
	p := filepath.Join(dir, fmt.Sprintf("%s-%d.yaml", m.Case.Family, m.Case.Seed))
	if err := os.WriteFile(p, append([]byte(head), y...), 0o644); err != nil {
		return fmt.Errorf("-parity.dump: %w", err)
	}
	if len(m.Case.Config) > 0 {
		p = filepath.Join(dir, fmt.Sprintf("%s-%d.config.yaml", m.Case.Family, m.Case.Seed))
		if err := os.WriteFile(p, m.Case.Config, 0o644); err != nil {
			return fmt.Errorf("-parity.dump: %w", err)
		}
	}
	return nil
}
