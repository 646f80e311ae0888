package nodeaffinity

import (
	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/plugins-wasm/internal/argparse"
	"github.com/wasmsched/wasmsched/plugins-wasm/internal/nodeselector"
)

// Args are NodeAffinityArgs: a node affinity the scheduler adds to every
// pod of the profile (e.g. to keep a profile on a node pool). Field names
// follow the API's YAML.
type Args struct {
	// AddedAffinity is nil when unset.
	AddedAffinity *abi.NodeAffinity
}

// ParseArgs reads and validates args as kube-scheduler's
// ValidateNodeAffinityArgs does; nil or null means no added affinity.
func ParseArgs(v *abi.Value) (Args, error) {
	var a Args
	if err := argparse.Map(v, "", "addedAffinity", "apiVersion", "kind"); err != nil {
		return a, err
	}
	av := v.Get("addedAffinity")
	if av.IsNull() {
		return a, nil
	}
	const (
		reqKey  = "requiredDuringSchedulingIgnoredDuringExecution"
		prefKey = "preferredDuringSchedulingIgnoredDuringExecution"
	)
	if err := argparse.Map(av, "addedAffinity", reqKey, prefKey); err != nil {
		return a, err
	}
	na := &abi.NodeAffinity{}
	if rv := av.Get(reqKey); !rv.IsNull() {
		path := "addedAffinity." + reqKey
		if err := argparse.Map(rv, path, "nodeSelectorTerms"); err != nil {
			return a, err
		}
		ns := &abi.NodeSelector{}
		items, err := argparse.List(rv.Get("nodeSelectorTerms"), path+".nodeSelectorTerms")
		if err != nil {
			return a, err
		}
		for i := range items {
			t, err := parseTerm(&items[i], argparse.Index(path+".nodeSelectorTerms", i))
			if err != nil {
				return a, err
			}
			ns.Terms = append(ns.Terms, t)
		}
		if _, err := nodeselector.Compile(ns, path); err != nil {
			return a, err
		}
		na.Required = ns
	}
	items, err := argparse.List(av.Get(prefKey), "addedAffinity."+prefKey)
	if err != nil {
		return a, err
	}
	for i := range items {
		path := argparse.Index("addedAffinity."+prefKey, i)
		if err := argparse.Map(&items[i], path, "weight", "preference"); err != nil {
			return a, err
		}
		w, _, err := argparse.Int32(items[i].Get("weight"), path+".weight")
		if err != nil {
			return a, err
		}
		t, err := parseTerm(items[i].Get("preference"), path+".preference")
		if err != nil {
			return a, err
		}
		na.Preferred = append(na.Preferred, abi.PreferredSchedulingTerm{Weight: w, Term: t})
	}
	if _, err := nodeselector.CompilePreferred(na.Preferred, "addedAffinity."+prefKey); err != nil {
		return a, err
	}
	a.AddedAffinity = na
	return a, nil
}

// parseTerm reads a NodeSelectorTerm: matchExpressions and matchFields.
func parseTerm(v *abi.Value, path string) (abi.NodeSelectorTerm, error) {
	var t abi.NodeSelectorTerm
	if err := argparse.Map(v, path, "matchExpressions", "matchFields"); err != nil {
		return t, err
	}
	var err error
	if t.MatchExpressions, err = parseRequirements(v.Get("matchExpressions"), path+".matchExpressions"); err != nil {
		return t, err
	}
	t.MatchFields, err = parseRequirements(v.Get("matchFields"), path+".matchFields")
	return t, err
}

// parseRequirements reads a list of {key, operator, values}.
func parseRequirements(v *abi.Value, path string) ([]abi.Requirement, error) {
	items, err := argparse.List(v, path)
	if err != nil || len(items) == 0 {
		return nil, err
	}
	out := make([]abi.Requirement, len(items))
	for i := range items {
		p := argparse.Index(path, i)
		if err := argparse.Map(&items[i], p, "key", "operator", "values"); err != nil {
			return nil, err
		}
		r := &out[i]
		if r.Key, _, err = argparse.String(items[i].Get("key"), p+".key"); err != nil {
			return nil, err
		}
		op, _, err := argparse.String(items[i].Get("operator"), p+".operator")
		if err != nil {
			return nil, err
		}
		var ok bool
		if r.Operator, ok = parseOperator(op); !ok {
			return nil, argparse.Errorf(p+".operator", "Unsupported value: "+argparse.Quote(op)+`: supported values: "DoesNotExist", "Exists", "Gt", "In", "Lt", "NotIn"`)
		}
		if r.Values, err = argparse.Strings(items[i].Get("values"), p+".values"); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func parseOperator(s string) (abi.Operator, bool) {
	for op := abi.OpIn; op <= abi.OpLt; op++ {
		if op.String() == s {
			return op, true
		}
	}
	return 0, false
}
