package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/wasmsched/wasmsched/host/engines/decision"
	"github.com/wasmsched/wasmsched/host/run/sim"
)

// --explain prints, after the table, each named pod's decision: the
// chosen node and its score with a column per score plugin, or the
// rejections grouped by reason.
func TestSimulateExplainTable(t *testing.T) {
	out, err := simulate(t, "testdata/shadow-cluster.yaml", "--explain", "prod/web,batch/too-big", "--explain", "nowhere")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{
		"EXPLAIN prod/web (profile default-scheduler)\nchosen: big with score ",
		"nodes: 3 in the cluster, 3 filtered, 2 feasible",
		"TaintToleration  node(s) had untolerated taint(s)",
		"NodeResourcesFit×1",
		"*big",
		"EXPLAIN batch/too-big (profile default-scheduler)\nunschedulable: 0/3 nodes are available",
		"NodeResourcesFit  Insufficient cpu",
		"EXPLAIN default/nowhere: no such pod in the input",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "EXPLAIN prod/wants-small") {
		t.Errorf("explained a pod not asked for:\n%s", out)
	}
}

// -o json with --explain all carries every attempt's record, and each
// placed pod's last record names its node.
func TestSimulateExplainJSON(t *testing.T) {
	out, err := simulate(t, "-o", "json", "--explain", "all", "testdata/shadow-cluster.yaml")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var rep sim.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	last := map[string]*decision.Scheduling{}
	for _, r := range rep.Explanations {
		last[r.Pod] = r
	}
	for _, p := range rep.Pods {
		r := last[p.Namespace+"/"+p.Name]
		switch p.Status {
		case sim.StatusScheduled:
			if r == nil || r.Node != p.Node || r.Outcome != decision.OutcomeChosen {
				t.Errorf("%s/%s on %s, record %+v", p.Namespace, p.Name, p.Node, r)
			}
		case sim.StatusUnschedulable:
			if r == nil || r.Outcome != decision.OutcomeUnschedulable || len(r.Reasons) == 0 {
				t.Errorf("%s/%s unschedulable, record %+v", p.Namespace, p.Name, r)
			}
		}
	}
	if r := last["prod/web"]; r == nil || len(r.ScorePlugins) == 0 || len(r.Scores) != 2 {
		t.Errorf("prod/web's record lacks its scores: %+v", r)
	}
}

func TestSimulateExplainFlagErrors(t *testing.T) {
	for _, tc := range []struct{ args []string }{
		{[]string{"--explain", "a/b/c"}},
		{[]string{"--explain", "/x"}},
		{[]string{"--explain", "x", "--explain-top", "0"}},
	} {
		out, err := simulate(t, append([]string{"testdata/shadow-cluster.yaml"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), "--explain") {
			t.Errorf("%v: err %v, want one naming the flag\n%s", tc.args, err, out)
		}
	}
}
