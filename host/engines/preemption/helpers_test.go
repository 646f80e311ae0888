package preemption_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/run/sim"
)

// Manifest helpers: tests describe clusters in YAML, as users do.

const classes = `apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: low}
value: 10
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: mid}
value: 500
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: top}
value: 5000
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: guarded
  annotations: {scheduling.wasmsched.io/allow-disruption-by-priority-greater-than-or-equal: "2000"}
value: 10
`

func nodeYAML(name string, cpu string) string {
	return fmt.Sprintf("---\napiVersion: v1\nkind: Node\nmetadata: {name: %s, labels: {kubernetes.io/hostname: %s}}\nstatus: {allocatable: {cpu: %q, memory: 8Gi, pods: \"20\"}}\n", name, name, cpu)
}

// podYAML: node "" means pending; extra is put into spec.
func podYAML(name, class, node, cpu string, labels string, extra string) string {
	s := fmt.Sprintf("---\napiVersion: v1\nkind: Pod\nmetadata: {name: %s", name)
	if labels != "" {
		s += ", labels: {" + labels + "}"
	}
	s += "}\nspec:\n  priorityClassName: " + class + "\n"
	if node != "" {
		s += "  nodeName: " + node + "\n"
	}
	if extra != "" {
		s += "  " + extra + "\n"
	}
	s += fmt.Sprintf("  containers: [{name: c, image: i, resources: {requests: {cpu: %q}}}]\n", cpu)
	return s
}

func pdbYAML(name, app string, allowed int) string {
	return fmt.Sprintf("---\napiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: %s}\nspec: {selector: {matchLabels: {app: %s}}}\nstatus: {disruptionsAllowed: %d}\n", name, app, allowed)
}

func objects(t *testing.T, docs ...string) *sim.Objects {
	t.Helper()
	o := &sim.Objects{}
	if err := o.Read("test.yaml", strings.NewReader(classes+strings.Join(docs, ""))); err != nil {
		t.Fatal(err)
	}
	return o
}

func profileConfig(t *testing.T, args string) *config.Configuration {
	t.Helper()
	y := "apiVersion: wasmsched.io/v1alpha1\nkind: WasmSchedulerConfiguration\nprofiles:\n- schedulerName: default-scheduler\n"
	if args != "" {
		y += "  pluginConfig:\n  - name: DefaultPreemption\n    args: " + args + "\n"
	}
	cfg, err := config.Parse([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func run(t *testing.T, cfg *config.Configuration, o *sim.Objects, opts sim.Options) *sim.Report {
	t.Helper()
	opts.Config = cfg
	opts.NativeBuiltin = true
	opts.CacheDir = t.TempDir()
	opts.Seed = 1
	rep, err := sim.Run(context.Background(), o, opts)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func victims(rep *sim.Report) []string {
	var out []string
	for _, p := range rep.Preemptions {
		out = append(out, p.Victim+"@"+p.Node+"/"+p.How)
	}
	return out
}

// metrics records what preemption reports.
type metrics struct {
	mu       sync.Mutex
	attempts map[string]int
	victims  []int
	results  []string
	blocked  int
}

func (m *metrics) Attempt(profile string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.attempts == nil {
		m.attempts = map[string]int{}
	}
	m.attempts[profile]++
}
func (m *metrics) Victims(n int)    { m.mu.Lock(); defer m.mu.Unlock(); m.victims = append(m.victims, n) }
func (m *metrics) EvictionBlocked() { m.mu.Lock(); defer m.mu.Unlock(); m.blocked++ }
func (m *metrics) GoroutineDone(result string, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if d <= 0 {
		result += "(no duration)"
	}
	m.results = append(m.results, result)
}

var _ = abi.Success
