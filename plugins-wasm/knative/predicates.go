package knative

import "github.com/wasmsched/wasmsched/guest-sdk/plugin"

// PodFitsResources passes a pod with free capacity left (Free > 0), or
// every pod when the host's free-capacity table is empty (no schedulable
// pod and no placement anywhere: Knative's "vpods with no placements").
// It takes no args: given some, it runs as if it had none and says so
// (plugin.IgnoredArgs), as Knative ignores them.
type PodFitsResources struct{ named }

// NewVPodFilter implements plugin.VPodPredicatePlugin.
func (p PodFitsResources) NewVPodFilter(args []byte) (plugin.VPodFilter, error) {
	return podFitsResources, plugin.IgnoredArgs(p.Name(), args)
}

func podFitsResources(s *plugin.VPodState, pods []int, verdicts []*plugin.Status) {
	if s.FreeCapEmpty() {
		return
	}
	for i, p := range pods {
		if s.Free(p) <= 0 {
			verdicts[i] = errFullCapacity
		}
	}
}

// NoMaxResourceCount caps the number of distinct pods a vpod spreads
// over at NumPartitions (a Kafka source has no use for more consumers
// than partitions): a pod not yet in the vpod's pod spread fails when
// counting it would exceed NumPartitions. Presence counts, even with 0
// vreplicas (a placement being rebalanced).
type NoMaxResourceCount struct{ named }

// NewVPodFilter implements plugin.VPodPredicatePlugin; args
// {"NumPartitions": int}.
func (NoMaxResourceCount) NewVPodFilter(args []byte) (plugin.VPodFilter, error) {
	var partitions int64
	if err := plugin.DecodeKnativeArgs(args, plugin.IntArg("NumPartitions", &partitions)); err != nil {
		return nil, err
	}
	return func(s *plugin.VPodState, pods []int, verdicts []*plugin.Status) {
		if int64(len(s.PodSpreadEntries()))+1 <= partitions {
			return // even a new pod fits
		}
		for i, p := range pods {
			if _, present := s.PodSpread(p); !present {
				verdicts[i] = errPartitionCount
			}
		}
	}, nil
}
