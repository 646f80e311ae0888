// Package eviction holds the default eviction policies (ABI v1.2), the
// plugins of the eviction bundle (plugins-wasm/cmd/eviction) that the
// host's Katalyst-style eviction coordinator asks each round:
//
//   - ResourceOvercommit: Katalyst's example plugin. The summed requests
//     of a node's evictable pods above hardRate (softRate) × allocatable.
//   - NodePressure: a node condition (MemoryPressure, DiskPressure,
//     PIDPressure by default) reported True; evicts as kubelet ranks.
//   - UsageThreshold: measured node usage above a fraction of
//     allocatable.
//
// Each is a plugin.ThresholdPlugin: it says whether its threshold is met
// on a node and, when the coordinator asks, which pods should go. Pods
// are named by their index in the node's pods and chosen only among the
// candidates the host offers.
package eviction

import (
	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/plugins-wasm/internal/argparse"
)

// number reads a numeric field (an integer or a float, as the host hands
// YAML numbers over); ok is false when the field is absent or null.
func number(v *abi.Value, path string) (f float64, ok bool, err error) {
	if v.IsNull() {
		return 0, false, nil
	}
	switch v.Kind {
	case abi.KindInt:
		return float64(v.Int), true, nil
	case abi.KindFloat:
		return v.Float, true, nil
	}
	return 0, false, argparse.Errorf(path, "expected number, got "+v.Kind.String())
}

// rateArg reads a finite number greater than 0 and at most upper (0:
// unbounded; upperText names the bound in the error); def is used when
// the field is absent, and ok says whether it was given.
func rateArg(args *abi.Value, field string, def, upper float64, upperText string) (f float64, ok bool, err error) {
	f, ok, err = number(args.Get(field), field)
	if err != nil || !ok {
		return def, ok, err
	}
	// !(f > 0) also refuses NaN; f-f != 0 refuses the infinities.
	if !(f > 0) || f-f != 0 {
		return 0, false, argparse.Errorf(field, "must be a finite number greater than 0")
	}
	if upper > 0 && f > upper {
		return 0, false, argparse.Errorf(field, "must be at most "+upperText)
	}
	return f, true, nil
}

// graceArg reads gracePeriodSeconds: how many seconds a threshold must
// stay met before the coordinator acts on it (default 0).
func graceArg(args *abi.Value) (int64, error) {
	const field = "gracePeriodSeconds"
	n, ok, err := argparse.Int(args.Get(field), field)
	if err != nil || !ok {
		return 0, err
	}
	if n < 0 {
		return 0, argparse.Invalid(field, argparse.Itoa(n), "must be greater than or equal to 0")
	}
	return n, nil
}

// stringsArg reads a list of strings; def when the field is absent or
// null, an error when it is an empty list (a policy watching nothing is
// a configuration mistake) or repeats an item.
func stringsArg(args *abi.Value, field string, def []string) ([]string, error) {
	v := args.Get(field)
	if v.IsNull() {
		return def, nil
	}
	items, err := argparse.Strings(v, field)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return nil, argparse.Errorf(field, "must not be empty")
	}
	for i, s := range items {
		for _, o := range items[:i] {
			if o == s {
				return nil, argparse.Errorf(argparse.Index(field, i), "duplicate "+argparse.Quote(s))
			}
		}
	}
	return items, nil
}
