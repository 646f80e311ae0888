package eviction

import (
	"strings"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
	"github.com/wasmsched/wasmsched/guest-sdk/plugintest"
)

// tpod is a test pod: requests, priority and (unless noUsage) usage.
type tpod struct {
	name     string
	prio     int32
	cpu, mem int64 // requests
	useCPU   int64
	useMem   int64
	noUsage  bool
}

func (p tpod) pod() abi.Pod {
	return abi.Pod{Name: p.name, Namespace: "ns", UID: p.name, Priority: p.prio,
		Containers: []abi.Container{{Name: "c", Requests: abi.Resources{MilliCPU: p.cpu, Memory: p.mem}}}}
}

// evNode builds the node a policy sees: every pod a candidate, each with
// its observation.
func evNode(alloc abi.Resources, pods ...tpod) *plugin.EvictionNode {
	ni := &plugin.NodeInfo{}
	ni.Node.Name = "node"
	ni.Node.Allocatable = alloc
	obs := &abi.NodeObservation{}
	n := &plugin.EvictionNode{NodeInfo: ni, Obs: obs}
	for i, p := range pods {
		ni.Pods = append(ni.Pods, p.pod())
		po := abi.PodObservation{}
		if !p.noUsage {
			po.Usage = &abi.Usage{MilliCPU: p.useCPU, Memory: p.useMem}
		}
		obs.Pods = append(obs.Pods, po)
		n.Candidates = append(n.Candidates, uint32(i))
	}
	return n
}

func threshold(t *testing.T, reg plugin.Registration, args string) plugin.ThresholdPlugin {
	t.Helper()
	return plugintest.New(t, reg, args, nil).(plugin.ThresholdPlugin)
}

// names maps pod indexes back to names, for readable failures.
func names(n *plugin.EvictionNode, idx []uint32) string {
	var s []string
	for _, i := range idx {
		s = append(s, n.Pods[i].Name)
	}
	return strings.Join(s, ",")
}

// argErrors checks that each args document is refused with an error
// naming the field.
func argErrors(t *testing.T, reg plugin.Registration, cases map[string]string) {
	t.Helper()
	for args, field := range cases {
		_, err := reg.New(plugintest.Args(t, args), &plugintest.Handle{})
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("%s args %s: error %v, want one naming %q", reg.Name, args, err, field)
		}
	}
}

const gi = int64(1) << 30
