package podtopologyspread

import (
	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/plugins-wasm/internal/argparse"
	"github.com/wasmsched/wasmsched/plugins-wasm/internal/kubename"
)

// DefaultingType says where the constraints of a pod without its own come
// from.
type DefaultingType uint8

const (
	// SystemDefaulting: kube's built-in soft zone/hostname spreading.
	SystemDefaulting DefaultingType = iota
	// ListDefaulting: args.defaultConstraints.
	ListDefaulting
)

// Well-known topology keys of the system defaults.
const (
	LabelHostname = "kubernetes.io/hostname"
	LabelZone     = "topology.kubernetes.io/zone"
)

// systemDefaultConstraints are kube-scheduler's built-in defaults: soft
// spreading over zones (maxSkew 5) and hosts (maxSkew 3).
var systemDefaultConstraints = []abi.TopologySpreadConstraint{
	{MaxSkew: 3, TopologyKey: LabelHostname, WhenUnsatisfiable: abi.ScheduleAnyway},
	{MaxSkew: 5, TopologyKey: LabelZone, WhenUnsatisfiable: abi.ScheduleAnyway},
}

// Args are PodTopologySpreadArgs.
type Args struct {
	DefaultConstraints []abi.TopologySpreadConstraint
	DefaultingType     DefaultingType
}

// ParseArgs reads and validates args as ValidatePodTopologySpreadArgs does.
// nil or null: System defaulting.
func ParseArgs(v *abi.Value) (Args, error) {
	var a Args
	if err := argparse.Map(v, "", "defaultConstraints", "defaultingType", "apiVersion", "kind"); err != nil {
		return a, err
	}
	if v.IsNull() {
		return a, nil
	}
	dt, ok, err := argparse.String(v.Get("defaultingType"), "defaultingType")
	if err != nil {
		return a, err
	}
	if ok {
		switch dt {
		case "System":
			a.DefaultingType = SystemDefaulting
		case "List":
			a.DefaultingType = ListDefaulting
		default:
			return a, argparse.Errorf("defaultingType", "Unsupported value: "+argparse.Quote(dt)+`: supported values: "List", "System"`)
		}
	}
	items, err := argparse.List(v.Get("defaultConstraints"), "defaultConstraints")
	if err != nil {
		return a, err
	}
	for i := range items {
		c, err := parseConstraint(&items[i], argparse.Index("defaultConstraints", i))
		if err != nil {
			return a, err
		}
		for j := range a.DefaultConstraints {
			p := &a.DefaultConstraints[j]
			if p.TopologyKey == c.TopologyKey && p.WhenUnsatisfiable == c.WhenUnsatisfiable {
				return a, argparse.Errorf(argparse.Index("defaultConstraints", i),
					"Duplicate value: {"+argparse.Quote(c.TopologyKey)+", "+argparse.Quote(whenName(c.WhenUnsatisfiable))+"}")
			}
		}
		a.DefaultConstraints = append(a.DefaultConstraints, c)
	}
	if a.DefaultingType == SystemDefaulting && len(a.DefaultConstraints) > 0 {
		return a, argparse.Errorf("defaultingType", `Invalid value: "System": when .defaultingType is "System", .defaultConstraints must be empty`)
	}
	return a, nil
}

func whenName(w abi.WhenUnsatisfiable) string {
	if w == abi.ScheduleAnyway {
		return "ScheduleAnyway"
	}
	return "DoNotSchedule"
}

// parseConstraint reads one default constraint; labelSelector is
// forbidden (the selector comes from the pod's controllers).
func parseConstraint(v *abi.Value, path string) (abi.TopologySpreadConstraint, error) {
	var c abi.TopologySpreadConstraint
	if err := argparse.Map(v, path, "maxSkew", "topologyKey", "whenUnsatisfiable", "labelSelector",
		"minDomains", "nodeAffinityPolicy", "nodeTaintsPolicy", "matchLabelKeys"); err != nil {
		return c, err
	}
	if !v.Get("labelSelector").IsNull() {
		return c, argparse.Errorf(path+".labelSelector", "Forbidden: constraint must not define a selector, as they deduced for each pod")
	}
	skew, ok, err := argparse.Int32(v.Get("maxSkew"), path+".maxSkew")
	if err != nil {
		return c, err
	}
	if !ok || skew <= 0 {
		return c, argparse.Invalid(path+".maxSkew", argparse.Itoa(int64(skew)), "must be greater than zero")
	}
	c.MaxSkew = skew
	key, ok, err := argparse.String(v.Get("topologyKey"), path+".topologyKey")
	if err != nil {
		return c, err
	}
	if !ok || key == "" {
		return c, argparse.Errorf(path+".topologyKey", "Required value: can not be empty")
	}
	if !kubename.IsQualifiedName(key) {
		return c, argparse.Invalid(path+".topologyKey", argparse.Quote(key), "must be a qualified name")
	}
	c.TopologyKey = key
	w, _, err := argparse.String(v.Get("whenUnsatisfiable"), path+".whenUnsatisfiable")
	if err != nil {
		return c, err
	}
	switch w {
	case "DoNotSchedule":
		c.WhenUnsatisfiable = abi.DoNotSchedule
	case "ScheduleAnyway":
		c.WhenUnsatisfiable = abi.ScheduleAnyway
	default:
		return c, argparse.Errorf(path+".whenUnsatisfiable", "Unsupported value: "+argparse.Quote(w)+`: supported values: "DoNotSchedule", "ScheduleAnyway"`)
	}
	md, ok, err := argparse.Int32(v.Get("minDomains"), path+".minDomains")
	if err != nil {
		return c, err
	}
	if ok {
		if md <= 0 {
			return c, argparse.Invalid(path+".minDomains", argparse.Itoa(int64(md)), "must be greater than zero")
		}
		if c.WhenUnsatisfiable != abi.DoNotSchedule {
			return c, argparse.Invalid(path+".minDomains", argparse.Itoa(int64(md)), "can only use minDomains if whenUnsatisfiable=DoNotSchedule")
		}
		c.MinDomains = md
	}
	if c.NodeAffinityPolicy, err = parsePolicy(v.Get("nodeAffinityPolicy"), path+".nodeAffinityPolicy"); err != nil {
		return c, err
	}
	if c.NodeTaintsPolicy, err = parsePolicy(v.Get("nodeTaintsPolicy"), path+".nodeTaintsPolicy"); err != nil {
		return c, err
	}
	c.MatchLabelKeys, err = argparse.Strings(v.Get("matchLabelKeys"), path+".matchLabelKeys")
	return c, err
}

func parsePolicy(v *abi.Value, path string) (abi.InclusionPolicy, error) {
	s, ok, err := argparse.String(v, path)
	if err != nil || !ok {
		return abi.PolicyUnset, err
	}
	switch s {
	case "Honor":
		return abi.PolicyHonor, nil
	case "Ignore":
		return abi.PolicyIgnore, nil
	}
	return abi.PolicyUnset, argparse.Errorf(path, "Unsupported value: "+argparse.Quote(s)+`: supported values: "Honor", "Ignore"`)
}
