package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wasmsched/wasmsched/internal/testlog"
)

// A vpod policy file the configuration names (here Knative's
// config-scheduler ConfigMap) is watched with the configuration: editing
// it alone re-runs the simulation.
func TestWatchLoopFollowsAVPodPolicyFile(t *testing.T) {
	dir := t.TempDir()
	copyExample := func(name string) string {
		b, err := os.ReadFile(filepath.Join("..", "..", "examples", name))
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cluster := copyExample("vpods-cluster.yaml")
	cfg := copyExample("vpods.yaml")
	policy := copyExample("vpods-config-scheduler.yaml")
	var out testlog.Buffer
	startLoop(t, &out, watchOptions{Manifests: []string{cluster}, ConfigPath: cfg})
	s := waitRuns(t, &out, 1)
	if !strings.Contains(s, watching+"3 files;") {
		t.Fatalf("first run does not watch the policy file:\n%s", s)
	}
	b, err := os.ReadFile(policy)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, policy, []byte(strings.Replace(string(b), `"Weight": 2}`, `"Weight": 3}`, 1)))
	s = waitRuns(t, &out, 2)
	if second := runOutput(s, 2); !strings.Contains(second, "--- re-running: "+policy+" ---\n") {
		t.Errorf("second run does not name the policy file:\n%s", second)
	}
}
