package config

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func mustVPodSettings(t *testing.T, c *Configuration) []VPodSettings {
	t.Helper()
	s, err := c.VPod.Defaulted()
	if err != nil {
		t.Fatalf("Defaulted: %v", err)
	}
	return s
}

func TestVPodSectionParses(t *testing.T) {
	c, err := Parse([]byte(header + oneProfile + `
vpod:
  schedulers:
  - name: kafka-source
    statefulSet: {namespace: knative-eventing, name: kafka-source-dispatcher}
    podCapacity: 20
    strategy: Policy
    refreshPeriod: 10s
    retryPeriod: 500ms
    schedulerPolicy:
      predicates: [{name: PodFitsResources}, {name: EvenPodSpread, args: {MaxSkew: 2}}]
      priorities: [{name: AvailabilityZonePriority, weight: 10, args: '{"MaxSkew": 2}'}, {name: LowestOrdinalPriority, weight: 2}]
    deschedulerPolicy:
      priorities: [{name: RemoveWithHighestOrdinalPriority, weight: 0}]
    sources:
    - kind: VPod
    - group: sources.knative.dev
      version: v1beta1
      resource: kafkasources
      vreplicasPath: spec.consumers
      placementsPath: status.placements
  - name: spread
    statefulSet: {name: adapter}
    podCapacity: 5
    strategy: MAXFILLUP_SPREAD
    minReplicas: 3
    sources: [{group: "", version: v1, resource: configmaps, vreplicasPath: data.n, placementsPath: data.p}]
`))
	if err != nil {
		t.Fatal(err)
	}
	if !c.HasVPod() {
		t.Fatal("HasVPod = false")
	}
	got := mustVPodSettings(t, c)
	want := []VPodSettings{{
		Name: "kafka-source", Namespace: "knative-eventing", StatefulSet: "kafka-source-dispatcher",
		Capacity: 20, Strategy: VPodStrategyPolicy, MaxReplicas: DefaultVPodMaxReplicas, KnativeCompat: VPodKnativeStrict, RefreshPeriod: 10 * time.Second, RetryPeriod: 500 * time.Millisecond,
		SchedPolicy: &VPodPolicy{
			Predicates: []VPodPolicyEntry{
				{Name: "PodFitsResources"},
				// The YAML object becomes the JSON string Knative carries.
				{Name: "EvenPodSpread", Args: json.RawMessage(`"{\"MaxSkew\":2}"`)},
			},
			Priorities: []VPodPolicyEntry{
				// A string is Knative's encoding already: kept as written.
				{Name: "AvailabilityZonePriority", Weight: 10, Args: json.RawMessage(`"{\"MaxSkew\": 2}"`)},
				{Name: "LowestOrdinalPriority", Weight: 2},
			},
		},
		DeschedPolicy: &VPodPolicy{Priorities: []VPodPolicyEntry{{Name: "RemoveWithHighestOrdinalPriority"}}},
		Sources: []VPodSource{
			{Kind: "VPod", Group: "wasmsched.io", Version: "v1alpha1", Resource: "vpods", VReplicasPath: "spec.vreplicas", PlacementsPath: "status.placements"},
			{Group: "sources.knative.dev", Version: "v1beta1", Resource: "kafkasources", VReplicasPath: "spec.consumers", PlacementsPath: "status.placements"},
		},
	}, {
		Name: "spread", Namespace: "default", StatefulSet: "adapter", Capacity: 5, Strategy: VPodStrategyMaxFillUpSpread, MinReplicas: 3,
		MaxReplicas: DefaultVPodMaxReplicas, KnativeCompat: VPodKnativeStrict, RefreshPeriod: 30 * time.Second, RetryPeriod: time.Second,
		Sources: []VPodSource{{Version: "v1", Resource: "configmaps", VReplicasPath: "data.n", PlacementsPath: "data.p"}},
	}}
	for i := range got {
		got[i].SchedPolicy, got[i].DeschedPolicy = noPos(got[i].SchedPolicy), noPos(got[i].DeschedPolicy)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("settings =\n%+v\nwant\n%+v", got, want)
	}
}

// An args object written in YAML reaches the plugin as the same args a
// Knative ConfigMap carries: a JSON string whose content decodes to the
// same object.
func TestVPodYAMLArgsMatchKnativeEncoding(t *testing.T) {
	c, err := Parse([]byte(header + oneProfile + `
vpod:
  schedulers:
  - name: a
    statefulSet: {name: s}
    podCapacity: 1
    schedulerPolicy:
      predicates:
      - {name: PodFitsResources}
      - {name: NoMaxResourceCount, args: {NumPartitions: 100}}
      - {name: EvenPodSpread, args: {MaxSkew: 2}}
      priorities:
      - {name: AvailabilityZonePriority, weight: 10, args: {MaxSkew: 2}}
      - {name: LowestOrdinalPriority, weight: 2}
`))
	if err != nil {
		t.Fatal(err)
	}
	got := mustVPodSettings(t, c)[0].SchedPolicy
	want := seedSchedulerPolicy // the seed's config-scheduler
	if len(got.Predicates) != len(want.Predicates) || len(got.Priorities) != len(want.Priorities) {
		t.Fatalf("policy = %s", dumpPolicy(got))
	}
	pairs := [][2]VPodPolicyEntry{}
	for i := range want.Predicates {
		pairs = append(pairs, [2]VPodPolicyEntry{got.Predicates[i], want.Predicates[i]})
	}
	for i := range want.Priorities {
		pairs = append(pairs, [2]VPodPolicyEntry{got.Priorities[i], want.Priorities[i]})
	}
	for _, p := range pairs {
		g, w := p[0], p[1]
		if g.Name != w.Name || g.Weight != w.Weight || (g.Args == nil) != (w.Args == nil) {
			t.Fatalf("entry %+v, want %+v", g, w)
		}
		if w.Args == nil {
			continue
		}
		// Both are JSON strings (what Knative's plugins require) ...
		var gs, ws string
		if err := json.Unmarshal(g.Args, &gs); err != nil {
			t.Fatalf("%s args %s: not a JSON string: %v", g.Name, g.Args, err)
		}
		if err := json.Unmarshal(w.Args, &ws); err != nil {
			t.Fatal(err)
		}
		// ... holding the same object, written compactly.
		var gv, wv any
		if json.Unmarshal([]byte(gs), &gv) != nil || json.Unmarshal([]byte(ws), &wv) != nil || !reflect.DeepEqual(gv, wv) {
			t.Fatalf("%s args %q, want the same object as %q", g.Name, gs, ws)
		}
		if strings.ContainsAny(gs, " \n") {
			t.Fatalf("%s args %q not compact", g.Name, gs)
		}
	}
}

func TestVPodDefaults(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		strategy   VPodStrategy
	}{
		{"no policy: MAXFILLUP", "{name: a, statefulSet: {name: s}, podCapacity: 10}", VPodStrategyMaxFillUp},
		{"inline policy: Policy", "{name: a, statefulSet: {name: s}, podCapacity: 10, schedulerPolicy: {predicates: [{name: PodFitsResources}]}}", VPodStrategyPolicy},
		{"empty inline policy still selects Policy", "{name: a, statefulSet: {name: s}, podCapacity: 10, schedulerPolicy: {}}", VPodStrategyPolicy},
		{"explicit MAXFILLUP", "{name: a, statefulSet: {name: s}, podCapacity: 10, strategy: MAXFILLUP}", VPodStrategyMaxFillUp},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(header + oneProfile + "vpod: {schedulers: [" + tc.yaml + "]}\n"))
			if err != nil {
				t.Fatal(err)
			}
			s := mustVPodSettings(t, c)[0]
			if s.Strategy != tc.strategy || s.Namespace != "default" ||
				s.RefreshPeriod != 30*time.Second || s.RetryPeriod != time.Second || s.MinReplicas != 0 || s.MaxReplicas != DefaultVPodMaxReplicas || s.DeschedPolicy != nil ||
				s.SchedPolicyFile != "" || s.DeschedPolicyFile != "" {
				t.Fatalf("settings = %+v", s)
			}
			crd := []VPodSource{{Kind: VPodSourceKind, Group: VPodCRDGroup, Version: VPodCRDVersion, Resource: VPodCRDResource,
				VReplicasPath: VPodCRDVReplicasPath, PlacementsPath: VPodCRDPlacementsPath}}
			if !reflect.DeepEqual(s.Sources, crd) {
				t.Fatalf("sources = %+v, want the VPod CRD", s.Sources)
			}
			if (s.SchedPolicy != nil) != (tc.strategy == VPodStrategyPolicy) {
				t.Fatalf("sched policy = %+v", s.SchedPolicy)
			}
		})
	}
	c, err := Parse([]byte(header + oneProfile))
	if err != nil {
		t.Fatal(err)
	}
	if s, err := c.VPod.Defaulted(); c.HasVPod() || s != nil || err != nil {
		t.Fatalf("no section: HasVPod %v, settings %+v, %v", c.HasVPod(), s, err)
	}
	c, err = Parse([]byte(header + oneProfile + "vpod: {}\n"))
	if err != nil || c.HasVPod() {
		t.Fatalf("empty section: %v, HasVPod %v", err, c != nil && c.HasVPod())
	}
}

func TestVPodErrorsNameTheField(t *testing.T) {
	const ok = "name: a, statefulSet: {name: s}, podCapacity: 1"
	sched := func(body string) string { return "vpod:\n  schedulers:\n  - {" + body + "}\n" }
	const f = "vpod.schedulers[0]"
	for _, tc := range []struct{ name, yaml, want string }{
		{"name missing", sched("statefulSet: {name: s}, podCapacity: 1"), "line 6: " + f + ".name: must not be empty"},
		{"name duplicate", "vpod:\n  schedulers:\n  - {" + ok + "}\n  - {name: a, statefulSet: {name: t}, podCapacity: 1}\n",
			`line 7: vpod.schedulers[1].name: duplicate "a" (also schedulers[0])`},
		{"statefulSet missing", sched("name: a, podCapacity: 1"), f + ".statefulSet.name: must name the adapter StatefulSet"},
		{"statefulSet name bad", sched("name: a, statefulSet: {name: Bad_Name}, podCapacity: 1"), f + `.statefulSet.name: "Bad_Name" is not a StatefulSet name`},
		{"namespace bad", sched("name: a, statefulSet: {name: s, namespace: a.b}, podCapacity: 1"), f + `.statefulSet.namespace: "a.b" is not a namespace name`},
		{"two schedulers on one StatefulSet", "vpod:\n  schedulers:\n  - {" + ok + "}\n  - {name: b, statefulSet: {name: s, namespace: default}, podCapacity: 1}\n",
			"vpod.schedulers[1].statefulSet.name: StatefulSet default/s is already scheduled by schedulers[0]"},
		{"capacity missing", sched("name: a, statefulSet: {name: s}"), f + ".podCapacity: required"},
		{"capacity zero", sched("name: a, statefulSet: {name: s}, podCapacity: 0"), f + ".podCapacity: must be at least 1, not 0: a pod with no capacity can hold no vreplica"},
		{"capacity negative", sched("name: a, statefulSet: {name: s}, podCapacity: -3"), f + ".podCapacity: must be at least 1, not -3"},
		{"capacity huge", sched("name: a, statefulSet: {name: s}, podCapacity: 2000000"), f + ".podCapacity: must be at most 1048576"},
		{"capacity not a number", sched("name: a, statefulSet: {name: s}, podCapacity: many"), f + `.podCapacity: "many" is not an integer`},
		{"strategy unknown", sched(ok + ", strategy: maxfillup"), f + `.strategy: must be Policy, MAXFILLUP or MAXFILLUP_SPREAD, not "maxfillup"`},
		{"Policy without policy", sched(ok + ", strategy: Policy"), f + ".schedulerPolicy: strategy Policy needs a schedulerPolicy or a schedulerPolicyFile"},
		{"policy with MAXFILLUP", sched(ok + ", strategy: MAXFILLUP, schedulerPolicy: {}"), f + ".schedulerPolicy: only strategy Policy uses a policy, and the strategy is MAXFILLUP"},
		{"policy file with MAXFILLUP_SPREAD", sched(ok + ", strategy: MAXFILLUP_SPREAD, schedulerPolicyFile: x.yaml"), f + ".schedulerPolicyFile: only strategy Policy uses a policy"},
		{"descheduler alone defaults to MAXFILLUP", sched(ok + ", deschedulerPolicy: {}"),
			f + ".deschedulerPolicy: only strategy Policy uses a policy, and the strategy is MAXFILLUP (the default without a schedulerPolicy)"},
		{"inline and file", sched(ok + ", schedulerPolicy: {}, schedulerPolicyFile: x.yaml"), f + ".schedulerPolicyFile: give schedulerPolicy or schedulerPolicyFile, not both"},
		{"desched inline and file", sched(ok + ", schedulerPolicy: {}, deschedulerPolicy: {}, deschedulerPolicyFile: x.yaml"), f + ".deschedulerPolicyFile: give deschedulerPolicy or deschedulerPolicyFile, not both"},
		{"minReplicas with MAXFILLUP", sched(ok + ", minReplicas: 2"), f + ".minReplicas: only strategy MAXFILLUP_SPREAD takes it, and the strategy is MAXFILLUP (the default"},
		{"minReplicas zero with Policy", sched(ok + ", schedulerPolicy: {}, minReplicas: 0"), f + ".minReplicas: only strategy MAXFILLUP_SPREAD takes it, and the strategy is Policy"},
		{"minReplicas negative", sched(ok + ", strategy: MAXFILLUP_SPREAD, minReplicas: -1"), f + ".minReplicas: must be at least 0, not -1"},
		{"minReplicas huge", sched(ok + ", strategy: MAXFILLUP_SPREAD, minReplicas: 20000"), f + ".minReplicas: must be at most 10000"},
		{"refresh zero", sched(ok + ", refreshPeriod: 0s"), f + ".refreshPeriod: 0s must be positive and at most 24h0m0s"},
		{"refresh negative", sched(ok + ", refreshPeriod: -5s"), f + ".refreshPeriod: -5s must be positive"},
		{"refresh not a duration", sched(ok + ", refreshPeriod: 30"), f + `.refreshPeriod: "30" is not a duration`},
		{"retry zero", sched(ok + ", retryPeriod: 0s"), f + ".retryPeriod: 0s must be positive and at most 1h0m0s"},
		{"refresh too short", sched(ok + ", refreshPeriod: 10ms"), f + ".refreshPeriod: 10ms is below the minimum 1s"},
		{"retry too short", sched(ok + ", retryPeriod: 1ns"), f + ".retryPeriod: 1ns is below the minimum 100ms"},
		{"maxReplicas zero", sched(ok + ", maxReplicas: 0"), f + ".maxReplicas: must be at least 1, not 0"},
		{"maxReplicas huge", sched(ok + ", maxReplicas: 2147483647"), f + ".maxReplicas: 2147483647 exceeds the limit 65536"},
		{"maxReplicas below minReplicas", sched(ok + ", strategy: MAXFILLUP_SPREAD, minReplicas: 5, maxReplicas: 3"), f + ".maxReplicas: must be at least minReplicas (5), not 3"},
		{"knativeCompat unknown", sched(ok + ", schedulerPolicy: {}, knativeCompat: loose"), f + `.knativeCompat: must be "strict" or "lenient", not "loose"`},
		{"knativeCompat without a policy", sched(ok + ", knativeCompat: lenient"), f + ".knativeCompat: only strategy Policy binds policies, and the strategy is MAXFILLUP"},
		{"maxScaleUpStep zero", sched(ok + ", maxScaleUpStep: 0"), f + ".maxScaleUpStep: must be at least 1, not 0"},
		{"maxScaleUpStep huge", sched(ok + ", maxScaleUpStep: 70000"), f + ".maxScaleUpStep: 70000 exceeds the limit 65536"},
		{"MaxSkew huge", sched(ok + ", schedulerPolicy: {predicates: [{name: EvenPodSpread, args: {MaxSkew: 2147483647}}]}"),
			f + ".schedulerPolicy.predicates[0].args.MaxSkew: 2147483647 exceeds the limit 100000"},
		{"MaxSkew huge in Knative's string, any case", sched(ok + `, schedulerPolicy: {}, deschedulerPolicy: {priorities: [{name: RemoveWithAvailabilityZonePriority, weight: 1, args: '{"maxskew": 100001}'}]}`),
			f + ".deschedulerPolicy.priorities[0].args.MaxSkew: 100001 exceeds the limit 100000"},
		{"NumPartitions beyond int64", sched(ok + ", schedulerPolicy: {predicates: [{name: NoMaxResourceCount, args: {NumPartitions: 99999999999999999999}}]}"),
			f + ".schedulerPolicy.predicates[0].args.NumPartitions: 100000000000000000000 exceeds the limit 100000"},
		{"predicate without name", sched(ok + ", schedulerPolicy: {predicates: [{args: {}}]}"), f + ".schedulerPolicy.predicates[0].name: must name a plugin"},
		{"predicate with weight", sched(ok + ", schedulerPolicy: {predicates: [{name: P, weight: 2}]}"), f + ".schedulerPolicy.predicates[0].weight: only priorities have weights"},
		{"priority without name", sched(ok + ", schedulerPolicy: {priorities: [{weight: 1}]}"), f + ".schedulerPolicy.priorities[0].name: must name a plugin"},
		{"priority without weight", sched(ok + ", schedulerPolicy: {priorities: [{name: P}]}"), f + ".schedulerPolicy.priorities[0].weight: required for a priority (0 runs it without effect)"},
		{"negative weight", sched(ok + ", schedulerPolicy: {}, deschedulerPolicy: {priorities: [{name: P, weight: -1}]}"), f + ".deschedulerPolicy.priorities[0].weight: must be at least 0, not -1"},
		{"args a list", sched(ok + ", schedulerPolicy: {predicates: [{name: P, args: [1]}]}"), f + ".schedulerPolicy.predicates[0].args: must be an object, or a string holding one as Knative writes it"},
		{"args a number", sched(ok + ", schedulerPolicy: {priorities: [{name: P, weight: 1, args: 2}]}"), f + ".schedulerPolicy.priorities[0].args: must be an object, or a string holding one as Knative writes it ('{\"MaxSkew\": 2}'), not a number"},
		{"Knative's capitalised keys", sched(ok + ", schedulerPolicy: {predicates: [{Name: P}]}"), f + `.schedulerPolicy.predicates[0].Name: unknown field (did you mean "name"?)`},
		{"sources empty", sched(ok + ", sources: []"), f + ".sources: must list at least one source (leave it out for [{kind: VPod}])"},
		{"source empty", sched(ok + ", sources: [{}]"), f + ".sources[0]: empty: give kind: VPod"},
		{"source kind unknown", sched(ok + ", sources: [{kind: KafkaSource}]"), f + `.sources[0].kind: must be "VPod" (the vpods.wasmsched.io CRD), not "KafkaSource"`},
		{"kind and resource", sched(ok + ", sources: [{kind: VPod, resource: kafkasources}]"), f + ".sources[0].resource: kind and resource are exclusive"},
		{"kind and path", sched(ok + ", sources: [{kind: VPod, placementsPath: status.p}]"), f + ".sources[0].placementsPath: kind and placementsPath are exclusive"},
		{"duck without version", sched(ok + ", sources: [{resource: kafkasources, vreplicasPath: spec.consumers, placementsPath: status.placements}]"), f + ".sources[0].version: must name the API version"},
		{"duck without resource", sched(ok + ", sources: [{version: v1, vreplicasPath: spec.consumers, placementsPath: status.placements}]"), f + ".sources[0].resource: must name the resource"},
		{"duck resource upper case", sched(ok + ", sources: [{version: v1, resource: KafkaSources, vreplicasPath: a, placementsPath: b}]"), f + `.sources[0].resource: "KafkaSources" is not a resource name`},
		{"duck bad group", sched(ok + ", sources: [{group: 'a b', version: v1, resource: r, vreplicasPath: a, placementsPath: b}]"), f + `.sources[0].group: "a b" is not an API group`},
		{"duck bad version", sched(ok + ", sources: [{version: V1, resource: r, vreplicasPath: a, placementsPath: b}]"), f + `.sources[0].version: "V1" is not an API version`},
		{"duck without vreplicasPath", sched(ok + ", sources: [{version: v1, resource: r, placementsPath: status.placements}]"), f + ".sources[0].vreplicasPath: must give the dotted field path (e.g. spec.consumers)"},
		{"duck without placementsPath", sched(ok + ", sources: [{version: v1, resource: r, vreplicasPath: spec.consumers}]"), f + ".sources[0].placementsPath: must give the dotted field path (e.g. status.placements)"},
		{"path empty segment", sched(ok + ", sources: [{version: v1, resource: r, vreplicasPath: spec..consumers, placementsPath: b}]"), f + `.sources[0].vreplicasPath: "spec..consumers" has an empty segment`},
		{"path trailing dot", sched(ok + ", sources: [{version: v1, resource: r, vreplicasPath: spec.consumers., placementsPath: b}]"), f + `.sources[0].vreplicasPath: "spec.consumers." has an empty segment`},
		{"path JSONPath", sched(ok + ", sources: [{version: v1, resource: r, vreplicasPath: .spec.consumers, placementsPath: b}]"), f + `.sources[0].vreplicasPath: ".spec.consumers": write a plain dotted path such as spec.consumers, not JSONPath`},
		{"path with brackets", sched(ok + ", sources: [{version: v1, resource: r, vreplicasPath: a, placementsPath: 'status.p[0]'}]"), f + `.sources[0].placementsPath: "status.p[0]": segment "p[0]" may hold only letters, digits, '_' and '-'`},
		{"same paths", sched(ok + ", sources: [{version: v1, resource: r, vreplicasPath: a.b, placementsPath: a.b}]"), f + ".sources[0].placementsPath: must differ from vreplicasPath"},
		{"duplicate source", sched(ok + ", sources: [{kind: VPod}, {kind: VPod}]"), f + ".sources[1]: duplicate source (also sources[0])"},
		{"duplicate duck source across versions", sched(ok + ", sources: [{group: g.io, version: v1, resource: r, vreplicasPath: a, placementsPath: b}, {group: g.io, version: v2, resource: r, vreplicasPath: a, placementsPath: b}]"),
			f + ".sources[1]: duplicate source (also sources[0])"},
		{"duck source in two schedulers", "vpod:\n  schedulers:\n  - {" + ok + ", sources: [{group: g.io, version: v1, resource: r, vreplicasPath: a, placementsPath: b}]}\n  - {name: b, statefulSet: {name: t}, podCapacity: 1, sources: [{group: g.io, version: v1, resource: r, vreplicasPath: a, placementsPath: b}]}\n",
			"vpod.schedulers[1].sources[0].resource: r.g.io is already a source of vpod.schedulers[0].sources[0]"},
		{"unknown field", sched(ok + ", capacity: 3"), f + ".capacity: unknown field"},
		{"section not an object", "vpod: [a]\n", "vpod: want an object, not a list"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(header + oneProfile + tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v\nwant it to contain %q", err, tc.want)
			}
		})
	}
}

// Sizing args within their bounds, and those of plugins that are not
// Knative's, load; maxReplicas defaults to at least minReplicas.
func TestVPodBoundsAccept(t *testing.T) {
	c, err := Parse([]byte(header + oneProfile + `vpod:
  schedulers:
  - name: a
    statefulSet: {name: s}
    podCapacity: 1
    maxReplicas: 65536
    refreshPeriod: 1s
    retryPeriod: 100ms
    schedulerPolicy:
      predicates:
      - {name: EvenPodSpread, args: {MaxSkew: 100000}}
      - {name: NoMaxResourceCount, args: '{"NumPartitions": 100000, "numpartitions": null}'}
      - {name: MyPlugin, args: {MaxSkew: 2147483647}}
  - {name: b, statefulSet: {name: t}, podCapacity: 1, strategy: MAXFILLUP_SPREAD, minReplicas: 300}
`))
	if err != nil {
		t.Fatal(err)
	}
	s := mustVPodSettings(t, c)
	if s[0].MaxReplicas != 65536 || s[1].MaxReplicas != 300 {
		t.Fatalf("maxReplicas %d and %d, want 65536 and 300", s[0].MaxReplicas, s[1].MaxReplicas)
	}
}

// Schedulers may share the VPod CRD (its objects name their StatefulSet)
// and the same StatefulSet name in different namespaces.
func TestVPodSchedulersShareWhatTheyMay(t *testing.T) {
	_, err := Parse([]byte(header + oneProfile + `vpod:
  schedulers:
  - {name: a, statefulSet: {name: s}, podCapacity: 1, sources: [{kind: VPod}]}
  - {name: b, statefulSet: {name: s, namespace: other}, podCapacity: 1, sources: [{kind: VPod}]}
`))
	if err != nil {
		t.Fatal(err)
	}
}

func TestVPodErrorLines(t *testing.T) {
	path := writeConfig(t, header+oneProfile+`vpod:
  schedulers:
  - name: a
    statefulSet: {name: s}
    podCapacity: 0
    schedulerPolicy:
      priorities:
      - name: P
        weight: -2
`)
	_, err := Load(path)
	var es Errors
	if !errors.As(err, &es) || len(es) != 2 {
		t.Fatalf("err = %v", err)
	}
	if es[0].Error() != path+":8: vpod.schedulers[0].podCapacity: must be at least 1, not 0: a pod with no capacity can hold no vreplica" ||
		es[1].Error() != path+":12: vpod.schedulers[0].schedulerPolicy.priorities[0].weight: must be at least 0, not -2" {
		t.Fatalf("errors:\n%s\n%s", es[0], es[1])
	}
	// Checks made later (a plugin no module serves) name the line too.
	path = writeConfig(t, header+oneProfile+"vpod:\n  schedulers:\n  - name: a\n    statefulSet: {name: s}\n    podCapacity: 1\n    schedulerPolicy:\n      predicates:\n      - name: Nope\n")
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	got := c.ErrorAt(VPodSchedulerField(0)+".schedulerPolicy.predicates[0].name", "no module serves %q", "Nope").Error()
	if want := path + `:11: vpod.schedulers[0].schedulerPolicy.predicates[0].name: no module serves "Nope"`; got != want {
		t.Fatalf("ErrorAt = %q, want %q", got, want)
	}
}

// writeIn writes name in dir.
func writeIn(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestVPodPolicyFiles(t *testing.T) {
	dir := t.TempDir()
	writeIn(t, dir, "knative/config-scheduler.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: config-scheduler, namespace: knative-eventing}\n"+seedSchedulerConfigMap)
	deschedJSON := writeIn(t, t.TempDir(), "desched.json",
		`{"priorities": [{"Name": "RemoveWithEvenPodSpreadPriority", "Weight": 10, "Args": "{\"MaxSkew\": 2}"}, {"Name": "RemoveWithAvailabilityZonePriority", "Weight": 10, "Args":  "{\"MaxSkew\": 2}"}, {"Name": "RemoveWithHighestOrdinalPriority", "Weight": 2}]}`)
	path := writeIn(t, dir, "sched.yaml", header+oneProfile+`vpod:
  schedulers:
  - name: kafka
    statefulSet: {namespace: knative-eventing, name: kafka-source-dispatcher}
    podCapacity: 20
    schedulerPolicyFile: knative/config-scheduler.yaml
    deschedulerPolicyFile: `+deschedJSON+`
`)
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	s := mustVPodSettings(t, c)[0]
	if s.Strategy != VPodStrategyPolicy {
		t.Fatalf("strategy = %q: a policy file selects Policy", s.Strategy)
	}
	if !reflect.DeepEqual(noPos(s.SchedPolicy), seedSchedulerPolicy) || !reflect.DeepEqual(noPos(s.DeschedPolicy), seedDeschedulerPolicy) {
		t.Fatalf("policies:\n%s\n%s", dumpPolicy(s.SchedPolicy), dumpPolicy(s.DeschedPolicy))
	}
	if s.SchedPolicyFile != filepath.Join(dir, "knative/config-scheduler.yaml") || s.DeschedPolicyFile != deschedJSON {
		t.Fatalf("files = %q, %q", s.SchedPolicyFile, s.DeschedPolicyFile)
	}
	// The field keeps what was written; each Defaulted gives its own copy.
	if c.VPod.Schedulers[0].SchedulerPolicyFile != "knative/config-scheduler.yaml" {
		t.Fatalf("field rewritten to %q", c.VPod.Schedulers[0].SchedulerPolicyFile)
	}
	s.SchedPolicy.Predicates[0].Name = "changed"
	if again := mustVPodSettings(t, c)[0]; again.SchedPolicy.Predicates[0].Name != "PodFitsResources" {
		t.Fatal("Defaulted shares its policy with earlier callers")
	}
}

func TestVPodPolicyFileErrorsNameFieldAndFile(t *testing.T) {
	const sched = "vpod:\n  schedulers:\n  - name: a\n    statefulSet: {name: s}\n    podCapacity: 1\n    schedulerPolicyFile: "
	for _, tc := range []struct {
		name, file, content string
		want                []string // DIR is the config's directory
	}{
		{"missing file", "nope.yaml", "", []string{":9: vpod.schedulers[0].schedulerPolicyFile: reading the policy: open DIR/nope.yaml: no such file or directory"}},
		{"malformed JSON in a ConfigMap", "cm.yaml", "kind: ConfigMap\ndata:\n  priorities: |\n    [{\"Name\": \"A\", \"Weight\": 1},\n     {\"Name\": \"B\" \"Weight\": 1}]\n",
			[]string{":9: vpod.schedulers[0].schedulerPolicyFile: DIR/cm.yaml:5: data.priorities: invalid character '\"' after object key:value pair"}},
		{"negative weight", "p.json", `{"priorities": [{"Name": "A", "Weight": -1}]}`,
			[]string{"vpod.schedulers[0].schedulerPolicyFile: DIR/p.json:1: priorities[0].Weight: must be at least 0, not -1"}},
		{"not a policy", "p.json", `[1]`, []string{"schedulerPolicyFile: DIR/p.json:1: want a Knative ConfigMap"}},
		{"a directory", "sub", "", []string{"schedulerPolicyFile: reading the policy:"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.content != "" {
				writeIn(t, dir, tc.file, tc.content)
			}
			if tc.file == "sub" {
				if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			path := writeIn(t, dir, "sched.yaml", header+oneProfile+sched+tc.file+"\n")
			_, err := Load(path)
			if err == nil {
				t.Fatal("loaded")
			}
			var e *Error
			if !errors.As(err, &e) || e.File != path || e.Field != "vpod.schedulers[0].schedulerPolicyFile" {
				t.Fatalf("err = %#v", err)
			}
			for _, w := range tc.want {
				if w = strings.ReplaceAll(w, "DIR", dir); !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v\nwant it to contain %q", err, w)
				}
			}
		})
	}
}

// A configuration built in code reads its policy file when defaulted.
func TestVPodDefaultedReadsUnloadedFiles(t *testing.T) {
	file := writeIn(t, t.TempDir(), "cm.yaml", seedSchedulerConfigMap)
	one := int32(1)
	v := &VPod{Schedulers: []VPodScheduler{{Name: "a", StatefulSet: VPodStatefulSet{Name: "s"}, PodCapacity: &one, SchedulerPolicyFile: file}}}
	got, err := v.Defaulted()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(noPos(got[0].SchedPolicy), seedSchedulerPolicy) || got[0].SchedPolicyFile != file {
		t.Fatalf("policy = %s from %q", dumpPolicy(got[0].SchedPolicy), got[0].SchedPolicyFile)
	}
	v.Schedulers[0].SchedulerPolicyFile = file + ".missing"
	if _, err := v.Defaulted(); err == nil || !strings.Contains(err.Error(), "vpod.schedulers[0].schedulerPolicyFile: reading the policy") {
		t.Fatalf("err = %v", err)
	}
}

// A vpod section Validate accepts resolves to settings the engine can run
// with.
func FuzzVPodSettings(f *testing.F) {
	f.Add([]byte(header + oneProfile + "vpod: {schedulers: [{name: a, statefulSet: {name: s}, podCapacity: 3, schedulerPolicy: {predicates: [{name: P, args: {x: 1}}], priorities: [{name: Q, weight: 2, args: '{}'}]}}]}"))
	f.Add([]byte(header + oneProfile + "vpod: {schedulers: [{name: a, statefulSet: {name: s, namespace: n}, podCapacity: 1, strategy: MAXFILLUP_SPREAD, minReplicas: 2, refreshPeriod: 1m, retryPeriod: 2s, sources: [{kind: VPod}, {group: g.io, version: v1, resource: r, vreplicasPath: spec.n, placementsPath: status.p}]}]}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Parse(b)
		if err != nil || c.VPod == nil {
			return
		}
		ss, err := c.VPod.Defaulted()
		if err != nil {
			t.Fatalf("Defaulted after a valid Parse: %v", err)
		}
		for _, s := range ss {
			ok := s.Name != "" && s.Namespace != "" && s.StatefulSet != "" && s.Capacity >= 1 &&
				s.RefreshPeriod > 0 && s.RetryPeriod > 0 && len(s.Sources) > 0 && s.MinReplicas >= 0 &&
				(s.MinReplicas == 0 || s.Strategy == VPodStrategyMaxFillUpSpread) &&
				(s.Strategy == VPodStrategyPolicy) == (s.SchedPolicy != nil) &&
				(s.DeschedPolicy == nil || s.Strategy == VPodStrategyPolicy)
			if !ok {
				t.Fatalf("accepted settings %+v", s)
			}
			for _, p := range []*VPodPolicy{s.SchedPolicy, s.DeschedPolicy} {
				if p == nil {
					continue
				}
				for _, e := range append(append([]VPodPolicyEntry(nil), p.Predicates...), p.Priorities...) {
					var str string
					if e.Name == "" || e.Weight < 0 || e.Args != nil && json.Unmarshal(e.Args, &str) != nil {
						t.Fatalf("accepted entry %+v: args must be a JSON string", e)
					}
				}
			}
		}
	})
}

// knativeCompat and maxScaleUpStep reach the settings, and lenient marks
// both policies; every policy entry says where it was written, inline or
// in a file, so that the engine's refusal of it names the line.
func TestVPodCompatAndEntryPositions(t *testing.T) {
	dir := t.TempDir()
	file := writeIn(t, dir, "desched.json", "{\"priorities\": [\n  {\"Name\": \"RemoveWithHighestOrdinalPriority\", \"Weight\": 1},\n  {\"Name\": \"RemoveWithEvenPodSpreadPriority\", \"Weight\": 1, \"Args\": \"{\\\"MaxSkw\\\": 2}\"}\n]}\n")
	path := writeIn(t, dir, "c.yaml", header+oneProfile+`vpod:
  schedulers:
  - name: a
    statefulSet: {name: s}
    podCapacity: 2
    knativeCompat: lenient
    maxScaleUpStep: 4
    schedulerPolicy:
      predicates:
      - name: PodFitsResources
      - name: PodFitsResource
    deschedulerPolicyFile: desched.json
  - name: b
    statefulSet: {name: t}
    podCapacity: 2
    schedulerPolicy:
      predicates: [{name: PodFitsResources}]
`)
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	s := mustVPodSettings(t, c)
	if s[0].KnativeCompat != VPodKnativeLenient || !s[0].SchedPolicy.Lenient || !s[0].DeschedPolicy.Lenient || s[0].MaxScaleUpStep != 4 {
		t.Fatalf("scheduler a: compat %q, lenient %v/%v, step %d", s[0].KnativeCompat, s[0].SchedPolicy.Lenient, s[0].DeschedPolicy.Lenient, s[0].MaxScaleUpStep)
	}
	if s[1].KnativeCompat != VPodKnativeStrict || s[1].SchedPolicy.Lenient || s[1].MaxScaleUpStep != 0 {
		t.Fatalf("scheduler b: compat %q, lenient %v, step %d", s[1].KnativeCompat, s[1].SchedPolicy.Lenient, s[1].MaxScaleUpStep)
	}
	if e := s[0].SchedPolicy.Predicates[1]; e.File != path || e.Line != 14 || e.Field != "vpod.schedulers[0].schedulerPolicy.predicates[1]" {
		t.Errorf("inline entry at %s:%d %s", e.File, e.Line, e.Field)
	}
	if e := s[0].DeschedPolicy.Priorities[1]; e.File != file || e.Line != 3 || e.Field != "priorities[1]" {
		t.Errorf("file entry at %s:%d %s", e.File, e.Line, e.Field)
	}
}
