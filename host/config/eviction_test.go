package config

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/wasmsched/wasmsched/abi"
)

const oneProfile = "profiles: [{schedulerName: a}]\n"

func TestEvictionSectionParses(t *testing.T) {
	c, err := Parse([]byte(header + oneProfile + `
eviction:
  syncPeriod: 2s
  burst: 5
  rate: 2.5
  rateBurst: 7
  killer: delete
  skipAnnotations: [example.com/keep, Keep-Me]
  skipLabels: [app.kubernetes.io/critical]
  conditionTransitionPeriod: 0s
  killTimeoutMin: 30s
  simulateRounds: 0
  policies:
  - plugin: ResourceOvercommit
    args: {hardRate: 1.0, softRate: 0.8, resources: [cpu, memory]}
    force: true
  - plugin: Other
    dryRun: true
`))
	if err != nil {
		t.Fatal(err)
	}
	s := c.Eviction.Defaulted()
	want := EvictionSettings{SyncPeriod: 2 * time.Second, Burst: 5, Rate: 2.5, RateBurst: 7, Killer: KillerDelete,
		ConditionTransitionPeriod: 0, KillTimeoutMin: 30 * time.Second, SimulateRounds: 0}
	got := s
	got.SkipAnnotations, got.SkipLabels, got.Policies = nil, nil, nil
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("settings = %+v\nwant %+v", got, want)
	}
	if strings.Join(s.SkipAnnotations, ",") != "example.com/keep,Keep-Me" || strings.Join(s.SkipLabels, ",") != "app.kubernetes.io/critical" {
		t.Fatalf("skip keys = %q %q", s.SkipAnnotations, s.SkipLabels)
	}
	if len(s.Policies) != 2 || s.Policies[0].Plugin != "ResourceOvercommit" || !s.Policies[0].Force || s.Policies[0].DryRun ||
		s.Policies[1].Plugin != "Other" || !s.Policies[1].DryRun || s.Policies[1].Force {
		t.Fatalf("policies = %+v", s.Policies)
	}
	v, err := s.Policies[0].ArgsValue()
	if err != nil {
		t.Fatal(err)
	}
	// Same conversion as pluginConfig args: keys sorted, 1.0 an integer.
	if v.Kind != abi.KindMap || v.Map[0].Key != "hardRate" || v.Get("hardRate").Kind != abi.KindInt ||
		v.Get("softRate").Float != 0.8 || v.Get("resources").List[1].Str != "memory" {
		t.Fatalf("args = %+v", v)
	}
	if v, err := s.Policies[1].ArgsValue(); err != nil || v.Kind != abi.KindNull {
		t.Fatalf("unset args = %+v, %v; want the zero Value", v, err)
	}
}

func TestEvictionDefaults(t *testing.T) {
	def := EvictionSettings{SyncPeriod: 5 * time.Second, Burst: 3, Rate: 10, RateBurst: 10, Killer: KillerEviction,
		ConditionTransitionPeriod: 5 * time.Minute, KillTimeoutMin: 10 * time.Second, SimulateRounds: 3}
	var none *Eviction
	if got := none.Defaulted(); got.Policies != nil || got.SyncPeriod != def.SyncPeriod || got.RateBurst != def.RateBurst {
		t.Fatalf("nil section = %+v", got)
	}
	c, err := Parse([]byte(header + oneProfile + "eviction: {policies: [{plugin: P}]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	got := c.Eviction.Defaulted()
	got.Policies = nil
	if got.SkipAnnotations != nil || got.SkipLabels != nil {
		t.Fatalf("skip keys = %q %q", got.SkipAnnotations, got.SkipLabels)
	}
	if !reflect.DeepEqual(got, def) {
		t.Fatalf("defaults = %+v\nwant %+v", got, def)
	}
	// rateBurst defaults to max(burst, ceil(rate)).
	for _, tc := range []struct {
		yaml string
		want int
	}{
		{"{rate: 2.5, burst: 1}", 3},
		{"{rate: 1, burst: 20}", 20},
		{"{rate: 0.1}", 3},
		{"{rate: 40}", 40},
	} {
		c, err := Parse([]byte(header + oneProfile + "eviction: " + tc.yaml + "\n"))
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Eviction.Defaulted().RateBurst; got != tc.want {
			t.Errorf("%s: rateBurst = %d, want %d", tc.yaml, got, tc.want)
		}
	}
	if Default().Eviction != nil {
		t.Fatal("the default configuration runs an eviction coordinator")
	}
}

func TestEvictionErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"burst zero", "eviction: {burst: 0}", "line 4: eviction.burst: must be at least 1, not 0"},
		{"burst huge", "eviction: {burst: 5000}", "eviction.burst: must be at most 1000, not 5000"},
		{"rate zero", "eviction: {rate: 0}", "eviction.rate: 0 is outside (0, 10000] evictions per second"},
		{"rate negative", "eviction: {rate: -1.5}", "eviction.rate: -1.5 is outside"},
		{"rate not a number", "eviction: {rate: fast}", `eviction.rate: "fast" is not a number`},
		{"rate burst zero", "eviction: {rateBurst: 0}", "eviction.rateBurst: must be at least 1, not 0"},
		{"killer", "eviction: {killer: container}", `eviction.killer: must be "eviction" or "delete", not "container"`},
		{"sync period zero", "eviction: {syncPeriod: 0s}", "eviction.syncPeriod: 0s must be positive and at most 1h0m0s"},
		{"sync period not a duration", "eviction: {syncPeriod: 5}", `line 4: eviction.syncPeriod: "5" is not a duration (e.g. 250ms)`},
		{"sync period bad duration", "eviction: {syncPeriod: often}", `eviction.syncPeriod: "often" is not a duration`},
		{"sync period too long", "eviction: {syncPeriod: 2h}", "eviction.syncPeriod: 2h0m0s must be positive and at most 1h0m0s"},
		{"negative transition period", "eviction: {conditionTransitionPeriod: -1s}", "eviction.conditionTransitionPeriod: -1s is outside 0s..24h0m0s"},
		{"kill timeout zero", "eviction: {killTimeoutMin: 0s}", "eviction.killTimeoutMin: 0s must be positive"},
		{"negative simulate rounds", "eviction: {simulateRounds: -1}", "eviction.simulateRounds: must be at least 0, not -1"},
		{"bad annotation key", "eviction: {skipAnnotations: [ok/key, 'bad key']}", `eviction.skipAnnotations[1]: "bad key" is not an annotation key`},
		{"bad label key", "eviction: {skipLabels: ['a/b/c']}", `eviction.skipLabels[0]: "a/b/c" is not a label key`},
		{"upper-case label prefix", "eviction: {skipLabels: ['Example.com/x']}", `eviction.skipLabels[0]: "Example.com/x" is not a label key`},
		{"policy without plugin", "eviction: {policies: [{dryRun: true}]}", "eviction.policies[0].plugin: must name a plugin"},
		{"duplicate policy", "eviction: {policies: [{plugin: P}, {plugin: Q}, {plugin: P}]}", `eviction.policies[2].plugin: duplicate "P" (also policies[0])`},
		{"args not an object", "eviction: {policies: [{plugin: P, args: [1]}]}", "eviction.policies[0].args: must be an object"},
		{"unknown eviction field", "eviction: {bursts: 3}", `eviction.bursts: unknown field (did you mean "burst"?)`},
		{"unknown policy field", "eviction: {policies: [{plugin: P, dryrun: true}]}", `eviction.policies[0].dryrun: unknown field (did you mean "dryRun"?)`},
		{"section not an object", "eviction: [x]", "eviction: want an object, not a list"},
		{"too many skip annotations", "eviction: {skipAnnotations: [" + keyList(MaxEvictionSkipKeys+1) + "]}", "eviction.skipAnnotations: 65 keys, more than the limit of 64"},
		{"too many skip labels", "eviction: {skipLabels: [" + keyList(MaxEvictionSkipKeys+1) + "]}", "eviction.skipLabels: 65 keys, more than the limit of 64"},
		{"too many policies", "eviction: {policies: [" + policyList(MaxEvictionPolicies+1) + "]}", "eviction.policies: 65 policies, more than the limit of 64"},
		{"sync period overflows", "eviction: {syncPeriod: 9223372037s}", `eviction.syncPeriod: "9223372037s" is not a duration`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(header + oneProfile + tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestEvictionErrorsHaveLines(t *testing.T) {
	path := writeConfig(t, header+oneProfile+`eviction:
  burst: 2
  policies:
  - plugin: A
  - plugin: A
    dryRun: true
`)
	_, err := Load(path)
	var e *Error
	if !errors.As(err, &e) || e.Line != 8 || e.Field != "eviction.policies[1].plugin" {
		t.Fatalf("err = %#v", err)
	}
	// Checks made later (an unknown plugin) name the line through ErrorAt.
	path = writeConfig(t, header+oneProfile+"eviction:\n  policies:\n  - plugin: A\n  - plugin: Nope\n")
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	got := c.ErrorAt(EvictionPolicyField(1)+".plugin", "no module serves %q", "Nope").Error()
	if want := path + `:7: eviction.policies[1].plugin: no module serves "Nope"`; got != want {
		t.Fatalf("ErrorAt = %q, want %q", got, want)
	}
}

// keyList is n distinct keys, for a YAML flow list.
func keyList(n int) string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("example.com/k%d", i)
	}
	return strings.Join(keys, ", ")
}

// policyList is n policies of distinct plugins, for a YAML flow list.
func policyList(n int) string {
	ps := make([]string, n)
	for i := range ps {
		ps[i] = fmt.Sprintf("{plugin: P%d}", i)
	}
	return strings.Join(ps, ", ")
}
