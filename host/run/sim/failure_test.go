package sim

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/internal/testwasm"
)

// TestFailurePolicyOfATrappingModule runs a profile with the misbehave test
// module's filter, whose Filter traps for a pod named "trap": with
// failurePolicy Fail the pod fails with an error naming the plugin and
// the host keeps scheduling the others; with Ignore the plugin is
// skipped and the pod is placed.
func TestFailurePolicyOfATrappingModule(t *testing.T) {
	root, err := testwasm.Root()
	if err != nil {
		t.Fatal(err)
	}
	module := filepath.Join(root, testwasm.Misbehave.TinyGo)
	manifests := `apiVersion: v1
kind: Node
metadata: {name: node1}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Pod
metadata: {name: trap}
spec: {containers: [{name: c, image: i}]}
---
apiVersion: v1
kind: Pod
metadata: {name: fine}
spec: {containers: [{name: c, image: i}]}
`
	for _, tc := range []struct {
		policy     string
		trapStatus string
		trapMsg    string
	}{
		{"Fail", StatusSchedulerError, `filter plugin "Misbehave": instance lost`},
		{"Ignore", StatusScheduled, ""},
	} {
		t.Run(tc.policy, func(t *testing.T) {
			cfg, err := config.Parse([]byte(`apiVersion: wasmsched.io/v1alpha1
kind: WasmSchedulerConfiguration
modules:
- {name: misbehave, path: ` + module + `, failurePolicy: ` + tc.policy + `, callTimeout: 200ms}
profiles:
- schedulerName: default-scheduler
  plugins:
    filter:
      enabled: [{name: Misbehave}]
`))
			if err != nil {
				t.Fatal(err)
			}
			o := &Objects{}
			if err := o.Read("test.yaml", strings.NewReader(manifests)); err != nil {
				t.Fatal(err)
			}
			rep, err := Run(context.Background(), o, Options{Config: cfg, CacheDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			trap, fine := rep.Pod("default", "trap"), rep.Pod("default", "fine")
			if trap.Status != tc.trapStatus || !strings.Contains(trap.Message, tc.trapMsg) {
				t.Errorf("trap pod: status %q message %q, want %q containing %q", trap.Status, trap.Message, tc.trapStatus, tc.trapMsg)
			}
			if fine.Status != StatusScheduled || fine.Node != "node1" {
				t.Errorf("the well-behaved pod: %+v", fine)
			}
		})
	}
}
