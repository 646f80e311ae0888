package config

import (
	"os"
	"strings"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
)

const header = "apiVersion: wasmsched.io/v1alpha1\nkind: WasmSchedulerConfiguration\n"

func TestValidConfigParses(t *testing.T) {
	c, err := Parse([]byte(header + `
percentageOfNodesToScore: 50
modules:
- name: custom
  path: ./custom.wasm
  memoryLimit: 32Mi
  callTimeout: 250ms
  failurePolicy: Ignore
profiles:
- schedulerName: default-scheduler
- schedulerName: bin-packer
  plugins:
    score:
      disabled: [{name: "*"}]
      enabled: [{name: NodeResourcesFit, weight: 5}]
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
        resources: [{name: cpu, weight: 2}]
`))
	if err != nil {
		t.Fatal(err)
	}
	m := c.Modules[0]
	if m.MemoryLimit.Value() != 32<<20 || m.CallTimeout.Milliseconds() != 250 || m.FailurePolicy != FailurePolicyIgnore {
		t.Fatalf("module = %+v", m)
	}
	v, err := ArgsValue(c.Profiles[1].PluginConfig[0].Args)
	if err != nil {
		t.Fatal(err)
	}
	ss := v.Get("scoringStrategy")
	if ss.Get("type").Str != "MostAllocated" || ss.Get("resources").List[0].Get("weight").Kind != abi.KindInt {
		t.Fatalf("args = %+v", v)
	}
}

func TestConfigErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"wrong kind", "apiVersion: wasmsched.io/v1alpha1\nkind: Other\nprofiles: [{schedulerName: a}]", `kind: must be "WasmSchedulerConfiguration"`},
		{"no profiles", header, "profiles: at least one profile is required"},
		{"empty scheduler name", header + "profiles: [{schedulerName: ''}]", "profiles[0].schedulerName: must not be empty"},
		{"duplicate scheduler name", header + "profiles: [{schedulerName: a}, {schedulerName: a}]", `profiles[1].schedulerName: duplicate "a" (also profiles[0])`},
		{"weight too big", header + "profiles: [{schedulerName: a, plugins: {score: {enabled: [{name: X, weight: 101}]}}}]", "profiles[0].plugins.score.enabled[0].weight: 101 is outside 0..100"},
		{"negative weight", header + "profiles: [{schedulerName: a, plugins: {score: {enabled: [{name: X, weight: -1}]}}}]", "profiles[0].plugins.score.enabled[0].weight: -1 is outside"},
		{"weight on filter", header + "profiles: [{schedulerName: a, plugins: {filter: {enabled: [{name: X, weight: 3}]}}}]", "profiles[0].plugins.filter.enabled[0].weight: only score plugins have weights"},
		{"differing queue sort", header + "profiles: [{schedulerName: a}, {schedulerName: b, plugins: {queueSort: {enabled: [{name: FIFO}]}}}]", "profiles[1].plugins.queueSort: FIFO differs from profiles[0]'s PrioritySort"},
		{"percentage", header + "percentageOfNodesToScore: 101\nprofiles: [{schedulerName: a}]", "percentageOfNodesToScore: 101 is outside 0..100"},
		{"duplicate plugin config", header + "profiles: [{schedulerName: a, pluginConfig: [{name: X}, {name: X}]}]", `profiles[0].pluginConfig[1].name: duplicate "X"`},
		{"args not an object", header + "profiles: [{schedulerName: a, pluginConfig: [{name: X, args: [1]}]}]", "profiles[0].pluginConfig[0].args: must be an object"},
		{"module without path", header + "modules: [{name: m}]\nprofiles: [{schedulerName: a}]", "modules[0].path: must not be empty"},
		{"duplicate module", header + "modules: [{name: m, path: a}, {name: m, path: b}]\nprofiles: [{schedulerName: a}]", `modules[1].name: "m" is already used by modules[0]`},
		{"bad failure policy", header + "modules: [{name: m, path: a, failurePolicy: Sometimes}]\nprofiles: [{schedulerName: a}]", `modules[0].failurePolicy: must be Fail or Ignore, not "Sometimes"`},
		{"bad sha", header + "modules: [{name: m, path: a, sha256: abc}]\nprofiles: [{schedulerName: a}]", "modules[0].sha256: must be 64 hex digits"},
		{"memory too small", header + "modules: [{name: m, path: a, memoryLimit: 1Ki}]\nprofiles: [{schedulerName: a}]", "modules[0].memoryLimit: 1Ki is outside 1Mi..4Gi"},
		{"bad duration", header + "modules: [{name: m, path: a, callTimeout: soon}]\nprofiles: [{schedulerName: a}]", `line 3: modules[0].callTimeout: "soon" is not a duration (e.g. 250ms)`},
		{"unknown field", header + "profiles: [{schedulerName: a, colour: blue}]", "line 3: profiles[0].colour: unknown field"},
		{"empty file", "", "empty configuration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestDefaultIsValid(t *testing.T) {
	if err := Default().Validate(); err != nil {
		t.Fatal(err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(header + "profiles: [{schedulerName: a, pluginConfig: [{name: X, args: {a: [1, 2.5, true, null]}}]}]"))
	f.Add([]byte(header + "profiles: [{schedulerName: a}]\neviction: {syncPeriod: 2s, burst: 1, rate: 0.5, killer: delete, skipLabels: [a/b], conditionTransitionPeriod: 0s, policies: [{plugin: P, args: {x: [1]}, dryRun: true}]}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Parse(b)
		if err != nil {
			return
		}
		for _, p := range c.Profiles {
			for _, pc := range p.PluginConfig {
				_, _ = ArgsValue(pc.Args)
			}
		}
		// A section Validate accepted resolves to settings the
		// coordinator can run with.
		s := c.Eviction.Defaulted()
		if s.SyncPeriod <= 0 || s.Burst < 1 || !(s.Rate > 0) || s.RateBurst < 1 || s.KillTimeoutMin <= 0 || s.ConditionTransitionPeriod < 0 || s.SimulateRounds < 0 {
			t.Fatalf("accepted eviction settings %+v", s)
		}
		for _, p := range s.Policies {
			_, _ = p.ArgsValue()
		}
	})
}

func TestModulePathsAreRelativeToTheConfigFile(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/sched.yaml"
	if err := os.WriteFile(path, []byte(header+"modules: [{name: m, path: mods/m.wasm}, {name: abs, path: /opt/x.wasm}]\nprofiles: [{schedulerName: a}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if c.Modules[0].Path != dir+"/mods/m.wasm" || c.Modules[1].Path != "/opt/x.wasm" {
		t.Fatalf("paths = %q, %q", c.Modules[0].Path, c.Modules[1].Path)
	}
}

// Profiles are optional in a configuration that runs the eviction or vpod
// engines: those need no scheduling profile of their own. One with
// neither still needs a profile, and says what would do instead.
func TestProfilesOptionalWithEvictionOrVPod(t *testing.T) {
	for name, body := range map[string]string{
		"eviction only": "eviction:\n  policies:\n  - {plugin: ResourceOvercommit}\n",
		"vpod only":     "vpod:\n  schedulers:\n  - {name: adapter, statefulSet: {namespace: eventing, name: adapter}, podCapacity: 10}\n",
	} {
		c, err := Parse([]byte(header + body))
		if err != nil {
			t.Errorf("%s: %v", name, err)
		} else if len(c.Profiles) != 0 {
			t.Errorf("%s: profiles %+v", name, c.Profiles)
		}
	}
	if _, err := Parse([]byte(header)); err == nil || !strings.Contains(err.Error(), "profiles: at least one profile is required (a configuration with an eviction or vpod section may have none)") {
		t.Errorf("neither: %v", err)
	}
}

// An unquoted all-digit sha256 is a number to YAML: the error says so and
// what it would become, not that it is not hex; quoted, it is a pin.
func TestAllDigitSHA256SaysQuoteIt(t *testing.T) {
	for _, digits := range []string{strings.Repeat("0", 64), strings.Repeat("1", 64), strings.Repeat("0", 60) + "1234"} {
		_, err := Parse([]byte(header + "modules: [{name: m, path: m.wasm, sha256: " + digits + "}]\nprofiles: [{schedulerName: a}]\n"))
		if err == nil || !strings.Contains(err.Error(), "modules[0].sha256: "+digits+" reads as a number") || !strings.Contains(err.Error(), `quote it: "`+digits+`"`) {
			t.Errorf("%s: %v", digits, err)
		}
		c, err := Parse([]byte(header + "modules: [{name: m, path: m.wasm, sha256: \"" + digits + "\"}]\nprofiles: [{schedulerName: a}]\n"))
		if err != nil || c.Modules[0].SHA256 != digits {
			t.Errorf("quoted %s: %v", digits, err)
		}
	}
}

// TestSeveralErrorsOneLineEach: a configuration with several mistakes
// reads as a count and one indented line per mistake, each naming its
// field, rather than one long line.
func TestSeveralErrorsOneLineEach(t *testing.T) {
	_, err := Parse([]byte(header + "percentageOfNodesToScore: 101\nprofiles: [{schedulerName: ''}]"))
	if err == nil {
		t.Fatal("Parse accepted two mistakes")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != 3 || lines[0] != "2 problems:" ||
		!strings.HasPrefix(lines[1], "  ") || !strings.Contains(lines[1], "percentageOfNodesToScore: 101 is outside 0..100") ||
		!strings.HasPrefix(lines[2], "  ") || !strings.Contains(lines[2], "profiles[0].schedulerName: must not be empty") {
		t.Fatalf("error = %q, want a count line and one indented line per problem", err)
	}
	_, err = Parse([]byte(header + "percentageOfNodesToScore: 101\nprofiles: [{schedulerName: a}]"))
	if err == nil || strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), "problems") {
		t.Fatalf("one problem: error = %q, want it on one line without a count", err)
	}
}
