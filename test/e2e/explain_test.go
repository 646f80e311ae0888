package e2e

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmsched/wasmsched/deploy/charttest"
	"github.com/wasmsched/wasmsched/host/engines/decision"
)

// serve --record-decisions on a real API server (with the chart's RBAC
// for it): /debug/explain answers from the ring behind the secure port's
// authentication and authorization, 404 for a pod it has no decision
// of, and a placed pod carries its decision summary in an annotation the
// binding set.
func TestExplainEndpointAndDecisionAnnotation(t *testing.T) {
	t.Setenv("WASMSCHED_AUDIT", "1")
	admin, kubeconfig := controlPlaneWithKubeconfig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	applyRBAC(t, ctx, admin, charttest.Objects(t, charttest.Helm(t), "recordDecisions=true"))
	createNode(t, ctx, admin, node("big", "4"))
	createNode(t, ctx, admin, node("mid", "2"))
	createNode(t, ctx, admin, node("tiny", "1"))
	base, _ := startServeBinary(t, ctx, admin, kubeconfig, "--record-decisions", "--explain-ring-size", "50")
	anyone := httpsClient()

	for _, p := range []struct{ name, cpu string }{{"fits", "1500m"}, {"too-big", "64"}} {
		if _, err := admin.CoreV1().Pods("default").Create(ctx, pod(p.name, "wasmsched", p.cpu), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, ctx, "pod fits to be bound", func() bool { return boundTo(ctx, admin, "fits") != "" })
	bound := boundTo(ctx, admin, "fits")

	// The annotation came with the binding: the summary names the node
	// the pod is bound to, with its score.
	p, err := admin.CoreV1().Pods("default").Get(ctx, "fits", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	raw := p.Annotations[decision.AnnotationKey]
	var sum decision.Summary
	if err := json.Unmarshal([]byte(raw), &sum); err != nil || len(raw) > decision.MaxSummaryBytes {
		t.Fatalf("annotation %s = %q (%d bytes): %v", decision.AnnotationKey, raw, len(raw), err)
	}
	if sum.Node != bound || sum.Profile != "wasmsched" || sum.Evaluated != 3 || sum.Feasible != 2 || len(sum.Top) != 2 || sum.Top[0].Node != bound {
		t.Errorf("summary %+v, want node %s of 2 feasible among 3", sum, bound)
	}
	if len(sum.Rejected) != 1 || sum.Rejected[0].Plugin != "NodeResourcesFit" || sum.Rejected[0].Reason != "Insufficient cpu" {
		t.Errorf("summary's rejections %+v, want tiny's Insufficient cpu", sum.Rejected)
	}
	// No write of its own: the scheduler's only write to the pod was the
	// binding.
	if writes := podWrites(t, filepath.Join(filepath.Dir(kubeconfig), "audit.log"), "fits"); strings.Join(writes, ",") != "create pods/binding" {
		t.Errorf("the scheduler's writes to pod fits: %v, want only the binding", writes)
	}

	// /debug/explain: authenticated and authorized like /metrics.
	if code, body, _ := fetch(anyone, base+"/debug/explain?pod=default/fits", ""); code != http.StatusUnauthorized {
		t.Errorf("/debug/explain without credentials = %d %s, want 401", code, body)
	}
	pki := filepath.Join(filepath.Dir(kubeconfig), "pki")
	adminCert, err := tls.LoadX509KeyPair(filepath.Join(pki, "admin.crt"), filepath.Join(pki, "admin.key"))
	if err != nil {
		t.Fatal(err)
	}
	withCert := httpsClient(adminCert)
	code, body, _ := fetch(withCert, base+"/debug/explain?pod=default/fits", "")
	var resp decision.ExplainResponse
	if code != http.StatusOK || json.Unmarshal([]byte(body), &resp) != nil || len(resp.Records) == 0 || resp.Records[0].Scheduling == nil {
		t.Fatalf("/debug/explain?pod=default/fits = %d %.2000s", code, body)
	}
	rec := resp.Records[0].Scheduling
	if rec.Outcome != decision.OutcomeChosen || rec.Node != bound || rec.Score != sum.Score || rec.ScoreOf(bound) == nil || rec.VerdictOf("tiny") == nil {
		t.Errorf("record %+v, want %s chosen with score %d and tiny rejected", rec, bound, sum.Score)
	}
	waitFor(t, ctx, "/debug/explain to know too-big as unschedulable", func() bool {
		code, body, _ := fetch(withCert, base+"/debug/explain?pod=too-big", "")
		return code == http.StatusOK && strings.Contains(body, `"outcome": "Unschedulable"`) && strings.Contains(body, "Insufficient cpu")
	})
	// The unschedulable attempt carries its PostFilter's record: no
	// lower-priority pod anywhere, so no candidate, and why.
	_, body, _ = fetch(withCert, base+"/debug/explain?pod=too-big", "")
	resp = decision.ExplainResponse{}
	if err := json.Unmarshal([]byte(body), &resp); err != nil {
		t.Fatalf("/debug/explain?pod=too-big: %v %.2000s", err, body)
	}
	if pr := resp.Records[0].Scheduling.Preemption; pr == nil || pr.Chosen != "" || len(pr.NoCandidate) == 0 || pr.Message == "" {
		t.Errorf("too-big's preemption record %+v, want no candidate and why", pr)
	}
	if code, body, _ := fetch(withCert, base+"/debug/explain?vpod=shop/none", ""); code != http.StatusNotFound || !strings.Contains(body, "vpod shop/none") {
		t.Errorf("/debug/explain for an unknown vpod = %d %s, want 404 saying so", code, body)
	}
	if code, body, _ := fetch(withCert, base+"/debug/explain?pod=default/ghost", ""); code != http.StatusNotFound ||
		!strings.Contains(body, "no decision recorded for pod default/ghost") {
		t.Errorf("/debug/explain for an unknown pod = %d %s, want 404 saying so", code, body)
	}
	if code, body, _ := fetch(withCert, base+"/debug/explain", ""); code != http.StatusBadRequest {
		t.Errorf("/debug/explain without ?pod = %d %s, want 400", code, body)
	}
}

// serve --record-decisions on a real API server, as the chart runs it
// with recordDecisions (its RBAC): a pod no node fits carries the
// summary of its unschedulable attempt, naming the reasons, in a patch
// of its own; once a node that fits is added, the pod binds and the
// annotation is the bound decision, set by the binding.
func TestDecisionAnnotationOfUnplacedPod(t *testing.T) {
	admin, kubeconfig := controlPlaneWithKubeconfig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	applyRBAC(t, ctx, admin, charttest.Objects(t, charttest.Helm(t), "recordDecisions=true"))
	createNode(t, ctx, admin, node("small", "1"))
	startServeBinary(t, ctx, admin, kubeconfig, "--record-decisions")
	if _, err := admin.CoreV1().Pods("default").Create(ctx, pod("waits", "wasmsched", "3"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	summary := func() (decision.Summary, string) {
		p, err := admin.CoreV1().Pods("default").Get(ctx, "waits", metav1.GetOptions{})
		if err != nil {
			return decision.Summary{}, ""
		}
		raw := p.Annotations[decision.AnnotationKey]
		var sum decision.Summary
		if raw != "" {
			if err := json.Unmarshal([]byte(raw), &sum); err != nil || len(raw) > decision.MaxSummaryBytes {
				t.Fatalf("annotation %s = %q (%d bytes): %v", decision.AnnotationKey, raw, len(raw), err)
			}
		}
		return sum, p.Spec.NodeName
	}
	waitFor(t, ctx, "pod waits to carry its unschedulable decision", func() bool {
		sum, _ := summary()
		return sum.Outcome != ""
	})
	sum, bound := summary()
	if bound != "" || sum.Outcome != decision.OutcomeUnschedulable || sum.Node != "" || sum.Evaluated != 1 || sum.Feasible != 0 ||
		!strings.Contains(sum.Message, "Insufficient cpu") {
		t.Errorf("unschedulable summary %+v (bound to %q)", sum, bound)
	}
	if len(sum.Rejected) != 1 || sum.Rejected[0].Plugin != "NodeResourcesFit" || sum.Rejected[0].Reason != "Insufficient cpu" || sum.Rejected[0].Nodes != 1 {
		t.Errorf("summary's rejections %+v, want small's Insufficient cpu", sum.Rejected)
	}

	createNode(t, ctx, admin, node("large", "4"))
	waitFor(t, ctx, "pod waits to be bound", func() bool { return boundTo(ctx, admin, "waits") != "" })
	sum, bound = summary()
	if bound != "large" || sum.Outcome != "" || sum.Message != "" || sum.Node != "large" || sum.Evaluated != 2 || sum.Feasible != 1 {
		t.Errorf("bound summary %+v (bound to %q), want the decision that placed it on large", sum, bound)
	}
}

// podWrites lists the writes (verb resource/subresource) the wasmsched
// ServiceAccount made to the pod named name, from the audit log.
func podWrites(t *testing.T, auditLog, name string) []string {
	t.Helper()
	b, err := os.ReadFile(auditLog)
	if err != nil {
		t.Fatalf("audit log: %v", err)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		var ev struct {
			Verb string `json:"verb"`
			User struct {
				Username string `json:"username"`
			} `json:"user"`
			ObjectRef struct {
				Resource, Subresource, Name string
			} `json:"objectRef"`
		}
		if json.Unmarshal([]byte(line), &ev) != nil || ev.User.Username != "system:serviceaccount:kube-system:wasmsched" ||
			ev.ObjectRef.Resource != "pods" || ev.ObjectRef.Name != name {
			continue
		}
		switch ev.Verb {
		case "get", "list", "watch":
			continue
		}
		w := ev.Verb + " pods"
		if ev.ObjectRef.Subresource != "" {
			w += "/" + ev.ObjectRef.Subresource
		}
		out = append(out, w)
	}
	return out
}
