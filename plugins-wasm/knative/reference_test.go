package knative

import (
	"math/rand"
	"reflect"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
	"github.com/wasmsched/wasmsched/guest-sdk/plugintest"
)

// The reference below follows Knative v1.16.0's loops literally (every
// candidate against every other pod, node or zone, spread maps with
// presence), O(candidates × pods); the plugins must agree with it on
// random steps.

type model struct {
	replicas        int32
	ordinal         []int32
	podNode         []int
	nodeZone        []int
	free            []int32
	freeCapEmpty    bool
	pod, node, zone map[int]int32 // the vpod's spread maps
}

func newModel(t *abi.VPodTopology, s *abi.VPodStep) *model {
	m := &model{replicas: t.Replicas, free: s.Free, freeCapEmpty: s.FreeCapEmpty, pod: map[int]int32{}, node: map[int]int32{}, zone: map[int]int32{}}
	for _, p := range t.Pods {
		m.ordinal = append(m.ordinal, p.Ordinal)
		m.podNode = append(m.podNode, int(p.Node))
	}
	for _, n := range t.Nodes {
		m.nodeZone = append(m.nodeZone, int(n.Zone))
	}
	for _, c := range s.PodSpread {
		m.pod[int(c.Index)] = c.VReplicas
	}
	for _, c := range s.NodeSpread {
		m.node[int(c.Index)] = c.VReplicas
	}
	for _, c := range s.ZoneSpread {
		m.zone[int(c.Index)] = c.VReplicas
	}
	return m
}

func abs(v int64) int64 { return max(v, -v) }

func (m *model) evenFilter(p int, maxSkew int32) bool {
	if m.replicas <= 0 {
		return true
	}
	cur := m.pod[p]
	for q := range m.ordinal {
		if q == p {
			continue
		}
		o := m.pod[q]
		if o == 0 && m.free[q] <= 0 {
			continue
		}
		if abs(int64(cur)+1-int64(o)) > int64(maxSkew) {
			return false
		}
	}
	return true
}

func (m *model) evenScore(p int) int64 {
	if m.replicas <= 0 {
		return 0
	}
	var sum int64
	cur := m.pod[p]
	for q := range m.ordinal {
		if q == p {
			continue
		}
		o := m.pod[q]
		if o == 0 && m.free[q] == 0 {
			continue
		}
		sum += abs(int64(cur) + 1 - int64(o))
	}
	return -sum
}

// availability scores over every node (zone) but P's own; remove over
// the present ones, with |c−1−o|.
func availability(replicas int32, own, count int, spread map[int]int32, remove bool) int64 {
	if replicas <= 0 {
		return 0
	}
	var sum int64
	cur := int64(spread[own])
	for m := 0; m < count; m++ {
		if m == own {
			continue
		}
		o, present := spread[m]
		if remove {
			if !present {
				continue
			}
			sum += abs(cur - 1 - int64(o))
		} else {
			sum += abs(cur + 1 - int64(o))
		}
	}
	return -sum
}

func (m *model) filters(name string, arg int64, p int) bool {
	switch name {
	case PodFitsResourcesName:
		return m.freeCapEmpty || m.free[p] > 0
	case NoMaxResourceCountName:
		_, present := m.pod[p]
		return present || int64(len(m.pod))+1 <= arg
	}
	return m.evenFilter(p, int32(arg))
}

func (m *model) score(name string, p int) int64 {
	zones := 0
	for _, z := range m.nodeZone {
		zones = max(zones, z+1)
	}
	switch name {
	case EvenPodSpreadName:
		return m.evenScore(p)
	case AvailabilityNodePriorityName:
		return availability(m.replicas, m.podNode[p], len(m.nodeZone), m.node, false)
	case AvailabilityZonePriorityName:
		return availability(m.replicas, m.nodeZone[m.podNode[p]], zones, m.zone, false)
	case RemoveWithEvenPodSpreadPriorityName:
		return availability(m.replicas, p, len(m.ordinal), m.pod, true)
	case RemoveWithAvailabilityNodePriorityName:
		return availability(m.replicas, m.podNode[p], len(m.nodeZone), m.node, true)
	case RemoveWithAvailabilityZonePriorityName:
		return availability(m.replicas, m.nodeZone[m.podNode[p]], zones, m.zone, true)
	case LowestOrdinalPriorityName:
		return -int64(m.ordinal[p])
	}
	return int64(m.ordinal[p]) // RemoveWithHighestOrdinalPriority
}

// randomStep builds a random cluster: up to 6 nodes over up to 3 zones,
// up to 10 pods with free capacity in [-2, 4], and the vpod on some of
// them (sometimes with 0).
func randomStep(rng *rand.Rand) *plugintest.VPodWrapper {
	w := plugintest.MakeVPodState().Capacity(4)
	nodes := 1 + rng.Intn(6)
	for n := 0; n < nodes; n++ {
		w.Node("n"+string(rune('a'+n)), "z"+string(rune('0'+rng.Intn(3))))
	}
	ordinal := int32(0)
	for p := rng.Intn(11); p > 0; p-- {
		ordinal += 1 + int32(rng.Intn(2)) // gaps, as pods go missing
		w.Pod(ordinal, "n"+string(rune('a'+rng.Intn(nodes))), int32(rng.Intn(7))-2)
		if rng.Intn(2) == 0 {
			w.Place(ordinal, int32(rng.Intn(5)))
		}
	}
	switch rng.Intn(8) {
	case 0:
		w.Replicas(0)
	case 1:
		w.FreeCapEmpty()
	}
	return w
}

func TestPluginsAgreeWithReference(t *testing.T) {
	rng := rand.New(rand.NewSource(15))
	predicates := []struct {
		p    plugin.Plugin
		args string
		arg  int64
	}{
		{PodFitsResources{PodFitsResourcesName}, "", 0},
		{NoMaxResourceCount{NoMaxResourceCountName}, plugintest.KnativeArgs(`{"NumPartitions": 3}`), 3},
		{NoMaxResourceCount{NoMaxResourceCountName}, plugintest.KnativeArgs(`{"NumPartitions": 1}`), 1},
		{EvenPodSpread{EvenPodSpreadName}, skew1, 1},
		{EvenPodSpread{EvenPodSpreadName}, skew2, 2},
		{EvenPodSpread{EvenPodSpreadName}, plugintest.KnativeArgs(`{"MaxSkew": 0}`), 0},
	}
	priorities := []plugin.Plugin{EvenPodSpread{EvenPodSpreadName}, AvailabilityNodePriority{AvailabilityNodePriorityName},
		AvailabilityZonePriority{AvailabilityZonePriorityName}, LowestOrdinalPriority{LowestOrdinalPriorityName},
		RemoveWithEvenPodSpreadPriority{RemoveWithEvenPodSpreadPriorityName}, RemoveWithAvailabilityNodePriority{RemoveWithAvailabilityNodePriorityName},
		RemoveWithAvailabilityZonePriority{RemoveWithAvailabilityZonePriorityName}, RemoveWithHighestOrdinalPriority{RemoveWithHighestOrdinalPriorityName}}
	for n := 0; n < 3000; n++ {
		w := randomStep(rng)
		s := w.Obj(t)
		m := newModel(w.Topology(t), w.Step(t))
		for _, pr := range predicates {
			st, err := plugintest.RunVPodFilter(t, pr.p, pr.args, s)
			if err != nil {
				t.Fatal(err)
			}
			got := passes(t, st)
			want := make([]bool, len(got))
			for p := range want {
				want[p] = m.filters(pr.p.Name(), pr.arg, p)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("step %d: %s %s: passes %v, reference %v\n%+v\n%+v", n, pr.p.Name(), pr.args, got, want, *w.Topology(t), *w.Step(t))
			}
		}
		for _, pr := range priorities {
			got, err := plugintest.RunVPodScore(t, pr, skew1, s)
			if err != nil {
				t.Fatal(err)
			}
			want := make([]int64, len(got))
			for p := range want {
				want[p] = m.score(pr.Name(), p)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("step %d: %s: scores %v, reference %v\n%+v\n%+v", n, pr.Name(), got, want, *w.Topology(t), *w.Step(t))
			}
		}
	}
}
