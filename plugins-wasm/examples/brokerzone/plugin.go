// Package brokerzone is an example vpod priority written the way a user
// would write their own: BrokerZonePriority prefers the adapter pods in
// one zone, say the zone of the Kafka brokers a source reads from, so
// that consumers avoid cross-zone traffic when they can. It uses only the
// guest SDK and the abi package; see README.md for how to build,
// configure and test it. The module's main package is ./cmd.
package brokerzone

import (
	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
)

// Name is the plugin's name in a vpod scheduler policy.
const Name = "BrokerZonePriority"

// Registration lets a module register the plugin with guest.Register.
var Registration = plugin.Registration{Name: Name, New: New}

// BrokerZonePriority scores 1 for a pod in the configured zone and 0
// elsewhere. Weighted, it outranks spread priorities whose penalties are
// smaller than its weight; give it a weight that says how much
// cross-zone traffic a less even spread is worth.
type BrokerZonePriority struct{}

var _ plugin.VPodPriorityPlugin = BrokerZonePriority{}

// New builds the plugin. Its args come per policy entry, so module-level
// args are refused rather than silently ignored.
func New(args *abi.Value, _ plugin.Handle) (plugin.Plugin, error) {
	if !args.IsNull() {
		return nil, errModuleArgs
	}
	return BrokerZonePriority{}, nil
}

// Name implements plugin.Plugin.
func (BrokerZonePriority) Name() string { return Name }

// NewVPodScorer parses an entry's args, Knative style: a JSON string
// holding {"Zone": "<zone>"} (a YAML policy may write the object; the
// host turns it into that string). A missing or empty Zone makes the
// entry invalid, which fails its scoring at every step.
func (BrokerZonePriority) NewVPodScorer(args []byte) (plugin.VPodScorer, error) {
	var zone string
	if err := plugin.DecodeKnativeArgs(args, plugin.StringArg("Zone", &zone)); err != nil {
		return nil, err
	}
	if zone == "" {
		return nil, errNoZone
	}
	return func(s *plugin.VPodState, pods []int, scores []int64) error {
		// Zones are few: find the configured one's index once per step.
		want := -1
		for z := 0; z < s.NumZones(); z++ {
			if s.ZoneName(z) == zone {
				want = z
			}
		}
		if want < 0 {
			return nil // no schedulable node there: every pod scores 0
		}
		for i, p := range pods {
			if s.PodZone(p) == want {
				scores[i] = 1
			}
		}
		return nil
	}, nil
}

type argsError struct{ msg string }

func (e *argsError) Error() string { return e.msg }

var (
	errModuleArgs error = &argsError{"BrokerZonePriority takes its args from each policy entry, not from module args"}
	errNoZone     error = &argsError{"invalid arguments: Zone is required"}
)
