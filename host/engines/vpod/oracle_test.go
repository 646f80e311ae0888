package vpod

import (
	"sort"
	"strconv"
	"strings"
	"testing"
)

// oracleState is Knative v1.16.0's State, rebuilt from scratch the way
// its stateBuilder does: the reference the engine's incremental state
// must match.
type oracleState struct {
	FreeCap         []int32
	SchedulablePods []int32
	LastOrdinal     int32
	Capacity        int32
	Replicas        int32
	NodeToZoneMap   map[string]string
	PodSpread       map[Key]map[string]int32
	NodeSpread      map[Key]map[string]int32
	ZoneSpread      map[Key]map[string]int32
	Pending         map[Key]int32
	Expected        map[Key]int32
}

func (s *oracleState) free(o int32) int32 {
	if int(o) >= len(s.FreeCap) {
		return s.Capacity
	}
	return s.FreeCap[o]
}

func oracleOrdinal(name string) int32 {
	o, err := strconv.ParseInt(name[strings.LastIndex(name, "-")+1:], 10, 32)
	if err != nil {
		return 1 << 30 // never used by tests
	}
	return int32(o)
}

// oracleBuild builds the state; it deletes reservations equal to the
// committed placements from reserved, as withReserved does.
func oracleBuild(t *testing.T, c *StaticCluster, capacity int32, reserved map[Key]map[string]int32) *oracleState {
	t.Helper()
	vpods, _ := c.VPods()
	replicas, err := c.Replicas(nil)
	if err != nil {
		t.Fatal(err)
	}
	s := &oracleState{Capacity: capacity, Replicas: replicas, LastOrdinal: -1, NodeToZoneMap: map[string]string{},
		PodSpread: map[Key]map[string]int32{}, NodeSpread: map[Key]map[string]int32{}, ZoneSpread: map[Key]map[string]int32{},
		Pending: map[Key]int32{}, Expected: map[Key]int32{}}
	for _, n := range c.Nodes() {
		if nodeUnschedulable(n) {
			continue
		}
		z, ok := n.Labels[ZoneLabel]
		if !ok || z == "" {
			z = UnknownZone
		}
		s.NodeToZoneMap[n.Name] = z
	}
	sched := map[int32]bool{}
	for o := int32(0); o < replicas; o++ {
		p := c.Pod(podName(c.statefulSet, o))
		if p == nil || podUnschedulable(p) {
			continue
		}
		n := c.Node(p.Spec.NodeName)
		if n == nil {
			t.Fatalf("oracle: node %s missing", p.Spec.NodeName)
		}
		if nodeUnschedulable(n) {
			continue
		}
		sched[o] = true
		s.SchedulablePods = append(s.SchedulablePods, o)
	}
	sort.Slice(s.SchedulablePods, func(i, j int) bool { return s.SchedulablePods[i] < s.SchedulablePods[j] })
	update := func(pod string, vr int32) {
		o := oracleOrdinal(pod)
		for int(o) >= len(s.FreeCap) {
			s.FreeCap = append(s.FreeCap, capacity)
		}
		s.FreeCap[o] -= vr
		if o > s.LastOrdinal {
			s.LastOrdinal = o
		}
	}
	for _, o := range s.SchedulablePods {
		update(podName(c.statefulSet, o), 0)
	}
	withPlacement := map[Key]map[string]bool{}
	addSpread := func(k Key, pod string, vr int32) {
		p := c.Pod(pod)
		if p != nil && sched[oracleOrdinal(p.Name)] {
			node := p.Spec.NodeName
			zone := s.NodeToZoneMap[node]
			s.PodSpread[k][pod] += vr
			s.NodeSpread[k][node] += vr
			s.ZoneSpread[k][zone] += vr
		}
	}
	for _, v := range vpods {
		k := v.Key
		placed := TotalVReplicas(v.Placements)
		s.Pending[k] = max(0, v.VReplicas-placed)
		s.Expected[k] = v.VReplicas
		withPlacement[k] = map[string]bool{}
		s.PodSpread[k], s.NodeSpread[k], s.ZoneSpread[k] = map[string]int32{}, map[string]int32{}, map[string]int32{}
		for _, p := range v.Placements {
			vr := p.VReplicas
			if rps, ok := reserved[k]; ok {
				if r, ok := rps[p.PodName]; ok {
					if r == vr {
						delete(rps, p.PodName)
						if len(rps) == 0 {
							delete(reserved, k)
						}
					} else {
						vr = r
					}
				}
			}
			update(p.PodName, vr)
			withPlacement[k][p.PodName] = true
			addSpread(k, p.PodName, vr)
		}
	}
	for k, ps := range reserved {
		for pod, r := range ps {
			if wp, ok := withPlacement[k]; ok {
				if wp[pod] {
					continue
				}
				addSpread(k, pod, r)
			}
			update(pod, r)
		}
	}
	return s
}
