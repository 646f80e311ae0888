package preemption_test

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/run/sim"
	"github.com/wasmsched/wasmsched/internal/testwasm"
)

// A profile swaps the victim policy for a Wasm module loaded from YAML.
func TestProfileCanSwapTheVictimPolicy(t *testing.T) {
	root, err := testwasm.Root()
	if err != nil {
		t.Fatal(err)
	}
	o := objects(t, nodeYAML("n1", "1"), nodeYAML("n2", "1"),
		"---\napiVersion: v1\nkind: Namespace\nmetadata: {name: jobs, labels: {scheduling.wasmsched.io/batch: \"true\"}}\n",
		podYAML("web-low", "low", "n1", "1", "", ""),
		"---\napiVersion: v1\nkind: Pod\nmetadata: {name: job-mid, namespace: jobs}\nspec: {nodeName: n2, priorityClassName: mid, containers: [{name: c, image: i, resources: {requests: {cpu: \"1\"}}}]}\n",
		podYAML("big", "high", "", "1", "", ""))

	rep := run(t, profileConfig(t, ""), o, sim.Options{})
	if got := victims(rep); !reflect.DeepEqual(got, []string{"default/web-low@n1/delete"}) {
		t.Fatalf("default policy: victims %v, want the lowest-priority pod", got)
	}

	cfg, err := config.Parse([]byte(`apiVersion: wasmsched.io/v1alpha1
kind: WasmSchedulerConfiguration
modules:
- name: batch-preemption
  path: ` + filepath.Join(root, "plugins-wasm/dist/batchpreemption.tinygo.wasm") + `
profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: DefaultPreemption
    args: {victimPolicy: BatchFirstPreemption}
`))
	if err != nil {
		t.Fatal(err)
	}
	rep = run(t, cfg, o, sim.Options{})
	if got := victims(rep); !reflect.DeepEqual(got, []string{"jobs/job-mid@n2/delete"}) {
		t.Fatalf("batch-first policy: victims %v, want the batch pod", got)
	}
	if p := rep.Pod("default", "big"); p.Node != "n2" {
		t.Fatalf("big = %+v", p)
	}
}
