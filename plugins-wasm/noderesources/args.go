package noderesources

import (
	"strings"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/plugins-wasm/internal/argparse"
	"github.com/wasmsched/wasmsched/plugins-wasm/internal/kubename"
)

// Scoring strategy types of NodeResourcesFitArgs.scoringStrategy.type.
const (
	// LeastAllocated spreads pods: the freer the node, the higher.
	LeastAllocated = "LeastAllocated"
	// MostAllocated packs pods: the fuller the node, the higher.
	MostAllocated = "MostAllocated"
	// RequestedToCapacityRatio scores utilisation through a user shape.
	RequestedToCapacityRatio = "RequestedToCapacityRatio"
)

// maxCustomPriorityScore is the top of a shape point's score scale
// (config.MaxCustomPriorityScore); scores are scaled by
// MaxScore/maxCustomPriorityScore.
const maxCustomPriorityScore = 10

// ResourceSpec is a resource a scorer looks at, with its weight.
type ResourceSpec struct {
	Name   string
	Weight int64
}

// UtilizationShapePoint is a point of the RequestedToCapacityRatio
// function: utilization 0..100 maps to score 0..10.
type UtilizationShapePoint struct {
	Utilization int32
	Score       int32
}

// ScoringStrategy is NodeResourcesFitArgs.scoringStrategy.
type ScoringStrategy struct {
	Type      string
	Resources []ResourceSpec
	// Shape is requestedToCapacityRatio.shape; HasShape tells an absent
	// requestedToCapacityRatio from an empty shape.
	Shape    []UtilizationShapePoint
	HasShape bool
}

// FitArgs are NodeResourcesFitArgs, defaulted as kube-scheduler's v1
// config defaults them.
type FitArgs struct {
	IgnoredResources      []string
	IgnoredResourceGroups []string
	ScoringStrategy       ScoringStrategy
}

// BalancedAllocationArgs are NodeResourcesBalancedAllocationArgs.
type BalancedAllocationArgs struct {
	Resources []ResourceSpec
}

// defaultResources is cpu and memory, weight 1 each: the default of both
// plugins.
func defaultResources() []ResourceSpec {
	return []ResourceSpec{{Name: abi.ResourceCPU, Weight: 1}, {Name: abi.ResourceMemory, Weight: 1}}
}

// ParseFitArgs reads, defaults and validates NodeResourcesFitArgs; nil or
// null gives the defaults (LeastAllocated over cpu and memory).
func ParseFitArgs(v *abi.Value) (FitArgs, error) {
	var a FitArgs
	if err := argparse.Map(v, "", "ignoredResources", "ignoredResourceGroups", "scoringStrategy", "apiVersion", "kind"); err != nil {
		return a, err
	}
	var err error
	if a.IgnoredResources, err = argparse.Strings(v.Get("ignoredResources"), "ignoredResources"); err != nil {
		return a, err
	}
	for i, r := range a.IgnoredResources {
		if !kubename.IsQualifiedName(r) {
			return a, argparse.Invalid(argparse.Index("ignoredResources", i), argparse.Quote(r), "must be a qualified name")
		}
	}
	if a.IgnoredResourceGroups, err = argparse.Strings(v.Get("ignoredResourceGroups"), "ignoredResourceGroups"); err != nil {
		return a, err
	}
	for i, g := range a.IgnoredResourceGroups {
		path := argparse.Index("ignoredResourceGroups", i)
		if strings.Contains(g, "/") {
			return a, argparse.Invalid(path, argparse.Quote(g), "resource group name can't contain '/'")
		}
		if !kubename.IsQualifiedName(g) {
			return a, argparse.Invalid(path, argparse.Quote(g), "must be a qualified name")
		}
	}
	sv := v.Get("scoringStrategy")
	if sv.IsNull() {
		a.ScoringStrategy = ScoringStrategy{Type: LeastAllocated, Resources: defaultResources()}
		return a, nil
	}
	s, err := parseScoringStrategy(sv)
	a.ScoringStrategy = s
	return a, err
}

func parseScoringStrategy(v *abi.Value) (ScoringStrategy, error) {
	var s ScoringStrategy
	const path = "scoringStrategy"
	if err := argparse.Map(v, path, "type", "resources", "requestedToCapacityRatio"); err != nil {
		return s, err
	}
	var err error
	if s.Type, _, err = argparse.String(v.Get("type"), path+".type"); err != nil {
		return s, err
	}
	switch s.Type {
	case LeastAllocated, MostAllocated, RequestedToCapacityRatio:
	default:
		return s, argparse.Errorf(path+".type", "Unsupported value: "+argparse.Quote(s.Type)+
			`: supported values: "LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"`)
	}
	if s.Resources, err = parseResources(v.Get("resources"), path+".resources"); err != nil {
		return s, err
	}
	if len(s.Resources) == 0 {
		s.Resources = defaultResources()
	}
	for i, r := range s.Resources {
		if r.Weight <= 0 || r.Weight > 100 {
			return s, argparse.Invalid(argparse.Index(path+".resources", i)+".weight", argparse.Itoa(r.Weight),
				"resource weight of "+r.Name+" not in valid range (0, 100]")
		}
	}
	if rv := v.Get("requestedToCapacityRatio"); !rv.IsNull() {
		// kube-scheduler v1.37 refuses a shape the strategy would not
		// use, rather than validating and ignoring it.
		if s.Type != RequestedToCapacityRatio {
			return s, argparse.Errorf(path+".requestedToCapacityRatio", "Forbidden: must be nil when type is not RequestedToCapacityRatio")
		}
		s.HasShape = true
		if s.Shape, err = parseShape(rv, path+".requestedToCapacityRatio"); err != nil {
			return s, err
		}
	}
	if s.Type == RequestedToCapacityRatio && !s.HasShape {
		return s, argparse.Errorf(path+".requestedToCapacityRatio", "Required value: a shape is needed for type RequestedToCapacityRatio")
	}
	return s, nil
}

// parseResources reads [{name, weight}], a weight of 0 (or none) meaning
// the default weight 1.
func parseResources(v *abi.Value, path string) ([]ResourceSpec, error) {
	items, err := argparse.List(v, path)
	if err != nil || len(items) == 0 {
		return nil, err
	}
	out := make([]ResourceSpec, len(items))
	for i := range items {
		p := argparse.Index(path, i)
		if err := argparse.Map(&items[i], p, "name", "weight"); err != nil {
			return nil, err
		}
		if out[i].Name, _, err = argparse.String(items[i].Get("name"), p+".name"); err != nil {
			return nil, err
		}
		if out[i].Weight, _, err = argparse.Int(items[i].Get("weight"), p+".weight"); err != nil {
			return nil, err
		}
		if out[i].Weight == 0 {
			out[i].Weight = 1
		}
	}
	return out, nil
}

// parseShape reads requestedToCapacityRatio.shape and validates it as
// kube's validateFunctionShape: at least one point, utilization strictly
// increasing within 0..100, scores within 0..10.
func parseShape(v *abi.Value, path string) ([]UtilizationShapePoint, error) {
	if err := argparse.Map(v, path, "shape"); err != nil {
		return nil, err
	}
	path += ".shape"
	items, err := argparse.List(v.Get("shape"), path)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return nil, argparse.Errorf(path, "Required value: at least one point must be specified")
	}
	out := make([]UtilizationShapePoint, len(items))
	for i := range items {
		p := argparse.Index(path, i)
		if err := argparse.Map(&items[i], p, "utilization", "score"); err != nil {
			return nil, err
		}
		if out[i].Utilization, _, err = argparse.Int32(items[i].Get("utilization"), p+".utilization"); err != nil {
			return nil, err
		}
		if out[i].Score, _, err = argparse.Int32(items[i].Get("score"), p+".score"); err != nil {
			return nil, err
		}
	}
	for i := 1; i < len(out); i++ {
		if out[i-1].Utilization >= out[i].Utilization {
			return nil, argparse.Invalid(argparse.Index(path, i)+".utilization", argparse.Itoa(int64(out[i].Utilization)),
				"values must be sorted in increasing order")
		}
	}
	for i, pt := range out {
		p := argparse.Index(path, i)
		if pt.Utilization < 0 || pt.Utilization > maxUtilization {
			return nil, argparse.Invalid(p+".utilization", argparse.Itoa(int64(pt.Utilization)), "not in valid range [0, 100]")
		}
		if pt.Score < 0 || pt.Score > maxCustomPriorityScore {
			return nil, argparse.Invalid(p+".score", argparse.Itoa(int64(pt.Score)), "not in valid range [0, 10]")
		}
	}
	return out, nil
}

// ParseBalancedAllocationArgs reads, defaults and validates
// NodeResourcesBalancedAllocationArgs: resources default to cpu and
// memory, every weight must be 1 (0 or none defaults to 1) and names must
// not repeat.
func ParseBalancedAllocationArgs(v *abi.Value) (BalancedAllocationArgs, error) {
	var a BalancedAllocationArgs
	if err := argparse.Map(v, "", "resources", "apiVersion", "kind"); err != nil {
		return a, err
	}
	var err error
	if a.Resources, err = parseResources(v.Get("resources"), "resources"); err != nil {
		return a, err
	}
	if len(a.Resources) == 0 {
		a.Resources = defaultResources()
		return a, nil
	}
	for i, r := range a.Resources {
		p := argparse.Index("resources", i)
		for _, prev := range a.Resources[:i] {
			if prev.Name == r.Name {
				return a, argparse.Errorf(p+".name", "Duplicate value: "+argparse.Quote(r.Name))
			}
		}
		if r.Weight != 1 {
			return a, argparse.Invalid(p+".weight", argparse.Itoa(r.Weight), "must be 1")
		}
	}
	return a, nil
}
