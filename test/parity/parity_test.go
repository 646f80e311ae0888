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

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
)

var (
	flagN      = flag.Int("parity.n", 20, "number of generated cases of each kind (make parity runs 1000)")
	flagSeed   = flag.Uint64("parity.seed", 1, "seed of the first case; case i has seed+i")
	flagOnly   = flag.String("parity.only", "", "comma-separated rule families to run (default: all, in turn); see Families")
	flagNative = flag.Bool("parity.native", false, "run wasmsched's builtin bundle as its native twin instead of the committed Wasm build")
	flagShow   = flag.Int("parity.show", 1, "mismatches shown in full per family (the smallest cases)")
	flagDump   = flag.String("parity.dump", "", "directory to write every mismatching case's manifests to (family-seed.yaml, for wasmsched simulate)")
	flagV      = flag.Bool("parity.v", false, "log every case's outcome")
)

func TestMain(m *testing.M) {
	flag.Parse()
	klog.SetLogger(logr.Discard()) // kube-scheduler's own logging
	os.Exit(m.Run())
}

// families returns the families -parity.only names, or all.
func families(t *testing.T) []Family {
	if *flagOnly == "" {
		return Families
	}
	var out []Family
	for _, name := range strings.Split(*flagOnly, ",") {
		f, ok := FamilyNamed(strings.TrimSpace(name))
		if !ok {
			var names []string
			for _, f := range Families {
				names = append(names, f.Name)
			}
			t.Fatalf("-parity.only: no family %q (families: %s)", name, strings.Join(names, ", "))
		}
		out = append(out, f)
	}
	return out
}

// TestParity generates -parity.n cases, the families in turn, and checks
// each pending pod's outcome under wasmsched against kube-scheduler
// v1.37's. Mismatches are reported per family, the smallest cases in
// full.
func TestParity(t *testing.T) {
	if !kindSelected(t, "single") {
		t.Skip("-parity.kind does not select single")
	}
	ctx := context.Background()
	ws, err := NewWasmsched(ctx, *flagNative)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close(ctx)
	fams := families(t)
	type tally struct {
		cases      int
		unsched    int
		preempts   int
		allTied    int // placed, several feasible nodes, all scored the same: nothing to compare but feasibility
		mismatches []*Mismatch
		kinds      map[string]int
	}
	tallies := map[string]*tally{}
	start := time.Now()
	var harness []string
	for i := 0; i < *flagN; i++ {
		f := fams[i%len(fams)]
		c := Generate(f, *flagSeed+uint64(i))
		tl := tallies[f.Name]
		if tl == nil {
			tl = &tally{kinds: map[string]int{}}
			tallies[f.Name] = tl
		}
		tl.cases++
		up, err := RunUpstream(ctx, c)
		if err != nil {
			harness = append(harness, fmt.Sprintf("family %s seed %d: %v", f.Name, c.Seed, err))
			continue
		}
		if up.Message != "" {
			tl.unsched++
		}
		if up.Nominated != "" {
			tl.preempts++
		}
		if len(up.Scores) > 1 && len(up.Top) == len(up.Scores) {
			tl.allTied++
		}
		res, err := ws.Place(ctx, c)
		if err != nil {
			harness = append(harness, fmt.Sprintf("family %s seed %d: %v", f.Name, c.Seed, err))
			continue
		}
		m := Compare(c, up, res)
		if *flagV {
			verdict := "same"
			if m != nil {
				verdict = m.Kind + ": " + m.Summary()
			}
			t.Logf("%s seed %d: %s", f.Name, c.Seed, verdict)
		}
		if m == nil {
			continue
		}
		tl.mismatches = append(tl.mismatches, m)
		tl.kinds[m.Kind]++
		if *flagDump != "" {
			if err := dump(*flagDump, m); err != nil {
				t.Error(err)
			}
		}
	}
	elapsed := time.Since(start)

	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FAMILY\tCASES\tUNSCHEDULABLE\tPREEMPTS\tALL-TIED\tMISMATCHES\tKINDS")
	total := 0
	for _, f := range fams {
		tl := tallies[f.Name]
		if tl == nil {
			continue
		}
		var kinds []string
		for k, n := range tl.kinds {
			kinds = append(kinds, fmt.Sprintf("%s=%d", k, n))
		}
		sort.Strings(kinds)
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%s\n", f.Name, tl.cases, tl.unsched, tl.preempts, tl.allTied, len(tl.mismatches), strings.Join(kinds, " "))
		total += len(tl.mismatches)
	}
	tw.Flush()
	t.Logf("%d cases in %v (%v per case)\n%s", *flagN, elapsed.Round(time.Millisecond), (elapsed / time.Duration(max(*flagN, 1))).Round(time.Microsecond), b.String())

	for _, h := range harness {
		t.Errorf("harness: %s", h)
	}
	if total == 0 {
		return
	}
	for _, f := range fams {
		tl := tallies[f.Name]
		if tl == nil || len(tl.mismatches) == 0 {
			continue
		}
		ms := append([]*Mismatch(nil), tl.mismatches...)
		sort.SliceStable(ms, func(i, j int) bool { return ms[i].Case.size() < ms[j].Case.size() })
		for _, m := range ms[:min(*flagShow, len(ms))] {
			t.Log("\n" + m.Detail())
		}
		var seeds []string
		for _, m := range tl.mismatches {
			seeds = append(seeds, fmt.Sprint(m.Case.Seed))
		}
		t.Errorf("family %s: %d of %d cases differ from kube-scheduler (seeds %s)", f.Name, len(tl.mismatches), tl.cases, strings.Join(seeds, " "))
	}
}

func dump(dir string, m *Mismatch) error {
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
	return nil
}
