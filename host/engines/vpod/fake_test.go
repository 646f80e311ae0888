package vpod

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/wasmsched/wasmsched/abi"
)

// fakeModule is an in-process stand-in for a vpod module: Go versions of
// Knative's ten plugins with the signed scores of the deliberate fix,
// written from the v1.16.0 rules independently of the guest SDK. It
// counts calls and can be made to fail.
type fakeModule struct {
	modName  string
	plugins  []string
	policies map[uint32]*abi.VPodPolicy
	topo     *abi.VPodTopology
	// failStep makes every step call fail (a trap).
	failStep bool
	steps    int
	topos    int
	regs     int
}

func newFakeModule(name string, plugins ...string) *fakeModule {
	if len(plugins) == 0 {
		plugins = []string{"PodFitsResources", "NoMaxResourceCount", "EvenPodSpread", "AvailabilityNodePriority", "AvailabilityZonePriority",
			"LowestOrdinalPriority", "RemoveWithEvenPodSpreadPriority", "RemoveWithAvailabilityNodePriority", "RemoveWithAvailabilityZonePriority",
			"RemoveWithHighestOrdinalPriority"}
	}
	return &fakeModule{modName: name, plugins: plugins, policies: map[uint32]*abi.VPodPolicy{}}
}

var predicatePlugins = map[string]bool{"PodFitsResources": true, "NoMaxResourceCount": true, "EvenPodSpread": true}
var priorityPlugins = map[string]bool{"EvenPodSpread": true, "AvailabilityNodePriority": true, "AvailabilityZonePriority": true,
	"LowestOrdinalPriority": true, "RemoveWithEvenPodSpreadPriority": true, "RemoveWithAvailabilityNodePriority": true,
	"RemoveWithAvailabilityZonePriority": true, "RemoveWithHighestOrdinalPriority": true}

// modulePool, with a single instance (the module itself).
func (m *fakeModule) name() string                            { return m.modName }
func (m *fakeModule) get(context.Context) (vpodClient, error) { return m, nil }
func (m *fakeModule) put(context.Context, vpodClient)         {}
func (m *fakeModule) close(context.Context)                   {}
func (m *fakeModule) index(name string) int                   { return indexOfString(m.plugins, name) }
func indexOfString(xs []string, x string) int {
	for i, y := range xs {
		if y == x {
			return i
		}
	}
	return -1
}

func (m *fakeModule) EnsureVPodPolicy(_ context.Context, p *abi.VPodPolicy) (*abi.VPodPolicyReply, error) {
	m.regs++
	m.policies[p.ID] = p
	r := &abi.VPodPolicyReply{Invalid: make([]string, len(p.Entries))}
	for i, e := range p.Entries {
		if _, err := decodeFakeArgs(m.plugins[e.Plugin], e.Args); err != nil {
			r.Invalid[i] = err.Error()
		}
	}
	return r, nil
}

func (m *fakeModule) VPodTopology(_ context.Context, t *abi.VPodTopology) error {
	if m.topo == nil || m.topo.Generation != t.Generation {
		m.topos++
		m.topo = t
	}
	return nil
}

type fakeArgs struct {
	MaxSkew       int32
	NumPartitions int
}

// decodeFakeArgs decodes args the Knative way: a JSON string holding an
// object, unknown fields refused.
func decodeFakeArgs(plugin string, raw []byte) (fakeArgs, error) {
	var a fakeArgs
	switch plugin {
	case "PodFitsResources", "LowestOrdinalPriority", "RemoveWithHighestOrdinalPriority":
		return a, nil
	}
	var s string
	if raw == nil || json.Unmarshal(raw, &s) != nil {
		return a, errors.New("invalid arguments")
	}
	d := json.NewDecoder(strings.NewReader(s))
	d.DisallowUnknownFields()
	var err error
	if plugin == "NoMaxResourceCount" {
		var v struct{ NumPartitions int }
		err = d.Decode(&v)
		a.NumPartitions = v.NumPartitions
	} else {
		var v struct{ MaxSkew int32 }
		err = d.Decode(&v)
		a.MaxSkew = v.MaxSkew
	}
	if err != nil {
		return a, errors.New("invalid arguments")
	}
	return a, nil
}

func (m *fakeModule) VPodStep(_ context.Context, p *abi.VPodPolicy, s *abi.VPodStep) (*abi.VPodStepReply, error) {
	m.steps++
	if m.failStep {
		return nil, fmt.Errorf("module %q: wasm trap: unreachable", m.modName)
	}
	if m.topo == nil || m.topo.Generation != s.Topology {
		return nil, errors.New("step names a topology the module does not have")
	}
	t := m.topo
	podSp, nodeSp, zoneSp := counts(s.PodSpread), counts(s.NodeSpread), counts(s.ZoneSpread)
	r := &abi.VPodStepReply{Verdicts: make([]abi.VPodVerdict, len(s.Candidates))}
	for ei, e := range p.Entries {
		if e.Kind != abi.VPodPriority {
			continue
		}
		r.Scores = append(r.Scores, abi.VPodScores{Entry: uint32(ei), Scores: make([]int64, len(s.Candidates))})
	}
	for ci, cand := range s.Candidates {
		pod := int(cand)
		si := 0
		for ei, e := range p.Entries {
			plugin := m.plugins[e.Plugin]
			args, argErr := decodeFakeArgs(plugin, e.Args)
			if e.Kind == abi.VPodPredicate {
				if r.Verdicts[ci].Entry != 0 {
					continue
				}
				ok := argErr == nil && fakeFilter(plugin, args, t, s, pod, podSp)
				if !ok {
					r.Verdicts[ci] = abi.VPodVerdict{Entry: uint32(ei) + 1, Code: abi.Unschedulable, Reason: "unschedulable"}
				}
				continue
			}
			if argErr != nil {
				r.Errors = append(r.Errors, abi.VPodScoreError{Entry: uint32(ei), Candidate: uint32(ci), Message: "invalid arguments"})
			} else {
				r.Scores[si].Scores[ci] = fakeScore(plugin, t, s, pod, podSp, nodeSp, zoneSp)
			}
			si++
		}
	}
	return r, nil
}

func counts(cs []abi.VPodCount) map[int]int32 {
	m := make(map[int]int32, len(cs))
	for _, c := range cs {
		m[int(c.Index)] = c.VReplicas
	}
	return m
}

func abs32(x int32) int32 {
	if x < 0 {
		return -x
	}
	return x
}

func fakeFilter(plugin string, a fakeArgs, t *abi.VPodTopology, s *abi.VPodStep, pod int, podSp map[int]int32) bool {
	switch plugin {
	case "PodFitsResources":
		return s.FreeCapEmpty || s.Free[pod] > 0
	case "NoMaxResourceCount":
		_, in := podSp[pod]
		return in || len(podSp)+1 <= a.NumPartitions
	case "EvenPodSpread":
		if t.Replicas <= 0 {
			return true
		}
		c := podSp[pod]
		for q := range t.Pods {
			if q == pod {
				continue
			}
			o := podSp[q]
			if o == 0 && s.Free[q] <= 0 {
				continue
			}
			if abs32(c+1-o) > a.MaxSkew {
				return false
			}
		}
		return true
	}
	return true
}

func fakeScore(plugin string, t *abi.VPodTopology, s *abi.VPodStep, pod int, podSp, nodeSp, zoneSp map[int]int32) int64 {
	if t.Replicas <= 0 {
		return 0
	}
	var pen int64
	node := int(t.Pods[pod].Node)
	zone := int(t.Nodes[node].Zone)
	switch plugin {
	case "EvenPodSpread":
		c := podSp[pod]
		for q := range t.Pods {
			if q == pod {
				continue
			}
			o := podSp[q]
			if o == 0 && s.Free[q] == 0 {
				continue
			}
			pen += int64(abs32(c + 1 - o))
		}
	case "AvailabilityNodePriority":
		c := nodeSp[node]
		for n := range t.Nodes {
			if n != node {
				pen += int64(abs32(c + 1 - nodeSp[n]))
			}
		}
	case "AvailabilityZonePriority":
		c := zoneSp[zone]
		for z := range t.Zones {
			if z != zone {
				pen += int64(abs32(c + 1 - zoneSp[z]))
			}
		}
	case "LowestOrdinalPriority":
		pen = int64(t.Pods[pod].Ordinal)
	case "RemoveWithHighestOrdinalPriority":
		return int64(t.Pods[pod].Ordinal)
	case "RemoveWithEvenPodSpreadPriority":
		c := podSp[pod]
		for q, o := range podSp {
			if q != pod {
				pen += int64(abs32(c - 1 - o))
			}
		}
	case "RemoveWithAvailabilityNodePriority":
		c := nodeSp[node]
		for n, o := range nodeSp {
			if n != node {
				pen += int64(abs32(c - 1 - o))
			}
		}
	case "RemoveWithAvailabilityZonePriority":
		c := zoneSp[zone]
		for z, o := range zoneSp {
			if z != zone {
				pen += int64(abs32(c - 1 - o))
			}
		}
	}
	return -pen
}

// fakePolicies binds the policies to fake modules: each plugin name goes
// to the first module serving it.
func fakePolicies(sched, desched *Policy, mods ...*fakeModule) (*Policies, error) {
	p := &Policies{log: hclog.NewNullLogger()}
	for _, m := range mods {
		p.pools = append(p.pools, m)
	}
	r := resolver{
		resolve: func(name string, kind abi.VPodEntryKind) (modulePool, uint32, string, error) {
			for _, m := range mods {
				if i := m.index(name); i >= 0 {
					if kind == abi.VPodPredicate && !predicatePlugins[name] || kind == abi.VPodPriority && !priorityPlugins[name] {
						return nil, 0, "served as the other kind only", nil
					}
					return m, uint32(i), "", nil
				}
			}
			return nil, 0, "no module serves it", nil
		},
		served: func(kind abi.VPodEntryKind) []string {
			var out []string
			for _, m := range mods {
				for _, n := range m.plugins {
					if kind == abi.VPodPredicate && predicatePlugins[n] || kind == abi.VPodPriority && priorityPlugins[n] {
						out = append(out, n)
					}
				}
			}
			sort.Strings(out)
			return out
		},
	}
	if err := p.bind(context.Background(), sched, desched, r); err != nil {
		return nil, err
	}
	return p, nil
}
