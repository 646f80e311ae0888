// Package taintviolation is an example eviction policy written the way a
// vendor would write their own: RemovePodsViolatingNodeTaints, the
// descheduler's idea in our code. A pod that no longer tolerates a
// NoSchedule taint of its node (the taint was added after the pod was
// scheduled) is evicted, so the scheduler can place it where it is
// welcome. It uses only the guest SDK and the abi package; see README.md
// for how to build, configure and test it. The module's main package is
// ./cmd.
package taintviolation

import (
	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
)

// Name is the plugin's name in an eviction profile.
const Name = "RemovePodsViolatingNodeTaints"

// CoordinatorTaintPrefix starts the keys of the taints the eviction
// coordinator itself puts on nodes under pressure
// (eviction.wasmsched.io/<condition>, NoSchedule by default). The policy
// never counts them: pods already on a pressured node were scheduled
// before the taint and do not tolerate it, so counting it would force
// every pod off a node whose pressure calls for one eviction per round,
// and the taint is lifted as soon as the pressure ends.
const CoordinatorTaintPrefix = "eviction.wasmsched.io/"

// Registration lets a module register the plugin with guest.Register.
var Registration = plugin.Registration{Name: Name, New: New}

// RemovePodsViolatingNodeTaints evicts pods that do not tolerate a
// NoSchedule (optionally PreferNoSchedule) taint of their node. NoExecute
// taints are left to Kubernetes' own taint manager, which already evicts
// pods that do not tolerate them.
type RemovePodsViolatingNodeTaints struct {
	preferNoSchedule bool
	excluded         []excludedTaint
}

var _ plugin.EvictPodsPlugin = (*RemovePodsViolatingNodeTaints)(nil)

// excludedTaint is one entry of excludedTaints: a key alone excludes
// every taint with that key; key=value only the taint with that value.
type excludedTaint struct {
	key, value string
	anyValue   bool
}

// argError names the bad field, as the host expects of a refused arg.
type argError struct{ field, msg string }

func (e *argError) Error() string { return e.field + ": " + e.msg }

// New builds the plugin from its args (nil: the defaults):
//
//	includePreferNoSchedule: bool     also count PreferNoSchedule taints (default false)
//	excludedTaints: [key | key=value] taints never counted
func New(args *abi.Value, _ plugin.Handle) (plugin.Plugin, error) {
	pl := &RemovePodsViolatingNodeTaints{}
	if args.IsNull() {
		return pl, nil
	}
	if args.Kind != abi.KindMap {
		return nil, &argError{"args", "expected an object, got " + args.Kind.String()}
	}
	for i := range args.Map {
		f := &args.Map[i]
		switch f.Key {
		case "includePreferNoSchedule":
			switch f.Value.Kind {
			case abi.KindNull:
			case abi.KindBool:
				pl.preferNoSchedule = f.Value.Bool
			default:
				return nil, &argError{f.Key, "expected bool, got " + f.Value.Kind.String()}
			}
		case "excludedTaints":
			if f.Value.Kind == abi.KindNull {
				continue
			}
			if f.Value.Kind != abi.KindList {
				return nil, &argError{f.Key, "expected list, got " + f.Value.Kind.String()}
			}
			for j := range f.Value.List {
				ex, ok := parseExcluded(&f.Value.List[j])
				if !ok {
					return nil, &argError{f.Key + "[" + itoa(j) + "]", "expected \"key\" or \"key=value\" with a non-empty key"}
				}
				pl.excluded = append(pl.excluded, ex)
			}
		default:
			return nil, &argError{f.Key, "unknown field"}
		}
	}
	return pl, nil
}

func parseExcluded(v *abi.Value) (excludedTaint, bool) {
	if v.Kind != abi.KindString {
		return excludedTaint{}, false
	}
	s := v.Str
	for i := 0; i < len(s); i++ {
		if s[i] == '=' {
			return excludedTaint{key: s[:i], value: s[i+1:]}, i > 0
		}
	}
	return excludedTaint{key: s, anyValue: true}, s != ""
}

// Name implements plugin.Plugin.
func (*RemovePodsViolatingNodeTaints) Name() string { return Name }

// counts reports whether taint t is one the policy holds pods to.
func (pl *RemovePodsViolatingNodeTaints) counts(t *abi.Taint) bool {
	switch {
	case t.Effect == abi.EffectNoSchedule:
	case t.Effect == abi.EffectPreferNoSchedule && pl.preferNoSchedule:
	default:
		return false
	}
	if len(t.Key) >= len(CoordinatorTaintPrefix) && t.Key[:len(CoordinatorTaintPrefix)] == CoordinatorTaintPrefix {
		return false
	}
	for _, ex := range pl.excluded {
		if ex.key == t.Key && (ex.anyValue || ex.value == t.Value) {
			return false
		}
	}
	return true
}

// untolerated returns the first counted taint of the node the pod does
// not tolerate, or nil.
func (pl *RemovePodsViolatingNodeTaints) untolerated(node *plugin.EvictionNode, pod *abi.Pod) *abi.Taint {
	taints := node.Node.Taints
	for i := range taints {
		t := &taints[i]
		if !pl.counts(t) {
			continue
		}
		tolerated := false
		for j := range pod.Tolerations {
			if pod.Tolerations[j].ToleratesTaint(t) {
				tolerated = true
				break
			}
		}
		if !tolerated {
			return t
		}
	}
	return nil
}

// GetEvictPods names every candidate that does not tolerate a counted
// taint, lowest priority first (then by name), each forced: the pod has
// no business on the node, whatever the node's load.
func (pl *RemovePodsViolatingNodeTaints) GetEvictPods(node *plugin.EvictionNode, limit int) ([]abi.EvictPod, *abi.EvictionCondition) {
	if len(node.Node.Taints) == 0 {
		return nil, nil
	}
	var out []abi.EvictPod
	for _, c := range node.Candidates {
		pod := node.Pod(c)
		if pod == nil {
			continue
		}
		t := pl.untolerated(node, pod)
		if t == nil {
			continue
		}
		out = append(out, abi.EvictPod{Pod: c, Force: true,
			Reason: "pod does not tolerate taint " + t.Key + "=" + t.Value + ":" + t.Effect.String() + " on node " + node.Name()})
	}
	// Lowest priority first, then name: an insertion sort, as the pods of
	// one node are few and the sort package would grow the module.
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && before(node.Pod(out[j].Pod), node.Pod(out[j-1].Pod)); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

func before(a, b *abi.Pod) bool {
	if a.Priority != b.Priority {
		return a.Priority < b.Priority
	}
	if a.Name != b.Name {
		return a.Name < b.Name
	}
	return a.Namespace < b.Namespace
}

// itoa formats a small non-negative integer for messages (strconv would
// add kilobytes to the module).
func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}
