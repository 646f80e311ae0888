package interpodaffinity

import (
	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/plugins-wasm/internal/argparse"
)

// DefaultHardPodAffinityWeight is kube-scheduler's default for
// hardPodAffinityWeight.
const DefaultHardPodAffinityWeight = 1

// Args are InterPodAffinityArgs. Field names follow the API's YAML.
type Args struct {
	// HardPodAffinityWeight is the score an existing pod's required
	// affinity term adds to its domain when the incoming pod matches it;
	// 0 disables that.
	HardPodAffinityWeight int32
	// IgnorePreferredTermsOfExistingPods skips scoring altogether for
	// pods that have no preferred (anti-)affinity of their own.
	IgnorePreferredTermsOfExistingPods bool
}

// ParseArgs reads and validates args as kube-scheduler's defaulting and
// ValidateInterPodAffinityArgs do; nil or null gives the defaults.
func ParseArgs(v *abi.Value) (Args, error) {
	a := Args{HardPodAffinityWeight: DefaultHardPodAffinityWeight}
	const (
		hardKey   = "hardPodAffinityWeight"
		ignoreKey = "ignorePreferredTermsOfExistingPods"
	)
	if err := argparse.Map(v, "", hardKey, ignoreKey, "apiVersion", "kind"); err != nil {
		return a, err
	}
	if v.IsNull() {
		return a, nil
	}
	w, ok, err := argparse.Int32(v.Get(hardKey), hardKey)
	if err != nil {
		return a, err
	}
	if ok {
		if w < 0 || w > 100 {
			return a, argparse.Invalid(hardKey, argparse.Itoa(int64(w)), "not in valid range [0, 100]")
		}
		a.HardPodAffinityWeight = w
	}
	if iv := v.Get(ignoreKey); !iv.IsNull() {
		if iv.Kind != abi.KindBool {
			return a, argparse.Errorf(ignoreKey, "expected bool, got "+iv.Kind.String())
		}
		a.IgnorePreferredTermsOfExistingPods = iv.Bool
	}
	return a, nil
}
