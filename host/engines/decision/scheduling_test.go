package decision

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// SetScores keeps exactly the MaxScored highest totals (plus the chosen
// and pinned nodes), in order, whatever the input order.
func TestSetScoresKeepsTheTop(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 200; round++ {
		n := 1 + r.IntN(300)
		totals := make([]int64, n)
		norm := [][]int64{make([]int64, n)}
		for i := range totals {
			totals[i] = int64(r.IntN(20))
			norm[0][i] = totals[i]
		}
		chosen := r.IntN(n)
		s := NewScheduling(Limits{MaxScored: 1 + r.IntN(20)})
		s.Pin = fmt.Sprintf("n%03d", r.IntN(n))
		name := func(i int) string { return fmt.Sprintf("n%03d", i) }
		s.SetScores(n, name, []ScorePlugin{{Name: "p", Weight: 1}}, ScoreTable{RawRows: norm, NormalizedRows: norm}, totals, chosen)
		sorted := slices.Clone(totals)
		slices.Sort(sorted)
		slices.Reverse(sorted)
		k := min(s.Limits.MaxScored, n)
		var keptTop []int64
		for _, ns := range s.Scores {
			if ns.Total != totals[mustAtoi(t, ns.Node)] || ns.Weighted[0] != ns.Total {
				t.Fatalf("round %d: %s kept with wrong scores %+v", round, ns.Node, ns)
			}
			keptTop = append(keptTop, ns.Total)
		}
		if s.ScoreOf(name(chosen)) == nil || s.ScoreOf(s.Pin) == nil {
			t.Fatalf("round %d: chosen or pinned node dropped", round)
		}
		if len(s.Scores) > k+2 || len(s.Scores) < k || s.ScoredDropped != n-len(s.Scores) {
			t.Fatalf("round %d: kept %d of %d (max %d), dropped %d", round, len(s.Scores), n, k, s.ScoredDropped)
		}
		// Every dropped total is at most the k-th highest.
		if n > len(s.Scores) {
			kth := sorted[k-1]
			for i := 0; i < n; i++ {
				if s.ScoreOf(name(i)) == nil && totals[i] > kth {
					t.Fatalf("round %d: dropped %s with %d above the %d-th total %d", round, name(i), totals[i], k, kth)
				}
			}
		}
		if !slices.IsSortedFunc(s.Scores, func(a, b NodeScore) int { return int(b.Total - a.Total) }) {
			t.Fatalf("round %d: scores not sorted: %v", round, keptTop)
		}
		ties := 0
		for i, v := range totals {
			if i != chosen && v == totals[chosen] {
				ties++
			}
		}
		if s.TiedCount != ties {
			t.Fatalf("round %d: %d tied, want %d", round, s.TiedCount, ties)
		}
	}
}

func mustAtoi(t *testing.T, node string) int {
	var i int
	if _, err := fmt.Sscanf(node, "n%03d", &i); err != nil {
		t.Fatal(err)
	}
	return i
}

// A record of many rejected nodes with long reasons stays within its
// limits and counts what it dropped.
func TestFinishBoundsTheRecord(t *testing.T) {
	s := NewScheduling(Limits{})
	long := strings.Repeat("é", 10000)
	for i := 0; i < 5000; i++ {
		s.Reject(fmt.Sprintf("n%05d", i), fmt.Sprintf("P%d", i%50), "Unschedulable", []string{long + fmt.Sprint(i%40)})
	}
	s.Finish()
	if len(s.Rejected) != DefaultLimits.MaxNodes || s.RejectedDropped != 5000-DefaultLimits.MaxNodes {
		t.Errorf("kept %d verdicts, dropped %d", len(s.Rejected), s.RejectedDropped)
	}
	if len(s.Reasons) != DefaultLimits.MaxReasons {
		t.Errorf("kept %d reason groups", len(s.Reasons))
	}
	total := s.ReasonsDropped
	for _, r := range s.Reasons {
		total += r.Nodes
		if len(r.Reason) > DefaultLimits.MaxReasonBytes || !strings.HasSuffix(r.Reason, "…") {
			t.Errorf("reason of %d bytes kept", len(r.Reason))
		}
	}
	if total != 5000 {
		t.Errorf("reason groups count %d nodes, want 5000", total)
	}
	for _, v := range s.Rejected {
		for _, r := range v.Reasons {
			if len(r) > DefaultLimits.MaxReasonBytes {
				t.Errorf("verdict reason of %d bytes", len(r))
			}
		}
	}
	if sum := s.Summarize(MaxSummaryBytes); len(sum) > MaxSummaryBytes {
		t.Errorf("summary of %d bytes", len(sum))
	}
}

// SetScores keeps each kept node's raw scores next to the normalized and
// weighted ones, and the text shows raw → normalized only where a plugin's
// NormalizeScore changed the score, and names the plugins whose raw
// scores an older module did not send.
func TestRawScoresInRecordAndText(t *testing.T) {
	s := NewScheduling(Limits{})
	plugins := []ScorePlugin{
		{Name: "Norm", Weight: 2, NormalizeScore: true, RawKnown: true},
		{Name: "Plain", Weight: 1, RawKnown: true},
		{Name: "Old", Weight: 1, NormalizeScore: true},
	}
	raw := [][]int64{{3, 6}, {40, 10}, {50, 100}}
	norm := [][]int64{{50, 100}, {40, 10}, {50, 100}}
	totals := []int64{190, 310}
	s.SetScores(2, func(i int) string { return fmt.Sprintf("n%d", i) }, plugins, ScoreTable{RawRows: raw, NormalizedRows: norm}, totals, 1)
	s.Node = "n1"
	if ns := s.ScoreOf("n0"); ns == nil || !slices.Equal(ns.Raw, []int64{3, 40, 50}) || !slices.Equal(ns.Normalized, []int64{50, 40, 50}) || !slices.Equal(ns.Weighted, []int64{100, 40, 50}) {
		t.Fatalf("n0: %+v", ns)
	}
	var b strings.Builder
	if err := WriteText(&b, s, 5, 1, 1); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"200 (raw 6→100)", "100 (raw 3→50)", "raw scores of Old not known"} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "raw ") != 3 { // two cells and the note: none for Plain or Old
		t.Errorf("raw shown where it does not differ or is not known:\n%s", out)
	}
}
