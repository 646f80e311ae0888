package sim

import (
	"strings"
	"testing"
)

const guardedClasses = `apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: guarded
  annotations: {scheduling.wasmsched.io/allow-disruption-by-priority-greater-than-or-equal: "1000"}
value: 10
---
apiVersion: v1
kind: Pod
metadata: {name: db, labels: {app: db}}
spec: {priorityClassName: guarded, containers: [{name: c, image: i}]}
---
apiVersion: v1
kind: Pod
metadata: {name: plain}
spec: {containers: [{name: c, image: i}]}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: db}
spec: {selector: {matchLabels: {app: db}}}
status: {disruptionsAllowed: 1, disruptedPods: {db-old: "2026-01-01T00:00:00Z"}}
`

func TestAdmissionCopiesTheDisruptionGuardAndConvertsPDBs(t *testing.T) {
	o, err := read(t, guardedClasses)
	if err != nil {
		t.Fatal(err)
	}
	_, pods, err := admit(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		switch p.Name {
		case "db":
			if p.DisruptionGuard == nil || *p.DisruptionGuard != 1000 || p.PriorityClassName != "guarded" {
				t.Fatalf("db: guard %v class %q", p.DisruptionGuard, p.PriorityClassName)
			}
		case "plain":
			if p.DisruptionGuard != nil {
				t.Fatal("a pod without a guarded class got a guard")
			}
		}
	}
	pdbs, err := admitPDBs(o)
	if err != nil || len(pdbs) != 1 || pdbs[0].Namespace != "default" || pdbs[0].DisruptionsAllowed != 1 || len(pdbs[0].DisruptedPods) != 1 {
		t.Fatalf("pdbs %+v, %v", pdbs, err)
	}
}

func TestAdmissionRefusesAGuardAboveSystemClusterCritical(t *testing.T) {
	o, err := read(t, strings.Replace(guardedClasses, `"1000"`, `"2000000001"`, 1))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := admit(o); err == nil || !strings.Contains(err.Error(), "PriorityClass guarded: metadata.annotations[scheduling.wasmsched.io/allow-disruption-by-priority-greater-than-or-equal]: 2000000001 is above system-cluster-critical") {
		t.Fatalf("err = %v", err)
	}
}
