package config

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/validate/content"

	"github.com/wasmsched/wasmsched/abi"
)

// Eviction configures the eviction coordinator (Katalyst's eviction
// manager, see the behaviour specs §4): every SyncPeriod it asks each
// policy which pods should go, and evicts at most Burst per node, at most
// Rate per second cluster-wide. A nil Eviction (no `eviction:` section)
// means no coordinator runs.
//
// Every setting is optional: unset ones take the defaults below, which
// Defaulted applies. Pointers tell "not written" from an explicit zero,
// so `burst: 0` is refused instead of silently becoming 3.
type Eviction struct {
	// SyncPeriod is the time between eviction rounds.
	SyncPeriod *Duration `json:"syncPeriod,omitempty"`
	// Burst is the most pods evicted per node and round (Katalyst's
	// --eviction-burst).
	Burst *int32 `json:"burst,omitempty"`
	// Rate is the cluster-wide evictions per second (a token bucket), so
	// a policy gone wrong cannot empty a cluster in one round.
	Rate *float64 `json:"rate,omitempty"`
	// RateBurst is the token bucket's size.
	RateBurst *int32 `json:"rateBurst,omitempty"`
	// Killer says how a victim goes: through the Eviction API (which
	// honours PodDisruptionBudgets) or by DELETE.
	Killer EvictionKiller `json:"killer,omitempty"`
	// SkipAnnotations and SkipLabels are keys: a pod carrying any of them
	// (whatever the value) is never offered to a policy.
	SkipAnnotations []string `json:"skipAnnotations,omitempty"`
	SkipLabels      []string `json:"skipLabels,omitempty"`
	// ConditionTransitionPeriod is how long a condition a policy reported
	// stays active (and its node taint stays) after it was last seen met.
	ConditionTransitionPeriod *Duration `json:"conditionTransitionPeriod,omitempty"`
	// KillTimeoutMin is the floor of the killer's timeout, which is
	// max(1.5 × grace period, KillTimeoutMin).
	KillTimeoutMin *Duration `json:"killTimeoutMin,omitempty"`
	// SimulateRounds is how many eviction rounds `simulate` runs after
	// scheduling.
	SimulateRounds *int32 `json:"simulateRounds,omitempty"`
	// Policies are the eviction plugins to run, each at most once.
	Policies []EvictionPolicy `json:"policies,omitempty"`
}

// EvictionKiller names how the coordinator removes a victim.
type EvictionKiller string

const (
	// KillerEviction posts an Eviction (policy/v1): the API server refuses
	// it (429) while a PodDisruptionBudget protects the pod.
	KillerEviction EvictionKiller = "eviction"
	// KillerDelete deletes the pod, ignoring PodDisruptionBudgets.
	KillerDelete EvictionKiller = "delete"
)

// EvictionPolicy is one eviction plugin and its options.
type EvictionPolicy struct {
	// Plugin names a plugin a module serves (checked when the policies
	// are built, not here: it needs the modules' manifests).
	Plugin string `json:"plugin"`
	// Args go to the plugin's init as pluginConfig args do (an object);
	// ArgsValue converts them.
	Args json.RawMessage `json:"args,omitempty"`
	// DryRun evaluates and counts, but never evicts or taints.
	DryRun bool `json:"dryRun,omitempty"`
	// Force: a victim a PodDisruptionBudget protects (the Eviction API
	// answers 429) is deleted after the Retry-After wait instead of
	// waiting for a later round.
	Force bool `json:"force,omitempty"`
}

// ArgsValue converts the policy's args to the ABI's Value, exactly as
// pluginConfig args are (see ArgsValue): the zero Value when unset.
func (p *EvictionPolicy) ArgsValue() (abi.Value, error) { return ArgsValue(p.Args) }

// Defaults of the eviction settings (Katalyst's, where it has them).
const (
	DefaultEvictionSyncPeriod                = 5 * time.Second
	DefaultEvictionBurst                     = 3
	DefaultEvictionRate                      = 10.0
	DefaultEvictionKiller                    = KillerEviction
	DefaultEvictionConditionTransitionPeriod = 5 * time.Minute
	DefaultEvictionKillTimeoutMin            = 10 * time.Second
	DefaultEvictionSimulateRounds            = 3
)

// Bounds of the eviction settings. They keep arithmetic on them (rounds ×
// period, ceil(rate), 1.5 × grace) far from overflow and catch a unit
// mistake ("syncPeriod: 5h") before it silently disables eviction.
const (
	MaxEvictionSyncPeriod                = time.Hour
	MaxEvictionBurst                     = 1000
	MaxEvictionRate                      = 10000.0
	MaxEvictionRateBurst                 = 100000
	MaxEvictionConditionTransitionPeriod = 24 * time.Hour
	MaxEvictionKillTimeoutMin            = time.Hour
	MaxEvictionSimulateRounds            = 1000
	// MaxEvictionSkipKeys bounds skipAnnotations and skipLabels each:
	// every pod is tested against them every round.
	MaxEvictionSkipKeys = 64
	// MaxEvictionPolicies bounds the policies: each is a module instance
	// asked about every node every round, and its reasons may be joined
	// into one Event.
	MaxEvictionPolicies = 64
)

// EvictionSettings is an Eviction with every default applied: what the
// coordinator runs with.
type EvictionSettings struct {
	SyncPeriod                time.Duration
	Burst                     int
	Rate                      float64
	RateBurst                 int
	Killer                    EvictionKiller
	SkipAnnotations           []string
	SkipLabels                []string
	ConditionTransitionPeriod time.Duration
	KillTimeoutMin            time.Duration
	SimulateRounds            int
	Policies                  []EvictionPolicy
}

// Defaulted returns the settings with defaults for everything unset.
// RateBurst defaults to max(Burst, ceil(Rate)), so one round's burst on
// one node is never throttled by the bucket's size alone. A nil Eviction
// gives all defaults and no policies. The slices are shared with e.
func (e *Eviction) Defaulted() EvictionSettings {
	s := EvictionSettings{
		SyncPeriod:                DefaultEvictionSyncPeriod,
		Burst:                     DefaultEvictionBurst,
		Rate:                      DefaultEvictionRate,
		Killer:                    DefaultEvictionKiller,
		ConditionTransitionPeriod: DefaultEvictionConditionTransitionPeriod,
		KillTimeoutMin:            DefaultEvictionKillTimeoutMin,
		SimulateRounds:            DefaultEvictionSimulateRounds,
	}
	if e == nil {
		s.RateBurst = max(s.Burst, int(math.Ceil(s.Rate)))
		return s
	}
	if e.SyncPeriod != nil {
		s.SyncPeriod = e.SyncPeriod.Duration
	}
	if e.Burst != nil {
		s.Burst = int(*e.Burst)
	}
	if e.Rate != nil {
		s.Rate = *e.Rate
	}
	if e.Killer != "" {
		s.Killer = e.Killer
	}
	if e.ConditionTransitionPeriod != nil {
		s.ConditionTransitionPeriod = e.ConditionTransitionPeriod.Duration
	}
	if e.KillTimeoutMin != nil {
		s.KillTimeoutMin = e.KillTimeoutMin.Duration
	}
	if e.SimulateRounds != nil {
		s.SimulateRounds = int(*e.SimulateRounds)
	}
	if e.RateBurst != nil {
		s.RateBurst = int(*e.RateBurst)
	} else if s.Rate > 0 && s.Rate <= MaxEvictionRate {
		s.RateBurst = max(s.Burst, int(math.Ceil(s.Rate)))
	} else {
		s.RateBurst = s.Burst // an invalid rate: Validate refuses it
	}
	s.SkipAnnotations, s.SkipLabels, s.Policies = e.SkipAnnotations, e.SkipLabels, e.Policies
	return s
}

// EvictionPolicyField is the field path of policy i, for errors found
// when the policies are built ("eviction.policies[1].plugin: no module
// serves ..."): pass it, with a suffix, to Configuration.ErrorAt.
func EvictionPolicyField(i int) string { return fmt.Sprintf("eviction.policies[%d]", i) }

// ErrorAt is an Error at field with the file and line it was written on
// (or its closest written parent's), for checks made after Load.
func (c *Configuration) ErrorAt(field, format string, args ...any) *Error {
	return &Error{File: c.source, Line: c.lines.Find(field), Field: field, Msg: fmt.Sprintf(format, args...)}
}

// checkEviction validates the eviction section (nil is fine), reporting
// through add with field paths under "eviction".
func checkEviction(e *Eviction, add func(field, format string, a ...any)) {
	if e == nil {
		return
	}
	const f = "eviction"
	checkDurationRange(e.SyncPeriod, f+".syncPeriod", time.Nanosecond, MaxEvictionSyncPeriod, add)
	checkIntRange(e.Burst, f+".burst", 1, MaxEvictionBurst, add)
	if r := e.Rate; r != nil && !(*r > 0 && *r <= MaxEvictionRate) {
		add(f+".rate", "%v is outside (0, %v] evictions per second", *r, MaxEvictionRate)
	}
	checkIntRange(e.RateBurst, f+".rateBurst", 1, MaxEvictionRateBurst, add)
	switch e.Killer {
	case "", KillerEviction, KillerDelete:
	default:
		add(f+".killer", "must be %q or %q, not %q", KillerEviction, KillerDelete, e.Killer)
	}
	checkCount(len(e.SkipAnnotations), f+".skipAnnotations", "keys", MaxEvictionSkipKeys, add)
	checkCount(len(e.SkipLabels), f+".skipLabels", "keys", MaxEvictionSkipKeys, add)
	checkCount(len(e.Policies), f+".policies", "policies", MaxEvictionPolicies, add)
	for i, k := range e.SkipAnnotations {
		// As the API server checks annotation keys: case-insensitively.
		if msgs := content.IsQualifiedName(strings.ToLower(k)); len(msgs) > 0 {
			add(fmt.Sprintf("%s.skipAnnotations[%d]", f, i), "%q is not an annotation key: %s", k, strings.Join(msgs, "; "))
		}
	}
	for i, k := range e.SkipLabels {
		if msgs := content.IsQualifiedName(k); len(msgs) > 0 {
			add(fmt.Sprintf("%s.skipLabels[%d]", f, i), "%q is not a label key: %s", k, strings.Join(msgs, "; "))
		}
	}
	checkDurationRange(e.ConditionTransitionPeriod, f+".conditionTransitionPeriod", 0, MaxEvictionConditionTransitionPeriod, add)
	checkDurationRange(e.KillTimeoutMin, f+".killTimeoutMin", time.Nanosecond, MaxEvictionKillTimeoutMin, add)
	checkIntRange(e.SimulateRounds, f+".simulateRounds", 0, MaxEvictionSimulateRounds, add)
	seen := map[string]int{}
	for i, p := range e.Policies {
		pf := EvictionPolicyField(i)
		if p.Plugin == "" {
			add(pf+".plugin", "must name a plugin")
		} else if j, dup := seen[p.Plugin]; dup {
			add(pf+".plugin", "duplicate %q (also policies[%d])", p.Plugin, j)
		} else {
			seen[p.Plugin] = i
		}
		checkArgsObject(p.Args, pf+".args", add)
	}
}

// checkArgsObject refuses args that are not a JSON object (or null): a
// plugin's init reads them as one.
func checkArgsObject(raw json.RawMessage, field string, add func(field, format string, a ...any)) {
	if len(raw) == 0 {
		return
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		add(field, "%v", err)
	} else if _, ok := v.(map[string]any); !ok && v != nil {
		add(field, "must be an object")
	}
}

func checkDurationRange(d *Duration, field string, lo, hi time.Duration, add func(string, string, ...any)) {
	if d == nil || d.Duration >= lo && d.Duration <= hi {
		return
	}
	if lo > 0 {
		add(field, "%s must be positive and at most %s", d.Duration, hi)
		return
	}
	add(field, "%s is outside 0s..%s", d.Duration, hi)
}

// checkCount refuses a list of more than hi items.
func checkCount(n int, field, what string, hi int, add func(string, string, ...any)) {
	if n > hi {
		add(field, "%d %s, more than the limit of %d", n, what, hi)
	}
}

func checkIntRange(v *int32, field string, lo, hi int32, add func(string, string, ...any)) {
	switch {
	case v == nil:
	case *v < lo:
		add(field, "must be at least %d, not %d", lo, *v)
	case *v > hi:
		add(field, "must be at most %d, not %d", hi, *v)
	}
}
