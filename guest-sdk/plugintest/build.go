package plugintest

import (
	"sort"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
)

// Res builds a resource list: cpu in millicores, memory in bytes, then
// name/value pairs for any other resource ("ephemeral-storage",
// "nvidia.com/gpu", ...), so tests state requests in one line.
func Res(milliCPU, memory int64, more ...any) abi.Resources {
	r := abi.Resources{MilliCPU: milliCPU, Memory: memory}
	for i := 0; i+1 < len(more); i += 2 {
		r.Add(more[i].(string), toInt64(more[i+1]))
	}
	return r
}

func toInt64(v any) int64 {
	switch n := v.(type) {
	case int:
		return int64(n)
	case int64:
		return n
	case int32:
		return int64(n)
	}
	panic("plugintest: resource quantity must be an integer")
}

// PodWrapper wraps a pod under construction.
type PodWrapper struct{ abi.Pod }

// MakePod starts a pod in namespace "default".
func MakePod() *PodWrapper {
	return &PodWrapper{abi.Pod{Namespace: "default", Name: "pod", UID: "pod-uid"}}
}

// Obj returns the built pod.
func (p *PodWrapper) Obj() *abi.Pod { return &p.Pod }

// Name sets the pod name (and UID).
func (p *PodWrapper) Name(n string) *PodWrapper {
	p.Pod.Name, p.UID = n, n+"-uid"
	return p
}

// Priority sets the pod's priority (what its PriorityClass resolves to):
// preemption offers only lower-priority pods as victims, and eviction
// sorts by it.
func (p *PodWrapper) Priority(v int32) *PodWrapper { p.Pod.Priority = v; return p }

// StartTime sets status.startTime, in Unix nanoseconds.
func (p *PodWrapper) StartTime(unixNano int64) *PodWrapper { p.Pod.StartTime = unixNano; return p }

// Namespace sets the pod's namespace.
func (p *PodWrapper) Namespace(ns string) *PodWrapper { p.Pod.Namespace = ns; return p }

// Label sets a pod label, keeping labels sorted as the host does.
func (p *PodWrapper) Label(k, v string) *PodWrapper {
	p.Pod.Labels = setLabel(p.Pod.Labels, k, v)
	return p
}

// NodeName sets spec.nodeName.
func (p *PodWrapper) NodeName(n string) *PodWrapper { p.Pod.NodeName = n; return p }

// Container adds an app container running image.
func (p *PodWrapper) Container(image string) *PodWrapper {
	p.Containers = append(p.Containers, abi.Container{Name: "c" + itoa(len(p.Containers)), Image: image})
	return p
}

// InitContainer adds a plain init container running image.
func (p *PodWrapper) InitContainer(image string) *PodWrapper {
	p.InitContainers = append(p.InitContainers, abi.Container{Name: "i" + itoa(len(p.InitContainers)), Image: image})
	return p
}

// Req adds an app container requesting r.
func (p *PodWrapper) Req(r abi.Resources) *PodWrapper {
	p.Containers = append(p.Containers, abi.Container{Name: "c" + itoa(len(p.Containers)), Requests: r})
	return p
}

// InitReq adds a plain init container requesting r.
func (p *PodWrapper) InitReq(r abi.Resources) *PodWrapper {
	p.InitContainers = append(p.InitContainers, abi.Container{Name: "i" + itoa(len(p.InitContainers)), Requests: r})
	return p
}

// SidecarReq adds a sidecar (restartPolicy Always init container)
// requesting r.
func (p *PodWrapper) SidecarReq(r abi.Resources) *PodWrapper {
	p.InitContainers = append(p.InitContainers, abi.Container{Name: "s" + itoa(len(p.InitContainers)), Requests: r, RestartAlways: true})
	return p
}

// Overhead sets the pod overhead.
func (p *PodWrapper) Overhead(r abi.Resources) *PodWrapper { p.Pod.Overhead = r; return p }

// HostPort adds an app container binding the host port.
func (p *PodWrapper) HostPort(ip string, proto abi.Protocol, port int32) *PodWrapper {
	p.Containers = append(p.Containers, abi.Container{Name: "c" + itoa(len(p.Containers)),
		Ports: []abi.HostPort{{IP: ip, Protocol: proto, Port: port}}})
	return p
}

// InitHostPort adds an init container (a sidecar if sidecar is set)
// binding the host port.
func (p *PodWrapper) InitHostPort(sidecar bool, ip string, proto abi.Protocol, port int32) *PodWrapper {
	p.InitContainers = append(p.InitContainers, abi.Container{Name: "i" + itoa(len(p.InitContainers)),
		RestartAlways: sidecar, Ports: []abi.HostPort{{IP: ip, Protocol: proto, Port: port}}})
	return p
}

// Toleration adds a toleration.
func (p *PodWrapper) Toleration(key string, op abi.TolerationOperator, value string, effect abi.TaintEffect) *PodWrapper {
	p.Tolerations = append(p.Tolerations, abi.Toleration{Key: key, Operator: op, Value: value, Effect: effect})
	return p
}

// NodeSelector sets spec.nodeSelector from key, value pairs.
func (p *PodWrapper) NodeSelector(kv ...string) *PodWrapper {
	p.Pod.NodeSelector = labels(kv)
	return p
}

// RequiredTerm appends a required node affinity term (ORed with others).
func (p *PodWrapper) RequiredTerm(t *TermWrapper) *PodWrapper {
	na := p.affinity()
	if na.Required == nil {
		na.Required = &abi.NodeSelector{}
	}
	na.Required.Terms = append(na.Required.Terms, t.NodeSelectorTerm)
	return p
}

// EmptyRequired sets a required node affinity with no terms, which
// matches no node.
func (p *PodWrapper) EmptyRequired() *PodWrapper {
	p.affinity().Required = &abi.NodeSelector{}
	return p
}

// Preferred appends a weighted preferred node affinity term.
func (p *PodWrapper) Preferred(weight int32, t *TermWrapper) *PodWrapper {
	na := p.affinity()
	na.Preferred = append(na.Preferred, abi.PreferredSchedulingTerm{Weight: weight, Term: t.NodeSelectorTerm})
	return p
}

func (p *PodWrapper) affinity() *abi.NodeAffinity {
	if p.NodeAffinity == nil {
		p.NodeAffinity = &abi.NodeAffinity{}
	}
	return p.NodeAffinity
}

// TermWrapper wraps a node selector term under construction.
type TermWrapper struct{ abi.NodeSelectorTerm }

// Term starts an empty node selector term (which matches nothing).
func Term() *TermWrapper { return &TermWrapper{} }

// Expr adds a label requirement.
func (t *TermWrapper) Expr(key string, op abi.Operator, values ...string) *TermWrapper {
	t.MatchExpressions = append(t.MatchExpressions, abi.Requirement{Key: key, Operator: op, Values: values})
	return t
}

// Field adds a field requirement (only metadata.name is meaningful).
func (t *TermWrapper) Field(key string, op abi.Operator, values ...string) *TermWrapper {
	t.MatchFields = append(t.MatchFields, abi.Requirement{Key: key, Operator: op, Values: values})
	return t
}

// NodeWrapper wraps a node (with its aggregates) under construction.
type NodeWrapper struct{ plugin.NodeInfo }

// MakeNode starts a node named "node" that allows 110 pods.
func MakeNode() *NodeWrapper {
	n := &NodeWrapper{}
	n.Node.Name = "node"
	n.Node.AllowedPods = 110
	return n
}

// Obj returns the built node.
func (n *NodeWrapper) Obj() *plugin.NodeInfo { return &n.NodeInfo }

// Name sets the node name.
func (n *NodeWrapper) Name(s string) *NodeWrapper { n.Node.Name = s; return n }

// Label sets a label, keeping labels sorted as the host does.
func (n *NodeWrapper) Label(k, v string) *NodeWrapper {
	n.Node.Labels = setLabel(n.Node.Labels, k, v)
	return n
}

// setLabel returns ls with k set to v, sorted by key.
func setLabel(ls abi.Labels, k, v string) abi.Labels {
	kv := make([]string, 0, 2*len(ls)+2)
	for _, l := range ls {
		if l.Key != k {
			kv = append(kv, l.Key, l.Value)
		}
	}
	return labels(append(kv, k, v))
}

// Taint adds a taint.
func (n *NodeWrapper) Taint(key, value string, effect abi.TaintEffect) *NodeWrapper {
	n.Node.Taints = append(n.Node.Taints, abi.Taint{Key: key, Value: value, Effect: effect})
	return n
}

// Unschedulable cordons the node.
func (n *NodeWrapper) Unschedulable() *NodeWrapper { n.Node.Unschedulable = true; return n }

// Capacity sets allocatable resources.
func (n *NodeWrapper) Capacity(r abi.Resources) *NodeWrapper { n.Node.Allocatable = r; return n }

// AllowedPods sets allocatable pods.
func (n *NodeWrapper) AllowedPods(c int64) *NodeWrapper { n.Node.AllowedPods = c; return n }

// Image adds an image present on the node.
func (n *NodeWrapper) Image(size int64, names ...string) *NodeWrapper {
	n.Node.Images = append(n.Node.Images, abi.ImageState{Names: names, Size: size})
	return n
}

// UsedPort records a host port taken by some pod on the node.
func (n *NodeWrapper) UsedPort(ip string, proto abi.Protocol, port int32) *NodeWrapper {
	n.UsedPorts = append(n.UsedPorts, abi.HostPort{IP: ip, Protocol: proto, Port: port})
	return n
}

// AddPod places a pod on the node, updating the aggregates the way the
// host does (kube's NodeInfo.AddPod).
func (n *NodeWrapper) AddPod(p *abi.Pod) *NodeWrapper {
	req := abi.PodRequests(p)
	n.Requested.AddAll(&req)
	nz := abi.PodNonZeroRequests(p)
	n.NonZeroRequested.MilliCPU += nz.MilliCPU
	n.NonZeroRequested.Memory += nz.Memory
	n.NodeInfo.PodCount++
	n.UsedPorts = append(n.UsedPorts, abi.PodHostPorts(p)...)
	n.Pods = append(n.Pods, *p)
	return n
}

// PodCount sets the number of pods without adding any.
func (n *NodeWrapper) PodCount(c int32) *NodeWrapper { n.NodeInfo.PodCount = c; return n }

func labels(kv []string) abi.Labels {
	var ls abi.Labels
	for i := 0; i+1 < len(kv); i += 2 {
		ls = append(ls, abi.Label{Key: kv[i], Value: kv[i+1]})
	}
	sort.Slice(ls, func(i, j int) bool { return ls[i].Key < ls[j].Key })
	return ls
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}
