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

	schedulingv1 "k8s.io/api/scheduling/v1"
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

// TestGenerateKindIsDeterministic: a seed names a case of every kind.
func TestGenerateKindIsDeterministic(t *testing.T) {
	for _, k := range Kinds {
		a, err := GenerateKind(k, 42).YAML()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := GenerateKind(k, 42).YAML()
		if string(a) != string(b) || string(GenerateKind(k, 42).Config) != string(GenerateKind(k, 42).Config) {
			t.Errorf("kind %s: seed 42 gave two different cases", k.Name)
		}
		c, _ := GenerateKind(k, 43).YAML()
		if string(a) == string(c) {
			t.Errorf("kind %s: seeds 42 and 43 gave the same case", k.Name)
		}
	}
}

// TestGeneratedKindsAreValid: every object passes kube-apiserver's
// validation, and every configuration kube-scheduler's.
func TestGeneratedKindsAreValid(t *testing.T) {
	for _, k := range Kinds {
		for seed := uint64(1); seed <= 100; seed++ {
			c := GenerateKind(k, seed)
			classes := map[string]*schedulingv1.PriorityClass{}
			for _, pc := range c.PriorityClasses {
				classes[pc.Name] = pc
			}
			for _, o := range c.objects() {
				if err := admit(o.DeepCopyObject(), classes); err != nil {
					t.Errorf("kind %s seed %d: %v", k.Name, seed, err)
				}
			}
			if len(c.Config) > 0 {
				if _, err := decodeConfig(c.Config); err != nil {
					t.Errorf("kind %s seed %d: %v", k.Name, seed, err)
				}
			}
		}
	}
}

// TestCompareCycles checks the verdicts on several cycles.
func TestCompareCycles(t *testing.T) {
	c := twoNodes("1")
	placed := func(pod string, top ...string) *PodOutcome { return &PodOutcome{Pod: pod, Top: top, Chosen: top[0]} }
	chose := func(pod, node string) *PodOutcome { return &PodOutcome{Pod: pod, Chosen: node} }
	msg := "0/2 nodes are available: 2 Insufficient cpu. preemption: found a potential placement for pod on node a, preempting 1 victims"
	preempt := &PodOutcome{Pod: "p", Message: msg, Nominated: "a", Choices: []VictimChoice{{Node: "a", Victims: []string{"v1"}}, {Node: "b", Victims: []string{"v2"}}}}
	wsMsg := "0/2 nodes are available: 2 Insufficient cpu. preemption: found a potential placement for pod on node b, preempting 1 victims"
	for _, tc := range []struct {
		name   string
		up, ws []*PodOutcome
		want   string
	}{
		{"same order, tie member", []*PodOutcome{placed("p", "a"), placed("q", "a", "b")}, []*PodOutcome{chose("p", "a"), chose("q", "b")}, ""},
		{"other order", []*PodOutcome{placed("p", "a"), placed("q", "a")}, []*PodOutcome{chose("q", "a"), chose("p", "a")}, KindOrder},
		{"a pod more", []*PodOutcome{placed("p", "a")}, []*PodOutcome{chose("p", "a"), chose("q", "a")}, KindOrder},
		{"outside the best", []*PodOutcome{placed("p", "a")}, []*PodOutcome{chose("p", "b")}, KindPlacement},
		{"an equally good victim set, then its node", []*PodOutcome{preempt, placed("p", "a")},
			[]*PodOutcome{{Pod: "p", Message: wsMsg, Nominated: "b", Victims: []string{"v2"}}, chose("p", "b")}, ""},
		{"other victims", []*PodOutcome{preempt}, []*PodOutcome{{Pod: "p", Message: wsMsg, Nominated: "b", Victims: []string{"v1"}}}, KindVictims},
		{"no preemption", []*PodOutcome{preempt}, []*PodOutcome{{Pod: "p", Message: "x"}}, KindPreemption},
		{"refused", []*PodOutcome{placed("p", "a")}, []*PodOutcome{{Pod: refusedPod, Message: "bad"}}, KindRefused},
	} {
		m := CompareCycles(c, tc.up, tc.ws)
		got := ""
		if m != nil {
			got = m.Kind
		}
		if got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}
