package config

import (
	"strings"
	"testing"
)

// TestKubeSchedulerProfileRulesAreEnforcedAtLoad: each of kube-scheduler
// v1.35's refusals of a profile's plugin sets that needs no module
// (validation.go, NewFramework's duplicate checks) is a refusal at load in
// both formats, naming the field as kube-scheduler does. The
// KubeSchedulerConfiguration file of a case is its own-format file with
// kube's header, or kube when the two must differ.
func TestKubeSchedulerProfileRulesAreEnforcedAtLoad(t *testing.T) {
	for _, tc := range []struct {
		name string
		own  string // profiles and settings, after the header
		kube string // "" for the same text as own
		want []string
	}{
		{name: "plugin twice in multiPoint with different weights",
			own:  "profiles:\n- schedulerName: a\n  plugins:\n    multiPoint:\n      enabled: [{name: NodeResourcesFit, weight: 3}, {name: ImageLocality}, {name: NodeResourcesFit, weight: 5}]\n",
			want: []string{`line 7: profiles[0].plugins.multiPoint.enabled[2]: plugin "NodeResourcesFit" already registered as "MultiPoint" with weight 3 by enabled[0]`}},
		{name: "plugin twice in multiPoint with the same weight",
			own:  "profiles:\n- schedulerName: a\n  plugins:\n    multiPoint:\n      enabled: [{name: TaintToleration}, {name: TaintToleration}]\n",
			want: []string{`profiles[0].plugins.multiPoint.enabled[1]: plugin "TaintToleration" already registered as "MultiPoint" by enabled[0]`}},
		{name: "plugin twice at one point",
			own: "profiles:\n- schedulerName: a\n  plugins:\n    score:\n      enabled: [{name: ImageLocality, weight: 2}, {name: ImageLocality, weight: 4}]\n" +
				"    filter:\n      enabled: [{name: NodePorts}, {name: NodeName}, {name: NodePorts}]\n",
			want: []string{`profiles[0].plugins.score.enabled[1]: plugin "ImageLocality" already registered as "Score" with weight 2 by enabled[0]`,
				`profiles[0].plugins.filter.enabled[2]: plugin "NodePorts" already registered as "Filter" by enabled[0]`}},
		{name: "queue sort listed twice",
			own:  "profiles:\n- schedulerName: a\n  plugins:\n    queueSort:\n      enabled: [{name: PrioritySort}, {name: PrioritySort}]\n",
			want: []string{`profiles[0].plugins.queueSort.enabled[1]: plugin "PrioritySort" already registered as "QueueSort" by enabled[0]`}},
		{name: "two queue sort plugins",
			own:  "profiles:\n- schedulerName: a\n  plugins:\n    queueSort:\n      enabled: [{name: PrioritySort}, {name: NodeName}]\n",
			want: []string{`profiles[0].plugins.queueSort.enabled: only one queue sort plugin can be enabled, not 2`}},
		{name: "a shadow's plugin sets obey the same rules",
			own:  "profiles:\n- schedulerName: a\n  shadow:\n    plugins:\n      filter:\n        enabled: [{name: NodePorts}, {name: NodePorts}]\n",
			kube: "-", // a KubeSchedulerConfiguration has no shadows
			want: []string{`profiles[0].shadow.plugins.filter.enabled[1]: plugin "NodePorts" already registered as "Filter" by enabled[0]`}},
		{name: "a profile whose multiPoint drops the queue sort differs from one that keeps it",
			own:  "profiles:\n- schedulerName: a\n- schedulerName: b\n  plugins:\n    multiPoint:\n      disabled: [{name: '*'}]\n",
			want: []string{`profiles[1].plugins.queueSort: (none) differs from profiles[0]'s PrioritySort: all profiles share one queue`}},
		{name: "queue sort args differ between profiles",
			own: "profiles:\n- schedulerName: a\n  pluginConfig: [{name: PrioritySort, args: {x: 1}}]\n" +
				"- schedulerName: b\n  pluginConfig: [{name: ImageLocality}, {name: PrioritySort, args: {x: 2}}]\n",
			want: []string{`profiles[1].pluginConfig[1].args: the args of the queue sort PrioritySort differ from profiles[0]'s`}},
		{name: "queue sort args in one profile only",
			own:  "profiles:\n- schedulerName: a\n- schedulerName: b\n  pluginConfig: [{name: PrioritySort, args: {x: 2}}]\n",
			want: []string{`profiles[1].pluginConfig[0].args: the args of the queue sort PrioritySort differ from profiles[0]'s`}},
		{name: "initial backoff above the maximum's default",
			own:  "podInitialBackoffSeconds: 20\nprofiles: [{schedulerName: a}]\n",
			want: []string{`line 3: podInitialBackoffSeconds: 20 exceeds podMaxBackoffSeconds, which defaults to 10`}},
		{name: "kube: SchedulingGates twice in multiPoint, named by written index",
			kube: "profiles:\n- plugins:\n    multiPoint:\n      enabled: [{name: SchedulingGates}, {name: NodeName}, {name: SchedulingGates}]\n",
			want: []string{`profiles[0].plugins.multiPoint.enabled[2]: plugin "SchedulingGates" already registered as "MultiPoint" by enabled[0]`}},
		{name: "kube: a duplicate after a dropped SchedulingGates keeps its written index",
			kube: "profiles:\n- plugins:\n    multiPoint:\n      enabled: [{name: SchedulingGates}, {name: ImageLocality, weight: 2}, {name: ImageLocality, weight: 3}]\n",
			want: []string{`profiles[0].plugins.multiPoint.enabled[2]: plugin "ImageLocality" already registered as "MultiPoint" with weight 2 by enabled[1]`}},
		{name: "kube: preEnqueue plugin twice",
			kube: "profiles:\n- plugins:\n    preEnqueue:\n      enabled: [{name: SchedulingGates}, {name: SchedulingGates}]\n",
			want: []string{`profiles[0].plugins.preEnqueue.enabled[1]: plugin "SchedulingGates" already registered as "PreEnqueue" by enabled[0]`}},
		{name: "kube: queueSort sections must be written alike",
			kube: "profiles:\n- schedulerName: a\n  plugins:\n    queueSort:\n      enabled: [{name: PrioritySort}]\n- schedulerName: b\n",
			want: []string{`profiles[1].plugins.queueSort: must be the same for all profiles: it differs from profiles[0]'s as written`}},
		{name: "kube: pluginConfig of a plugin v1 removed",
			kube: "profiles:\n- pluginConfig: [{name: ImageLocality}, {name: EBSLimits}]\n",
			want: []string{`profiles[0].pluginConfig[1]: "EBSLimits" was invalid in version "kubescheduler.config.k8s.io/v1"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.own != "" {
				t.Run("own", func(t *testing.T) { refused(t, header+tc.own, tc.want) })
			}
			kube := tc.kube
			if kube == "" {
				kube = tc.own
			}
			if kube != "-" {
				t.Run("kube", func(t *testing.T) { refused(t, kubeHeader+kube, tc.want) })
			}
		})
	}
}

// refused parses yaml and checks that it is refused with every want.
func refused(t *testing.T, yaml string, want []string) {
	t.Helper()
	c, err := Parse([]byte(yaml))
	if err == nil {
		t.Fatalf("accepted: %+v", c.Profiles)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("err = %v\nwant it to contain %q", err, w)
		}
	}
}

// TestKubeSchedulerProfileRulesAcceptWhatKubeSchedulerAccepts: the
// overrides kube-scheduler allows are not mistaken for duplicates.
func TestKubeSchedulerProfileRulesAcceptWhatKubeSchedulerAccepts(t *testing.T) {
	for _, tc := range []struct{ name, yaml string }{
		{"a default re-enabled in multiPoint with another weight", "profiles:\n- schedulerName: a\n  plugins:\n    multiPoint:\n      enabled: [{name: TaintToleration, weight: 5}]\n"},
		{"a multiPoint plugin overridden at one point", "profiles:\n- schedulerName: a\n  plugins:\n    multiPoint:\n      enabled: [{name: ImageLocality, weight: 2}]\n" +
			"    score:\n      enabled: [{name: ImageLocality, weight: 4}]\n"},
		{"disabled and enabled again at one point", "profiles:\n- schedulerName: a\n  plugins:\n    score:\n      disabled: [{name: ImageLocality}]\n      enabled: [{name: ImageLocality, weight: 4}]\n"},
		{"the same queue sort args in every profile, in any key order", "profiles:\n- schedulerName: a\n  pluginConfig: [{name: PrioritySort, args: {x: 1, y: 2}}]\n" +
			"- schedulerName: b\n  pluginConfig: [{name: PrioritySort, args: {y: 2, x: 1}}]\n"},
		{"no args and empty args are the same", "profiles:\n- schedulerName: a\n- schedulerName: b\n  pluginConfig: [{name: PrioritySort, args: {}}]\n"},
		{"both backoffs raised together", "podInitialBackoffSeconds: 20\npodMaxBackoffSeconds: 20\nprofiles: [{schedulerName: a}]\n"},
		{"a maximum alone above the initial's default", "podMaxBackoffSeconds: 2\nprofiles: [{schedulerName: a}]\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, h := range []string{header, kubeHeader} {
				if _, err := Parse([]byte(h + tc.yaml)); err != nil {
					t.Errorf("%s: %v", strings.SplitN(h, "\n", 2)[0], err)
				}
			}
		})
	}
}
