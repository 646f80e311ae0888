package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// The rules in this file are kube-scheduler v1.35's own refusals of a
// profile's plugin sets (pkg/scheduler/apis/config/validation and the
// framework runtime's NewFramework), applied to both formats at load, so
// that a file kube-scheduler would refuse to start with is refused here
// too, rather than accepted and then failing every pod. The rules that
// need to know which plugin implements which point (exactly one queue
// sort, at least one bind plugin) are the framework's, when profiles are
// built, as in kube-scheduler.

// noQueueSort stands for a profile whose queue sort is disabled.
const noQueueSort = "(none)"

// checkPluginSet checks one extension point's set (f is its path,
// "profiles[0].plugins.score"): names, weights, and each plugin enabled
// once. kube-scheduler refuses a plugin enabled twice at one point, in
// multiPoint too ("plugin %q already registered as %q"), whatever the
// weights: which entry would win is not something a file should leave to
// the reader.
func checkPluginSet(ns NamedSet, f string, add func(field, format string, a ...any)) {
	first := map[string]int{}
	for k, pl := range ns.Set.Enabled {
		pf := fmt.Sprintf("%s.enabled[%d]", f, k)
		if pl.Name == "" || pl.Name == "*" {
			add(pf+".name", "must name a plugin")
			continue
		}
		if pl.Weight < 0 || pl.Weight > MaxWeight {
			add(pf+".weight", "%d is outside 0..%d (0 means the default)", pl.Weight, MaxWeight)
		}
		if pl.Weight != 0 && ns.Name != "score" && ns.Name != "multiPoint" {
			add(pf+".weight", "only score plugins have weights")
		}
		if j, dup := first[pl.Name]; dup {
			add(pf, "%s", alreadyRegistered(pl.Name, ns.Name, j, ns.Set.Enabled[j].Weight))
			continue
		}
		first[pl.Name] = k
	}
	for k, pl := range ns.Set.Disabled {
		if pl.Name == "" {
			add(fmt.Sprintf("%s.disabled[%d].name", f, k), "must name a plugin or be \"*\"")
		}
	}
}

// alreadyRegistered is kube-scheduler's refusal of a plugin enabled twice
// at one point, naming the first entry (index j, its weight when it has
// one) so the reader sees which two collide.
func alreadyRegistered(name, point string, j int, weight int32) string {
	msg := fmt.Sprintf("plugin %q already registered as %q", name, pointTitle(point))
	if weight != 0 {
		msg += fmt.Sprintf(" with weight %d", weight)
	}
	return msg + fmt.Sprintf(" by enabled[%d]: enable a plugin once per extension point", j)
}

// pointTitle is an extension point's name as kube-scheduler's messages
// write it ("multiPoint" → "MultiPoint").
func pointTitle(point string) string {
	if point == "" {
		return point
	}
	return strings.ToUpper(point[:1]) + point[1:]
}

// checkOneQueueSortEnabled refuses a queueSort list naming more than one
// plugin: a profile sorts its queue one way (kube-scheduler: "only one
// queue sort plugin can be enabled").
func checkOneQueueSortEnabled(s PluginSet, f string, add func(field, format string, a ...any)) {
	names := map[string]bool{}
	for _, p := range s.Enabled {
		if p.Name != "" && p.Name != "*" {
			names[p.Name] = true
		}
	}
	if len(names) > 1 {
		add(f+".enabled", "only one queue sort plugin can be enabled, not %d", len(names))
	}
}

// checkCommonQueueSort: every profile shares one queue, so all must sort
// it with the same plugin and the same args (KEP-1451; kube-scheduler
// refuses "different queue sort plugins" and "different queue sort plugin
// args").
func checkCommonQueueSort(profiles []Profile, add func(field, format string, a ...any)) {
	if len(profiles) < 2 {
		return
	}
	qs0 := queueSortOf(&profiles[0])
	args0, _ := pluginArgs(&profiles[0], qs0)
	for i := 1; i < len(profiles); i++ {
		p := &profiles[i]
		qs := queueSortOf(p)
		if qs != qs0 {
			add(fmt.Sprintf("profiles[%d].plugins.queueSort", i), "%s differs from profiles[0]'s %s: all profiles share one queue and must use the same queue sort",
				qs, qs0)
			continue
		}
		if args, k := pluginArgs(p, qs); !sameArgs(args, args0) {
			f := fmt.Sprintf("profiles[%d].pluginConfig", i)
			if k >= 0 {
				f = fmt.Sprintf("%s[%d].args", f, k)
			}
			add(f, "the args of the queue sort %s differ from profiles[0]'s: all profiles share one queue and must sort it the same way", qs)
		}
	}
}

// queueSortOf names a profile's queue sort as kube-scheduler's merge makes
// it: PrioritySort, the default multiPoint entry, unless multiPoint or
// queueSort disables it; a queueSort entry replaces it. Only the host's
// PrioritySort sorts a queue (Wasm plugins have no queueSort point), so
// no other multiPoint entry can be one.
func queueSortOf(p *Profile) string {
	if p.Plugins == nil {
		return DefaultQueueSort
	}
	qs := DefaultQueueSort
	if disablesPlugin(p.Plugins.MultiPoint, DefaultQueueSort) && !enablesPlugin(p.Plugins.MultiPoint, DefaultQueueSort) {
		qs = noQueueSort
	}
	if disablesPlugin(p.Plugins.QueueSort, DefaultQueueSort) {
		qs = noQueueSort
	}
	if len(p.Plugins.QueueSort.Enabled) > 0 {
		qs = p.Plugins.QueueSort.Enabled[0].Name
	}
	return qs
}

func disablesPlugin(s PluginSet, name string) bool {
	for _, d := range s.Disabled {
		if d.Name == name || d.Name == "*" {
			return true
		}
	}
	return false
}

func enablesPlugin(s PluginSet, name string) bool {
	for _, e := range s.Enabled {
		if e.Name == name {
			return true
		}
	}
	return false
}

// pluginArgs returns a profile's args for plugin and their index in
// pluginConfig (-1 when it has none).
func pluginArgs(p *Profile, plugin string) (json.RawMessage, int) {
	for k, pc := range p.PluginConfig {
		if pc.Name == plugin {
			return pc.Args, k
		}
	}
	return nil, -1
}

// sameArgs compares two args documents by value (key order and spacing
// aside); none, null and {} are the same: no args.
func sameArgs(a, b json.RawMessage) bool {
	va, okA := argsTree(a)
	vb, okB := argsTree(b)
	if !okA || !okB {
		return bytes.Equal(bytes.TrimSpace(a), bytes.TrimSpace(b))
	}
	return reflect.DeepEqual(va, vb)
}

func argsTree(raw json.RawMessage) (any, bool) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, true
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, false
	}
	if m, ok := v.(map[string]any); ok && len(m) == 0 {
		return nil, true
	}
	return v, true
}

// checkBackoffOrder: the backoff grows from the initial to the maximum,
// so the maximum must not be below the initial, a default counting as
// written (kube-scheduler checks the defaulted values: an initial backoff
// of 20 with no maximum is refused against the maximum's default, 10).
func checkBackoffOrder(initial, maximum *int64, add func(string, string, ...any)) {
	i, m := int64(DefaultPodInitialBackoffSeconds), int64(DefaultPodMaxBackoffSeconds)
	if initial != nil {
		i = *initial
	}
	if maximum != nil {
		m = *maximum
	}
	switch {
	case i <= 0 || m <= 0 || m >= i:
		// Out of range (checkBackoff says so) or in order.
	case maximum != nil:
		add("podMaxBackoffSeconds", "must be at least podInitialBackoffSeconds")
	default:
		add("podInitialBackoffSeconds", "%d exceeds podMaxBackoffSeconds, which defaults to %d: it must be at most podMaxBackoffSeconds (set that too)", i, m)
	}
}
