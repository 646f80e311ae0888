package decision

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// /debug/explain answers for a pod with the attempts that preempted it
// and the eviction rounds naming it, and for a vpod with its Schedule
// calls and the autoscaler passes that counted it.
func TestExplainHandlerOtherEngines(t *testing.T) {
	r := NewRing(10)
	pre := NewPreemption("default/big", "p", "DefaultPreemption", true)
	pre.SetCandidates(Limits{}, []Candidate{{Node: "n1", Victims: []string{"default/low"}, NumVictims: 1}})
	r.Add(&Record{Kind: KindScheduling, Key: "default/big", Scheduling: &Scheduling{Pod: "default/big", Preemption: pre}})
	ev := NewEviction(3, time.Now(), Limits{})
	ev.Add(&ev.Evicted, EvictionPod{Pod: "default/hog", Node: "n2", Policy: "NodePressure", Reason: "memory"})
	r.Add(&Record{Kind: KindEviction, Key: EvictionKey(3), Eviction: ev})
	vp := NewVPod("shop/orders", "s", "ke/d", 2, time.Now(), Limits{})
	r.Add(&Record{Kind: KindVPod, Key: VPodKey("shop/orders"), VPod: vp})
	r.Add(&Record{Kind: KindVPod, Key: AutoscaleKey("s"), Autoscale: &VPodAutoscale{PendingVPods: []string{"shop/orders"}}})
	// A pod named like the vpod is not the vpod.
	r.Add(&Record{Kind: KindScheduling, Key: "shop/orders", Scheduling: &Scheduling{Pod: "shop/orders"}})

	get := func(q string) (int, ExplainResponse, string) {
		w := httptest.NewRecorder()
		r.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/debug/explain"+q, nil))
		var resp ExplainResponse
		_ = json.Unmarshal(w.Body.Bytes(), &resp)
		return w.Code, resp, w.Body.String()
	}
	for q, want := range map[string][]string{
		"?pod=default/low":  {"default/big"},
		"?pod=hog":          {EvictionKey(3)},
		"?vpod=shop/orders": {AutoscaleKey("s"), VPodKey("shop/orders")},
		"?pod=shop/orders":  {"shop/orders"},
	} {
		code, resp, body := get(q)
		var keys []string
		for _, rec := range resp.Records {
			keys = append(keys, rec.Key)
		}
		if code != http.StatusOK || strings.Join(keys, ",") != strings.Join(want, ",") {
			t.Errorf("%s: %d %v, want %v\n%s", q, code, keys, want, body)
		}
	}
	if code, _, body := get("?vpod=shop/none"); code != http.StatusNotFound || !strings.Contains(body, "vpod shop/none") {
		t.Errorf("unknown vpod: %d %s", code, body)
	}
	if code, _, _ := get("?vpod=a/b&pod=a/b"); code != http.StatusBadRequest {
		t.Errorf("both: %d", code)
	}
}

// Outcomes written by a preemption goroutine while the record is read
// and encoded: no race, and every list stays within its bound.
func TestPreemptionRecordConcurrentAndBounded(t *testing.T) {
	l := Limits{MaxNodes: 3}
	p := NewPreemption("a/b", "p", "DefaultPreemption", true)
	var victims []string
	for i := range 10 {
		victims = append(victims, "v"+string(rune('0'+i)))
	}
	cands := make([]Candidate, 5)
	for i := range cands {
		cands[i] = Candidate{Node: "n" + string(rune('0'+i)), Victims: victims, NumVictims: len(victims)}
	}
	p.SetCandidates(l, cands)
	if len(p.Candidates) != 3 || p.CandidatesDropped != 2 || len(p.Candidates[0].Victims) != 3 || p.Candidates[0].VictimsDropped != 7 {
		t.Fatalf("bounds: %d candidates (+%d), %d victims (+%d)", len(p.Candidates), p.CandidatesDropped, len(p.Candidates[0].Victims), p.Candidates[0].VictimsDropped)
	}
	if p.Why != "tied with runner-up n1 on every criterion; the earlier in the dry runs' order wins" {
		t.Errorf("why %q", p.Why)
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := range 10 {
			p.Victim(l, victims[i], "n0", VictimDeleted, nil)
		}
		p.Finish("n0", errors.New("boom"))
	}()
	go func() {
		defer wg.Done()
		for range 10 {
			if _, err := json.Marshal(p); err != nil {
				t.Error(err)
			}
			_ = p.mentions("a/x")
		}
	}()
	wg.Wait()
	if ex := p.Execution(); len(ex.Victims) != 3 || ex.VictimsDropped != 7 || ex.Error != "boom" || !ex.Done {
		t.Errorf("execution %+v", ex)
	}
}

// WhyWon names the first criterion that tells the winner apart, and
// says so when the policy's order goes against kube-scheduler's.
func TestWhyWon(t *testing.T) {
	for _, tc := range []struct {
		a, b Candidate
		want string
	}{
		{Candidate{PDBViolations: 0}, Candidate{PDBViolations: 1}, "fewest PDB violations"},
		{Candidate{HighestPriority: 1}, Candidate{HighestPriority: 5}, "lowest highest-priority victim"},
		{Candidate{PrioritySum: 1}, Candidate{PrioritySum: 5}, "smallest sum"},
		{Candidate{NumVictims: 1, PrioritySum: 3}, Candidate{NumVictims: 2, PrioritySum: 3}, "fewest victims"},
		{Candidate{EarliestStart: 9}, Candidate{EarliestStart: 3}, "latest start"},
		{Candidate{EarliestStart: 0}, Candidate{EarliestStart: 3}, "latest start"},
		{Candidate{PDBViolations: 2}, Candidate{PDBViolations: 1}, "the victim policy's own ranking"},
	} {
		if got := WhyWon(&tc.a, &tc.b); !strings.Contains(got, tc.want) {
			t.Errorf("%+v vs %+v: %q, want %q", tc.a, tc.b, got, tc.want)
		}
	}
}

// An eviction record's lists stay within their bounds, counting the
// rest.
func TestEvictionRecordBounds(t *testing.T) {
	e := NewEviction(1, time.Now(), Limits{MaxNodes: 2, MaxScored: 2, MaxReasonBytes: 8})
	for range 5 {
		e.Add(&e.Evicted, EvictionPod{Pod: "a/b", Reason: "a long reason indeed"})
		e.Answer(EvictionAnswer{Policy: "p", Pods: []EvictionPod{{Pod: "x"}, {Pod: "y"}, {Pod: "z"}}})
	}
	if len(e.Evicted.Pods) != 2 || e.Evicted.More != 3 || len(e.Evicted.Pods[0].Reason) > 8 {
		t.Errorf("evicted %+v", e.Evicted)
	}
	if len(e.Answers) != 2 || e.AnswersDropped != 3 || len(e.Answers[0].Pods) != 2 || e.Answers[0].PodsDropped != 1 {
		t.Errorf("answers %d (+%d), %d pods", len(e.Answers), e.AnswersDropped, len(e.Answers[0].Pods))
	}
}
