package abi

// Encoders and decoders of the scheduling view, field by field in
// declaration order. Every decoder is total: malformed input sets the
// Decoder's error and yields zero values.

// Labels appends a label list.
func (e *Encoder) Labels(ls Labels) {
	e.Uvarint(uint64(len(ls)))
	for i := range ls {
		e.sym(ls[i].Key)
		e.sym(ls[i].Value)
	}
}

// Labels reads a label list.
func (d *Decoder) Labels() Labels {
	n := d.Count(2)
	if n == 0 {
		return nil
	}
	return d.labelsInto(d.slab.makeLabels(n))
}

// labelsInto reads len(ls) labels, whose count was read, into ls.
func (d *Decoder) labelsInto(ls Labels) Labels {
	for i := range ls {
		ls[i].Key, ls[i].KeyID = d.sym()
		ls[i].Value, ls[i].ValueID = d.sym()
	}
	return ls
}

// recordLabels reads a node's labels (node true) or a pod group's, from
// the decoder's NodeLists when it has them.
func (d *Decoder) recordLabels(node bool) Labels {
	if d.lists == nil {
		return d.Labels()
	}
	n := d.Count(2)
	if node {
		return d.labelsInto(d.lists.nodeLabels(n))
	}
	return d.labelsInto(d.lists.groupLabelList(n))
}

// Resources appends a resource list.
func (e *Encoder) Resources(r *Resources) {
	e.Varint(r.MilliCPU)
	e.Varint(r.Memory)
	e.Varint(r.EphemeralStorage)
	e.Uvarint(uint64(len(r.Scalars)))
	for i := range r.Scalars {
		e.String(r.Scalars[i].Name)
		e.Varint(r.Scalars[i].Value)
	}
}

// Resources reads a resource list.
func (d *Decoder) Resources(r *Resources) {
	r.MilliCPU = d.Varint()
	r.Memory = d.Varint()
	r.EphemeralStorage = d.Varint()
	n := d.Count(2)
	r.Scalars = nil
	if n > 0 {
		r.Scalars = make([]Scalar, n)
		for i := range r.Scalars {
			r.Scalars[i].Name = d.String()
			r.Scalars[i].Value = d.Varint()
		}
	}
}

func (e *Encoder) hostPorts(ps []HostPort) {
	e.Uvarint(uint64(len(ps)))
	for i := range ps {
		e.String(ps[i].IP)
		e.U8(uint8(ps[i].Protocol))
		e.Varint(int64(ps[i].Port))
	}
}

func (d *Decoder) hostPorts() []HostPort {
	n := d.Count(3)
	if n == 0 {
		return nil
	}
	ps := make([]HostPort, n)
	for i := range ps {
		ps[i].IP = d.String()
		ps[i].Protocol = Protocol(d.enum(uint8(ProtocolSCTP), "protocol"))
		ps[i].Port = d.Int32()
	}
	return ps
}

// enum reads a byte that must be at most maxV.
func (d *Decoder) enum(maxV uint8, what string) uint8 {
	v := d.U8()
	if v > maxV {
		d.failf("unknown " + what)
		return 0
	}
	return v
}

func (e *Encoder) containers(cs []Container) {
	e.Uvarint(uint64(len(cs)))
	for i := range cs {
		c := &cs[i]
		e.String(c.Name)
		e.String(c.Image)
		e.Resources(&c.Requests)
		e.hostPorts(c.Ports)
		e.Bool(c.RestartAlways)
	}
}

func (d *Decoder) containers() []Container {
	n := d.Count(8)
	if n == 0 {
		return nil
	}
	cs := d.slab.makeContainers(n)
	for i := range cs {
		c := &cs[i]
		c.Name = d.String()
		c.Image = d.String()
		d.Resources(&c.Requests)
		c.Ports = d.hostPorts()
		c.RestartAlways = d.Bool()
	}
	return cs
}

func (e *Encoder) requirements(rs []Requirement) {
	e.Uvarint(uint64(len(rs)))
	for i := range rs {
		e.String(rs[i].Key)
		e.U8(uint8(rs[i].Operator))
		e.Strings(rs[i].Values)
	}
}

func (d *Decoder) requirements() []Requirement {
	n := d.Count(3)
	if n == 0 {
		return nil
	}
	rs := make([]Requirement, n)
	for i := range rs {
		rs[i].Key = d.String()
		rs[i].Operator = Operator(d.enum(uint8(OpLt), "operator"))
		rs[i].Values = d.Strings()
	}
	return rs
}

func (e *Encoder) nodeSelectorTerm(t *NodeSelectorTerm) {
	e.requirements(t.MatchExpressions)
	e.requirements(t.MatchFields)
}

func (d *Decoder) nodeSelectorTerm(t *NodeSelectorTerm) {
	t.MatchExpressions = d.requirements()
	t.MatchFields = d.requirements()
}

func (e *Encoder) nodeAffinity(a *NodeAffinity) {
	e.Bool(a != nil)
	if a == nil {
		return
	}
	e.Bool(a.Required != nil)
	if a.Required != nil {
		e.Uvarint(uint64(len(a.Required.Terms)))
		for i := range a.Required.Terms {
			e.nodeSelectorTerm(&a.Required.Terms[i])
		}
	}
	e.Uvarint(uint64(len(a.Preferred)))
	for i := range a.Preferred {
		e.Varint(int64(a.Preferred[i].Weight))
		e.nodeSelectorTerm(&a.Preferred[i].Term)
	}
}

func (d *Decoder) nodeAffinity() *NodeAffinity {
	if !d.Optional() {
		return nil
	}
	a := &NodeAffinity{}
	if d.Optional() {
		a.Required = &NodeSelector{}
		if n := d.Count(2); n > 0 {
			a.Required.Terms = make([]NodeSelectorTerm, n)
			for i := range a.Required.Terms {
				d.nodeSelectorTerm(&a.Required.Terms[i])
			}
		}
	}
	if n := d.Count(3); n > 0 {
		a.Preferred = make([]PreferredSchedulingTerm, n)
		for i := range a.Preferred {
			a.Preferred[i].Weight = d.Int32()
			d.nodeSelectorTerm(&a.Preferred[i].Term)
		}
	}
	return a
}

// LabelSelector appends an optional label selector.
func (e *Encoder) LabelSelector(s *LabelSelector) {
	e.Bool(s != nil)
	if s == nil {
		return
	}
	e.Labels(s.MatchLabels)
	e.requirements(s.MatchExpressions)
}

// LabelSelector reads an optional label selector.
func (d *Decoder) LabelSelector() *LabelSelector {
	if !d.Optional() {
		return nil
	}
	s := &LabelSelector{}
	s.MatchLabels = d.Labels()
	s.MatchExpressions = d.requirements()
	return s
}

func (e *Encoder) podAffinityTerm(t *PodAffinityTerm) {
	e.LabelSelector(t.LabelSelector)
	e.Strings(t.Namespaces)
	e.LabelSelector(t.NamespaceSelector)
	e.String(t.TopologyKey)
	e.Strings(t.MatchLabelKeys)
	e.Strings(t.MismatchLabelKeys)
}

func (d *Decoder) podAffinityTerm(t *PodAffinityTerm) {
	t.LabelSelector = d.LabelSelector()
	t.Namespaces = d.Strings()
	t.NamespaceSelector = d.LabelSelector()
	t.TopologyKey = d.String()
	t.MatchLabelKeys = d.Strings()
	t.MismatchLabelKeys = d.Strings()
}

func (e *Encoder) podAffinity(a *PodAffinity) {
	e.Bool(a != nil)
	if a == nil {
		return
	}
	e.Uvarint(uint64(len(a.Required)))
	for i := range a.Required {
		e.podAffinityTerm(&a.Required[i])
	}
	e.Uvarint(uint64(len(a.Preferred)))
	for i := range a.Preferred {
		e.Varint(int64(a.Preferred[i].Weight))
		e.podAffinityTerm(&a.Preferred[i].Term)
	}
}

func (d *Decoder) podAffinity() *PodAffinity {
	if !d.Optional() {
		return nil
	}
	a := &PodAffinity{}
	if n := d.Count(6); n > 0 {
		a.Required = make([]PodAffinityTerm, n)
		for i := range a.Required {
			d.podAffinityTerm(&a.Required[i])
		}
	}
	if n := d.Count(7); n > 0 {
		a.Preferred = make([]WeightedPodAffinityTerm, n)
		for i := range a.Preferred {
			a.Preferred[i].Weight = d.Int32()
			d.podAffinityTerm(&a.Preferred[i].Term)
		}
	}
	return a
}

func (e *Encoder) tolerations(ts []Toleration) {
	e.Uvarint(uint64(len(ts)))
	for i := range ts {
		e.String(ts[i].Key)
		e.U8(uint8(ts[i].Operator))
		e.String(ts[i].Value)
		e.U8(uint8(ts[i].Effect))
	}
}

func (d *Decoder) tolerations() []Toleration {
	n := d.Count(4)
	if n == 0 {
		return nil
	}
	ts := make([]Toleration, n)
	for i := range ts {
		ts[i].Key = d.String()
		ts[i].Operator = TolerationOperator(d.enum(uint8(TolerationExists), "toleration operator"))
		ts[i].Value = d.String()
		ts[i].Effect = TaintEffect(d.enum(uint8(EffectNoExecute), "taint effect"))
	}
	return ts
}

func (e *Encoder) spread(cs []TopologySpreadConstraint) {
	e.Uvarint(uint64(len(cs)))
	for i := range cs {
		c := &cs[i]
		e.Varint(int64(c.MaxSkew))
		e.String(c.TopologyKey)
		e.U8(uint8(c.WhenUnsatisfiable))
		e.LabelSelector(c.LabelSelector)
		e.Varint(int64(c.MinDomains))
		e.U8(uint8(c.NodeAffinityPolicy))
		e.U8(uint8(c.NodeTaintsPolicy))
		e.Strings(c.MatchLabelKeys)
	}
}

func (d *Decoder) spread() []TopologySpreadConstraint {
	n := d.Count(8)
	if n == 0 {
		return nil
	}
	cs := make([]TopologySpreadConstraint, n)
	for i := range cs {
		c := &cs[i]
		c.MaxSkew = d.Int32()
		c.TopologyKey = d.String()
		c.WhenUnsatisfiable = WhenUnsatisfiable(d.enum(uint8(ScheduleAnyway), "whenUnsatisfiable"))
		c.LabelSelector = d.LabelSelector()
		c.MinDomains = d.Int32()
		c.NodeAffinityPolicy = InclusionPolicy(d.enum(uint8(PolicyIgnore), "nodeAffinityPolicy"))
		c.NodeTaintsPolicy = InclusionPolicy(d.enum(uint8(PolicyIgnore), "nodeTaintsPolicy"))
		c.MatchLabelKeys = d.Strings()
	}
	return cs
}

// Pod appends a pod.
func (e *Encoder) Pod(p *Pod) {
	e.String(p.UID)
	e.sym(p.Namespace)
	e.String(p.Name)
	e.Labels(p.Labels)
	e.String(p.NodeName)
	e.String(p.NominatedNodeName)
	e.String(p.SchedulerName)
	e.Varint(int64(p.Priority))
	e.Bool(p.PreemptNever)
	e.Bool(p.Terminating)
	e.Varint(p.StartTime)
	e.containers(p.Containers)
	e.containers(p.InitContainers)
	e.Resources(&p.Overhead)
	e.Labels(p.NodeSelector)
	e.nodeAffinity(p.NodeAffinity)
	e.podAffinity(p.PodAffinity)
	e.podAffinity(p.PodAntiAffinity)
	e.tolerations(p.Tolerations)
	e.spread(p.TopologySpread)
	e.Uvarint(uint64(len(p.Owners)))
	for i := range p.Owners {
		o := &p.Owners[i]
		e.String(o.Kind)
		e.String(o.Name)
		e.String(o.UID)
		e.Bool(o.Controller)
	}
	e.LabelSelector(p.ControllerSelector)
	if e.peerReads(4) {
		e.podV14(p)
	}
}

// podV14 appends the Pod fields of ABI v1.4: each container's and init
// container's Given flags (one byte each, in the lists' order), then the
// optional pod-level requests.
func (e *Encoder) podV14(p *Pod) {
	for i := range p.Containers {
		e.U8(uint8(p.Containers[i].Given))
	}
	for i := range p.InitContainers {
		e.U8(uint8(p.InitContainers[i].Given))
	}
	e.Bool(p.PodLevel != nil)
	if p.PodLevel != nil {
		e.U8(uint8(p.PodLevel.Given))
		e.Resources(&p.PodLevel.Requests)
	}
}

// podV14 reads what Encoder.podV14 wrote.
func (d *Decoder) podV14(p *Pod) {
	for i := range p.Containers {
		p.Containers[i].Given = RequestFlags(d.U8())
	}
	for i := range p.InitContainers {
		p.InitContainers[i].Given = RequestFlags(d.U8())
	}
	p.PodLevel = nil
	if d.Bool() {
		p.PodLevel = &PodLevelRequests{Given: RequestFlags(d.U8())}
		d.Resources(&p.PodLevel.Requests)
	}
}

// Pod reads a pod into p, overwriting every field.
func (d *Decoder) Pod(p *Pod) {
	p.UID = d.String()
	p.Namespace, p.NamespaceID = d.sym()
	p.Name = d.String()
	p.Labels = d.Labels()
	p.NodeName = d.String()
	p.NominatedNodeName = d.String()
	p.SchedulerName = d.String()
	p.Priority = d.Int32()
	p.PreemptNever = d.Bool()
	p.Terminating = d.Bool()
	p.StartTime = d.Varint()
	p.Containers = d.containers()
	p.InitContainers = d.containers()
	d.Resources(&p.Overhead)
	p.NodeSelector = d.Labels()
	p.NodeAffinity = d.nodeAffinity()
	p.PodAffinity = d.podAffinity()
	p.PodAntiAffinity = d.podAffinity()
	p.Tolerations = d.tolerations()
	p.TopologySpread = d.spread()
	p.Owners = nil
	if n := d.Count(4); n > 0 {
		p.Owners = make([]OwnerRef, n)
		for i := range p.Owners {
			o := &p.Owners[i]
			o.Kind = d.String()
			o.Name = d.String()
			o.UID = d.String()
			o.Controller = d.Bool()
		}
	}
	p.ControllerSelector = d.LabelSelector()
	p.PodLevel = nil
	if d.peerWrote(4) {
		d.podV14(p)
	}
}

// CycleRequest appends the input of FuncCycle: the pod, then (ABI v1.6,
// for a reader of v1.6 or later) its image volumes. They follow the
// whole Pod rather than sit in it so that the Pod encoding, which node
// records carry in lists, stays as v1.5 wrote it.
func (e *Encoder) CycleRequest(p *Pod) {
	e.Pod(p)
	if e.peerReads(6) {
		e.Strings(p.ImageVolumes)
	}
	if e.peerReads(7) {
		e.Uvarint(p.RequiredFeatures)
	}
}

// CycleRequest reads what Encoder.CycleRequest wrote into p. A request
// that ends after the pod (a writer before v1.6) has no image volumes,
// one that ends after them (before v1.7) no required features.
func (d *Decoder) CycleRequest(p *Pod) {
	d.Pod(p)
	p.ImageVolumes, p.RequiredFeatures = nil, 0
	if d.peerWrote(6) && d.Remaining() > 0 {
		p.ImageVolumes = d.Strings()
	}
	if d.peerWrote(7) && d.Remaining() > 0 {
		p.RequiredFeatures = d.Uvarint()
	}
}

// Node appends a node.
func (e *Encoder) Node(n *Node) {
	e.String(n.Name)
	e.Labels(n.Labels)
	e.Uvarint(uint64(len(n.Taints)))
	for i := range n.Taints {
		e.sym(n.Taints[i].Key)
		e.sym(n.Taints[i].Value)
		e.U8(uint8(n.Taints[i].Effect))
	}
	e.Bool(n.Unschedulable)
	e.Resources(&n.Allocatable)
	e.Varint(n.AllowedPods)
	e.Uvarint(uint64(len(n.Images)))
	for i := range n.Images {
		e.Uvarint(uint64(len(n.Images[i].Names)))
		for _, name := range n.Images[i].Names {
			e.sym(name)
		}
		e.Varint(n.Images[i].Size)
	}
}

// Node reads a node into n, overwriting every field.
func (d *Decoder) Node(n *Node) {
	n.Name = d.String()
	n.Labels = d.recordLabels(true)
	n.Taints = nil
	if c := d.Count(3); c > 0 {
		if d.lists != nil {
			n.Taints = d.lists.taintList(c)
		} else {
			n.Taints = make([]Taint, c)
		}
		for i := range n.Taints {
			n.Taints[i].Key, n.Taints[i].KeyID = d.sym()
			n.Taints[i].Value, n.Taints[i].ValueID = d.sym()
			n.Taints[i].Effect = TaintEffect(d.enum(uint8(EffectNoExecute), "taint effect"))
			if n.Taints[i].Effect == EffectAll {
				d.failf("taint without effect")
			}
		}
	}
	n.Unschedulable = d.Bool()
	d.Resources(&n.Allocatable)
	n.AllowedPods = d.Varint()
	n.Images = nil
	if c := d.Count(2); c > 0 {
		if d.lists != nil {
			n.Images = d.lists.imageList(c)
		} else {
			n.Images = make([]ImageState, c)
		}
		for i := range n.Images {
			n.Images[i].Names, n.Images[i].NameIDs = d.imageNames()
			n.Images[i].Size = d.Varint()
		}
	}
}

// minPodSize is the fewest bytes a Pod encodes to (every field empty, for
// a reader before v1.4; one more since).
const minPodSize = 25

// NodeInfo appends a node with its aggregates.
func (e *Encoder) NodeInfo(ni *NodeInfo) {
	e.Node(&ni.Node)
	e.Resources(&ni.Requested)
	e.Resources(&ni.NonZeroRequested)
	e.Varint(int64(ni.PodCount))
	e.hostPorts(ni.UsedPorts)
	e.Uvarint(uint64(len(ni.Pods)))
	for i := range ni.Pods {
		e.Pod(&ni.Pods[i])
	}
	e.Uvarint(uint64(len(ni.PodGroups)))
	for i := range ni.PodGroups {
		g := &ni.PodGroups[i]
		e.sym(g.Namespace)
		e.Labels(g.Labels)
		e.Varint(int64(g.Count))
	}
	if e.peerReads(7) {
		e.Uvarint(ni.Node.DeclaredFeatures)
	}
}

// NodeInfoBeforeV17 appends a node with its aggregates, as NodeInfo does,
// and returns where in e.B a record for a reader before v1.7 ends: the
// same bytes without the trailing declared features. A host caches one
// encoding and hands older modules its prefix.
func (e *Encoder) NodeInfoBeforeV17(ni *NodeInfo) (end int) {
	e.NodeInfo(ni)
	if !e.peerReads(7) {
		return len(e.B)
	}
	return len(e.B) - uvarintLen(ni.Node.DeclaredFeatures)
}

// uvarintLen is how many bytes Uvarint writes for v.
func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// NodeInfo reads a node with its aggregates, overwriting every field.
func (d *Decoder) NodeInfo(ni *NodeInfo) {
	d.Node(&ni.Node)
	d.Resources(&ni.Requested)
	d.Resources(&ni.NonZeroRequested)
	ni.PodCount = d.Int32()
	ni.UsedPorts = d.hostPorts()
	ni.Pods = nil
	if n := d.Count(minPodSize); n > 0 {
		ni.Pods = make([]Pod, n)
		for i := range ni.Pods {
			d.Pod(&ni.Pods[i])
		}
	}
	ni.PodGroups = nil
	if n := d.Count(3); n > 0 {
		if d.lists != nil {
			ni.PodGroups = d.lists.groupList(n)
		} else {
			ni.PodGroups = make([]PodGroup, n)
		}
		for i := range ni.PodGroups {
			g := &ni.PodGroups[i]
			g.Namespace, g.NamespaceID = d.sym()
			g.Labels = d.recordLabels(false)
			// Label sets are numbered by their StrIDs: interned records
			// only. (Asked per group: hoisted, it costs small modules
			// more code than the assertion costs a sync.)
			if sets, ok := d.lists.(labelSets); ok && d.table != nil { // groups come zeroed
				g.LabelsID = sets.labelSet(g.Labels)
			}
			g.Count = d.Int32()
		}
	}
	ni.Node.DeclaredFeatures = 0
	if d.peerWrote(7) && d.Remaining() > 0 {
		ni.Node.DeclaredFeatures = d.Uvarint()
	}
}

// imageNames reads an image's names and, from an interned record, their
// StrIDs (nil otherwise).
func (d *Decoder) imageNames() ([]string, []StrID) {
	n := d.Count(1)
	if n == 0 {
		return nil, nil
	}
	var names []string
	var ids []StrID
	if d.lists != nil {
		names = d.lists.nameList(n)
		if d.table != nil {
			ids = d.lists.idList(n)
		}
	} else {
		names = make([]string, n)
		if d.table != nil {
			ids = make([]StrID, n)
		}
	}
	for i := range names {
		var id StrID
		names[i], id = d.sym()
		if ids != nil {
			ids[i] = id
		}
	}
	return names, ids
}
