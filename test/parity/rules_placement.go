package parity

// The placement families: taints, affinities, spreading, ports, images,
// nominations and priorities.

import (
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

var taintKeys = []string{"dedicated", "spot", "maintenance"}

func (g *gen) taints() {
	effects := []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute}
	for _, n := range g.c.Nodes {
		for i := g.between(0, 2); i > 0; i-- {
			addTaint(n, corev1.Taint{Key: pick(g, taintKeys), Value: pick(g, []string{"", "a", "b"}), Effect: pick(g, effects)})
		}
	}
	p := g.c.Pending
	for i := g.between(0, 3); i > 0; i-- {
		t := corev1.Toleration{Key: pick(g, taintKeys)}
		if g.chance(0.5) {
			t.Operator, t.Value = corev1.TolerationOpEqual, pick(g, []string{"", "a", "b"})
		} else {
			t.Operator = corev1.TolerationOpExists
		}
		if g.chance(0.7) {
			t.Effect = pick(g, effects)
		}
		if t.Effect == corev1.TaintEffectNoExecute && g.chance(0.5) {
			s := int64(300)
			t.TolerationSeconds = &s
		}
		p.Spec.Tolerations = append(p.Spec.Tolerations, t)
	}
	if g.chance(0.05) {
		p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Operator: corev1.TolerationOpExists})
	}
}

// addTaint adds t to n unless n has a taint of the same key and effect
// (the API refuses two).
func addTaint(n *corev1.Node, t corev1.Taint) {
	for _, x := range n.Spec.Taints {
		if x.Key == t.Key && x.Effect == t.Effect {
			return
		}
	}
	n.Spec.Taints = append(n.Spec.Taints, t)
}

func (g *gen) nodeNames(k int) []string {
	var out []string
	for _, n := range g.c.Nodes {
		out = append(out, n.Name)
	}
	g.r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	if k < len(out) {
		out = out[:k]
	}
	sort.Strings(out)
	return out
}

// requirement draws a node selector requirement over the nodes' labels.
func (g *gen) requirement() corev1.NodeSelectorRequirement {
	switch g.r.IntN(6) {
	case 0:
		return corev1.NodeSelectorRequirement{Key: labelZone, Operator: corev1.NodeSelectorOpIn, Values: []string{pick(g, zones), pick(g, zones)}}
	case 1:
		return corev1.NodeSelectorRequirement{Key: labelDisk, Operator: corev1.NodeSelectorOpNotIn, Values: []string{pick(g, disks)}}
	case 2:
		return corev1.NodeSelectorRequirement{Key: labelTier, Operator: pick(g, []corev1.NodeSelectorOperator{corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt}), Values: []string{pick(g, tiers)}}
	case 3:
		return corev1.NodeSelectorRequirement{Key: pick(g, []string{labelDisk, "gpu"}), Operator: corev1.NodeSelectorOpExists}
	case 4:
		return corev1.NodeSelectorRequirement{Key: pick(g, []string{labelDisk, "gpu"}), Operator: corev1.NodeSelectorOpDoesNotExist}
	}
	return corev1.NodeSelectorRequirement{Key: labelHostname, Operator: corev1.NodeSelectorOpIn, Values: g.nodeNames(g.between(1, 3))}
}

func (g *gen) nodeSelectorTerm() corev1.NodeSelectorTerm {
	var t corev1.NodeSelectorTerm
	if g.chance(0.4) {
		op := corev1.NodeSelectorOpIn
		if g.chance(0.2) {
			op = corev1.NodeSelectorOpNotIn
		}
		// metadata.name takes exactly one value (API validation).
		name := pick(g, g.nodeNames(len(g.c.Nodes)))
		if g.chance(0.15) {
			name = "node-99" // no such node
		}
		t.MatchFields = []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: op, Values: []string{name}}}
	}
	if len(t.MatchFields) == 0 || g.chance(0.3) {
		for i := g.between(1, 2); i > 0; i-- {
			t.MatchExpressions = append(t.MatchExpressions, g.requirement())
		}
	}
	return t
}

func (g *gen) nodeAffinity() {
	na := &corev1.NodeAffinity{}
	if g.chance(0.7) {
		sel := &corev1.NodeSelector{}
		for i := g.between(1, 2); i > 0; i-- {
			sel.NodeSelectorTerms = append(sel.NodeSelectorTerms, g.nodeSelectorTerm())
		}
		na.RequiredDuringSchedulingIgnoredDuringExecution = sel
	}
	if g.chance(0.7) {
		for i := g.between(1, 3); i > 0; i-- {
			t := corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{g.requirement()}}
			na.PreferredDuringSchedulingIgnoredDuringExecution = append(na.PreferredDuringSchedulingIgnoredDuringExecution,
				corev1.PreferredSchedulingTerm{Weight: int32(g.between(1, 100)), Preference: t})
		}
	}
	g.c.Pending.Spec.Affinity = &corev1.Affinity{NodeAffinity: na}
}

func (g *gen) nodeSelector() {
	sel := map[string]string{}
	switch g.r.IntN(4) {
	case 0:
		sel[labelZone] = pick(g, zones)
	case 1:
		sel[labelDisk] = pick(g, disks)
	case 2:
		sel[labelZone], sel[labelDisk] = pick(g, zones), pick(g, disks)
	default:
		sel[labelHostname] = pick(g, g.nodeNames(1))
	}
	g.c.Pending.Spec.NodeSelector = sel
}

func (g *gen) unschedulable() {
	for _, n := range g.c.Nodes {
		n.Spec.Unschedulable = g.chance(0.5)
	}
	if g.chance(0.3) {
		g.c.Pending.Spec.Tolerations = append(g.c.Pending.Spec.Tolerations, corev1.Toleration{
			Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
	}
}

func (g *gen) hostPort() corev1.ContainerPort {
	p := corev1.ContainerPort{ContainerPort: 8000, HostPort: int32(pick(g, []int{8080, 9090})), Protocol: pick(g, []corev1.Protocol{corev1.ProtocolTCP, corev1.ProtocolUDP})}
	if g.chance(0.3) {
		p.HostIP = pick(g, []string{"10.0.0.1", "0.0.0.0"})
	}
	return p
}

func (g *gen) hostPorts() {
	for _, p := range g.pods() {
		if p.Spec.NodeName == "" || g.chance(0.5) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{g.hostPort()}
		}
		if g.chance(0.2) {
			// On the host's network a container port is a host port: the
			// API defaults hostPort to containerPort.
			p.Spec.HostNetwork = true
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: int32(pick(g, []int{8080, 9090})), Protocol: corev1.ProtocolTCP}}
		}
	}
}

func (g *gen) images() {
	for _, n := range g.c.Nodes {
		for _, im := range images {
			if g.chance(0.4) {
				n.Status.Images = append(n.Status.Images, corev1.ContainerImage{Names: []string{im.name}, SizeBytes: im.size})
			}
		}
	}
	p := g.c.Pending
	for i := range p.Spec.Containers {
		p.Spec.Containers[i].Image = g.imageRef()
	}
	if g.chance(0.5) {
		c := g.container("second")
		c.Image = g.imageRef()
		p.Spec.Containers = append(p.Spec.Containers, c)
	}
	// Image volumes, which ImageLocality scores as images since 1.37.
	for i, n := 0, g.r.IntN(3); i < n; i++ {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "image-" + strconv.Itoa(i),
			VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: g.imageRef()}}})
	}
}

// imageRef names one of the nodes' images as a user might: in full, or
// without the registry, library path or tag.
func (g *gen) imageRef() string {
	name := pick(g, images).name
	if strings.HasPrefix(name, "docker.io/library/") && g.chance(0.5) {
		name = strings.TrimPrefix(name, "docker.io/library/")
	}
	if strings.HasSuffix(name, ":latest") && g.chance(0.5) {
		name = strings.TrimSuffix(name, ":latest")
	}
	return name
}

func (g *gen) podAffinityTerm() corev1.PodAffinityTerm {
	t := corev1.PodAffinityTerm{TopologyKey: pick(g, []string{labelHostname, labelZone})}
	if g.chance(0.7) {
		t.LabelSelector = &metav1.LabelSelector{MatchLabels: map[string]string{labelApp: pick(g, apps)}}
	} else {
		t.LabelSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: labelApp, Operator: metav1.LabelSelectorOpIn, Values: []string{pick(g, apps), pick(g, apps)}}}}
	}
	switch g.r.IntN(5) {
	case 0:
		t.Namespaces = []string{nsOther}
	case 1:
		t.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "b"}}
	case 2:
		t.NamespaceSelector = &metav1.LabelSelector{}
	}
	return t
}

// affinity draws pod affinity and anti-affinity, required and preferred.
func (g *gen) affinity(requiredChance float64) *corev1.Affinity {
	a := &corev1.Affinity{}
	if g.chance(0.5) {
		a.PodAffinity = &corev1.PodAffinity{}
		if g.chance(requiredChance) {
			a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution = []corev1.PodAffinityTerm{g.podAffinityTerm()}
		}
		if g.chance(0.6) {
			a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution = []corev1.WeightedPodAffinityTerm{{Weight: int32(g.between(1, 100)), PodAffinityTerm: g.podAffinityTerm()}}
		}
	}
	if g.chance(0.5) {
		a.PodAntiAffinity = &corev1.PodAntiAffinity{}
		if g.chance(requiredChance) {
			a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution = []corev1.PodAffinityTerm{g.podAffinityTerm()}
		}
		if g.chance(0.6) {
			a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution = []corev1.WeightedPodAffinityTerm{{Weight: int32(g.between(1, 100)), PodAffinityTerm: g.podAffinityTerm()}}
		}
	}
	return a
}

func (g *gen) podAffinity() {
	for _, p := range g.c.Bound {
		if g.chance(0.3) {
			p.Namespace, p.UID = nsOther, types.UID("uid-"+nsOther+"-"+p.Name)
		}
		if g.chance(0.3) {
			p.Spec.Affinity = g.affinity(0.5) // existing pods' terms count too
		}
	}
	g.c.Pending.Spec.Affinity = g.affinity(0.6)
}

func (g *gen) spread() {
	p := g.c.Pending
	for _, n := range g.c.Nodes {
		if g.chance(0.15) {
			delete(n.Labels, labelZone) // nodes without the key
		}
	}
	keys := []string{labelZone, labelHostname}
	g.r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	for i := g.between(1, 2) - 1; i >= 0; i-- {
		c := corev1.TopologySpreadConstraint{
			MaxSkew:           int32(g.between(1, 3)),
			TopologyKey:       keys[i],
			WhenUnsatisfiable: pick(g, []corev1.UnsatisfiableConstraintAction{corev1.DoNotSchedule, corev1.ScheduleAnyway}),
			LabelSelector:     &metav1.LabelSelector{MatchLabels: map[string]string{labelApp: p.Labels[labelApp]}},
		}
		if c.WhenUnsatisfiable == corev1.DoNotSchedule && g.chance(0.3) {
			m := int32(g.between(1, 4))
			c.MinDomains = &m
		}
		if g.chance(0.3) {
			pol := pick(g, []corev1.NodeInclusionPolicy{corev1.NodeInclusionPolicyHonor, corev1.NodeInclusionPolicyIgnore})
			c.NodeAffinityPolicy = &pol
		}
		if g.chance(0.3) {
			pol := pick(g, []corev1.NodeInclusionPolicy{corev1.NodeInclusionPolicyHonor, corev1.NodeInclusionPolicyIgnore})
			c.NodeTaintsPolicy = &pol
		}
		p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, c)
	}
	if g.chance(0.3) {
		g.nodeSelector()
	}
	if g.chance(0.3) {
		addTaint(pick(g, g.c.Nodes), corev1.Taint{Key: "dedicated", Value: "a", Effect: corev1.TaintEffectNoSchedule})
	}
}

// defaultSpread puts the pending pod and some bound pods under a Service
// and ReplicaSets; the pod's controller owner reference, if any, names
// one of them.
func (g *gen) defaultSpread() {
	p := g.c.Pending
	p.Labels = map[string]string{labelApp: "web", labelHash: "abc12"}
	for _, n := range g.c.Nodes {
		if g.chance(0.15) {
			delete(n.Labels, labelZone) // default constraints skip such nodes
		}
	}
	for _, b := range g.c.Bound {
		if g.chance(0.6) {
			b.Labels = map[string]string{labelApp: "web", labelHash: pick(g, []string{"abc12", "old34"})}
		}
	}
	if g.chance(0.6) {
		g.c.Services = append(g.c.Services, &corev1.Service{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: corev1.NamespaceDefault},
			Spec:       corev1.ServiceSpec{Selector: map[string]string{labelApp: "web"}, Ports: []corev1.ServicePort{{Port: 80}}},
		})
	}
	if g.chance(0.2) { // a Service that selects nothing
		g.c.Services = append(g.c.Services, &corev1.Service{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
			ObjectMeta: metav1.ObjectMeta{Name: "headless", Namespace: corev1.NamespaceDefault},
			Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}},
		})
	}
	rs := g.replicaSet("web-abc12", map[string]string{labelApp: "web", labelHash: "abc12"})
	g.c.ReplicaSets = append(g.c.ReplicaSets, rs)
	if g.chance(0.5) { // another ReplicaSet whose selector also matches the pod
		g.c.ReplicaSets = append(g.c.ReplicaSets, g.replicaSet("web-all", map[string]string{labelApp: "web"}))
	}
	owner := ownerRef(rs, true)
	switch g.r.IntN(5) {
	case 0: // controlled by a StatefulSet
		ss := g.statefulSet("web-ss", map[string]string{labelApp: "web"})
		g.c.StatefulSets = append(g.c.StatefulSets, ss)
		owner = metav1.OwnerReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: ss.Name, UID: ss.UID, Controller: ptr.To(true)}
	case 1: // controlled by a ReplicaSet whose selector does not match the pod
		canary := g.replicaSet("web-canary", map[string]string{labelApp: "web", "track": "canary"})
		g.c.ReplicaSets = append(g.c.ReplicaSets, canary)
		owner = ownerRef(canary, true)
		for _, b := range g.c.Bound {
			if b.Labels[labelApp] == "web" && g.chance(0.5) {
				b.Labels["track"] = "canary"
			}
		}
	case 2: // owned but not controlled
		owner = ownerRef(rs, false)
	case 3: // no owner
		owner = metav1.OwnerReference{}
	}
	if owner.Name != "" {
		p.OwnerReferences = []metav1.OwnerReference{owner}
	}
	for _, b := range g.c.Bound {
		if b.Labels[labelHash] == "abc12" {
			b.OwnerReferences = []metav1.OwnerReference{ownerRef(rs, true)}
		}
	}
}

func (g *gen) statefulSet(name string, sel map[string]string) *appsv1.StatefulSet {
	tmpl := g.pod("tmpl", corev1.NamespaceDefault)
	return &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: corev1.NamespaceDefault, UID: types.UID("uid-ss-" + name)},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](0),
			Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: sel}, Spec: tmpl.Spec},
		},
	}
}

func (g *gen) replicaSet(name string, sel map[string]string) *appsv1.ReplicaSet {
	zero := int32(0)
	tmpl := g.pod("tmpl", corev1.NamespaceDefault)
	return &appsv1.ReplicaSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ReplicaSet"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: corev1.NamespaceDefault, UID: types.UID("uid-rs-" + name)},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: &zero,
			Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: sel}, Spec: tmpl.Spec},
		},
	}
}

func ownerRef(rs *appsv1.ReplicaSet, controller bool) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: &controller}
}

func (g *gen) nominated() {
	name := pick(g, g.nodeNames(len(g.c.Nodes)))
	if g.chance(0.1) {
		name = "node-99" // gone since
	}
	g.c.Pending.Status.NominatedNodeName = name
	if g.chance(0.3) {
		// NodeAffinity may narrow the nodes at PreFilter (matchFields),
		// leaving the nominated node out.
		g.nodeAffinity()
	}
}

// priority gives bound pods and the pending pod PriorityClasses, so that
// DefaultPreemption has victims to weigh, none, or may not preempt.
func (g *gen) priority() {
	never := corev1.PreemptNever
	classes := []*schedulingv1.PriorityClass{
		priorityClass("low", 10, nil),
		priorityClass("high", 1000, nil),
		priorityClass("high-never", 1000, &never),
	}
	g.c.PriorityClasses = classes
	for _, n := range g.c.Nodes { // fuller nodes: more to weigh
		for j := g.between(0, 2); j > 0; j-- {
			g.c.Bound = append(g.c.Bound, g.boundPod(n.Name))
		}
	}
	for _, p := range g.c.Bound {
		if c := g.r.IntN(3); c < 2 {
			p.Spec.PriorityClassName = classes[c].Name
		}
	}
	switch g.r.IntN(4) {
	case 0:
		g.c.Pending.Spec.PriorityClassName = "high"
	case 1:
		g.c.Pending.Spec.PriorityClassName = "high-never"
	case 2:
		g.c.Pending.Spec.PriorityClassName = "low"
	}
	// Ask for most of the biggest node, so that preemption has to be
	// considered.
	var most int64
	for _, n := range g.c.Nodes {
		most = max(most, n.Status.Allocatable.Cpu().MilliValue())
	}
	raiseRequest(&g.c.Pending.Spec.Containers[0], corev1.ResourceCPU, milli(int(most)*g.between(40, 100)/100))
}

func priorityClass(name string, value int32, policy *corev1.PreemptionPolicy) *schedulingv1.PriorityClass {
	return &schedulingv1.PriorityClass{
		TypeMeta:         metav1.TypeMeta{APIVersion: "scheduling.k8s.io/v1", Kind: "PriorityClass"},
		ObjectMeta:       metav1.ObjectMeta{Name: name},
		Value:            value,
		PreemptionPolicy: policy,
	}
}
