package parity

import (
	"fmt"
	"math/rand/v2"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Kind is a kind of case beyond one pod in one cycle under the default
// profile: each runs through RunUpstreamCycles and Wasmsched.Cycles and
// compares every cycle's outcome.
type Kind struct {
	Name string
	What string
	gen  func(g *gen)
}

// Kinds are the case kinds besides "single" (Families: one pending pod,
// one cycle, the default profile), in report order.
var Kinds = []Kind{
	{"queue", "several pending pods in queue order: priorities, arrival, scheduling gates, assumed pods of earlier cycles", (*gen).queueCase},
	{"preemption", "DefaultPreemption with victims: the nominated node and the victims, PDBs included", (*gen).preemptionCase},
	{"profiles", "KubeSchedulerConfiguration v1 profiles: scoring strategies, disabled plugins, weights, plugin args", (*gen).profilesCase},
	{"labelkeys", "matchLabelKeys / mismatchLabelKeys in pod (anti-)affinity and matchLabelKeys in topology spread", (*gen).labelKeysCase},
}

// KindNamed returns the kind called name.
func KindNamed(name string) (Kind, bool) {
	for _, k := range Kinds {
		if k.Name == name {
			return k, true
		}
	}
	return Kind{}, false
}

// GenerateKind builds the case of kind k for seed: the same seed and kind
// always give the same objects.
func GenerateKind(k Kind, seed uint64) *Case {
	g := &gen{r: rand.New(rand.NewPCG(seed, seed^0x2545f4914f6cdd1d)), c: &Case{Seed: seed, Family: k.Name}}
	g.base()
	k.gen(g)
	return g.c
}

// created is when the generator's pods were created: pending pods arrive
// a second apart after it, in the order they are written.
var created = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// morePending adds n pending pods after c.Pending, each shaped by one of
// rules (applied with it as the pending pod) and created a second after
// the last.
func (g *gen) morePending(n int, rules []func(*gen)) {
	first := g.c.Pending
	for i := 1; i <= n; i++ {
		p := g.pod(fmt.Sprintf("pending-%d", i), corev1.NamespaceDefault)
		g.c.Pending = p
		pick(g, rules)(g)
		g.c.More = append(g.c.More, p)
	}
	g.c.Pending = first
	first.Spec.Affinity, first.Spec.TopologySpreadConstraints = nil, nil
	pick(g, rules)(g)
	for i, p := range g.c.pendings() {
		p.CreationTimestamp = metav1.NewTime(created.Add(time.Duration(i+1) * time.Second))
	}
}

// queueCase: three to seven pending pods of different priorities (no
// preemption: every class says Never, so that each cycle's outcome does
// not wait on another's victims), some gated, with requests that fill
// the cluster part way, each with placement rules of its own; later pods
// see the earlier ones as assumed.
func (g *gen) queueCase() {
	never := corev1.PreemptNever
	g.c.PriorityClasses = []*schedulingv1.PriorityClass{
		priorityClass("low", 100, &never),
		priorityClass("mid", 1000, &never),
		priorityClass("high", 10000, &never),
	}
	rules := []func(*gen){
		func(*gen) {}, (*gen).pendingAffinity, (*gen).spread, (*gen).taints, (*gen).nodeAffinity,
		(*gen).pendingHostPort, (*gen).nodeSelector,
	}
	g.morePending(g.between(2, 6), rules)
	var most int64
	for _, n := range g.c.Nodes {
		most = max(most, n.Status.Allocatable.Cpu().MilliValue())
	}
	for _, p := range g.c.pendings() {
		if c := g.r.IntN(4); c < 3 {
			p.Spec.PriorityClassName = g.c.PriorityClasses[c].Name
		}
		if g.chance(0.2) {
			p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/wait"}}
		}
		if g.chance(0.35) {
			raiseRequest(&p.Spec.Containers[0], corev1.ResourceCPU, milli(int(most)*g.between(30, 90)/100))
		}
	}
}

// pendingAffinity gives the pending pod pod (anti-)affinity, without
// touching the bound pods (podAffinity does both).
func (g *gen) pendingAffinity() { g.c.Pending.Spec.Affinity = g.affinity(0.6) }

// pendingHostPort gives the pending pod a host port.
func (g *gen) pendingHostPort() {
	g.c.Pending.Spec.Containers[0].Ports = []corev1.ContainerPort{g.hostPort()}
}

// preemptionCase: full nodes of low- and mid-priority pods that have
// started at different times, PodDisruptionBudgets over some of them,
// and a pending pod that needs most of the biggest node, usually of high
// priority.
func (g *gen) preemptionCase() {
	never := corev1.PreemptNever
	g.c.PriorityClasses = []*schedulingv1.PriorityClass{
		priorityClass("low", 10, nil),
		priorityClass("mid", 100, nil),
		priorityClass("high", 1000, nil),
		priorityClass("high-never", 1000, &never),
	}
	for _, n := range g.c.Nodes {
		for j := g.between(1, 3); j > 0; j-- {
			g.c.Bound = append(g.c.Bound, g.boundPod(n.Name))
		}
	}
	uniform := g.chance(0.3)
	g.startTimes()
	for _, p := range g.c.Bound {
		if c := g.r.IntN(4); c < 3 {
			p.Spec.PriorityClassName = g.c.PriorityClasses[c%2].Name
		}
		if g.chance(0.2) {
			raiseRequest(&p.Spec.Containers[0], corev1.ResourceCPU, milli(50*g.between(10, 30)))
		}
	}
	if uniform {
		g.uniformNodes()
	}
	for i := g.between(0, 2); i > 0; i-- {
		app := pick(g, apps)
		pdb := &policyv1.PodDisruptionBudget{
			TypeMeta:   metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"},
			ObjectMeta: metav1.ObjectMeta{Name: "pdb-" + app, Namespace: corev1.NamespaceDefault},
			Spec: policyv1.PodDisruptionBudgetSpec{
				MinAvailable: ptrTo(intstr.FromInt32(1)),
				Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{labelApp: app}},
			},
			Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: int32(g.between(0, 1))},
		}
		dup := false
		for _, o := range g.c.PDBs {
			dup = dup || o.Name == pdb.Name
		}
		if !dup {
			g.c.PDBs = append(g.c.PDBs, pdb)
		}
	}
	switch g.r.IntN(10) {
	case 0:
		g.c.Pending.Spec.PriorityClassName = "high-never"
	case 1:
		g.c.Pending.Spec.PriorityClassName = "mid"
	default:
		g.c.Pending.Spec.PriorityClassName = "high"
	}
	switch g.r.IntN(6) {
	case 0:
		g.taints()
	case 1:
		g.nodeAffinity()
	case 2:
		g.pendingHostPort()
		for _, p := range g.c.Bound {
			if g.chance(0.3) {
				p.Spec.Containers[0].Ports = []corev1.ContainerPort{g.hostPort()}
			}
		}
	case 3:
		g.c.Pending.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{g.podAffinityTerm()}}}
	}
	var most int64
	for _, n := range g.c.Nodes {
		most = max(most, n.Status.Allocatable.Cpu().MilliValue())
	}
	raiseRequest(&g.c.Pending.Spec.Containers[0], corev1.ResourceCPU, milli(int(most)*g.between(50, 100)/100))
	if g.chance(0.3) {
		var mem int64
		for _, n := range g.c.Nodes {
			mem = max(mem, n.Status.Allocatable.Memory().Value()>>20)
		}
		raiseRequest(&g.c.Pending.Spec.Containers[0], corev1.ResourceMemory, mebi(int(mem)*g.between(40, 90)/100))
	}
}

func ptrTo[T any](v T) *T { return &v }

// labelKeysCase: pods that carry a version label; affinity terms with
// matchLabelKeys / mismatchLabelKeys on it (and on app), spread
// constraints with matchLabelKeys; one to three pending pods, so that
// later pods see earlier ones.
func (g *gen) labelKeysCase() {
	versions := []string{"v1", "v2"}
	for _, p := range g.pods() {
		if g.chance(0.8) {
			p.Labels[labelVersion] = pick(g, versions)
		}
	}
	keys := func() ([]string, []string) {
		var match, mismatch []string
		switch g.r.IntN(5) {
		case 0:
			match = []string{labelVersion}
		case 1:
			mismatch = []string{labelVersion}
		case 2:
			match, mismatch = []string{labelVersion}, []string{labelTier}
		case 3:
			mismatch = []string{labelVersion, labelTier}
		default:
			match = []string{labelVersion, labelTier}
		}
		return match, mismatch
	}
	term := func() corev1.PodAffinityTerm {
		t := corev1.PodAffinityTerm{TopologyKey: pick(g, []string{labelHostname, labelZone}),
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{labelApp: pick(g, apps)}}}
		t.MatchLabelKeys, t.MismatchLabelKeys = keys()
		return t
	}
	affinity := func(p *corev1.Pod) {
		a := &corev1.Affinity{}
		if g.chance(0.5) {
			a.PodAffinity = &corev1.PodAffinity{}
			if g.chance(0.5) {
				a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution = []corev1.PodAffinityTerm{term()}
			} else {
				a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution = []corev1.WeightedPodAffinityTerm{{Weight: int32(g.between(1, 100)), PodAffinityTerm: term()}}
			}
		}
		if g.chance(0.6) {
			a.PodAntiAffinity = &corev1.PodAntiAffinity{}
			if g.chance(0.5) {
				a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution = []corev1.PodAffinityTerm{term()}
			} else {
				a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution = []corev1.WeightedPodAffinityTerm{{Weight: int32(g.between(1, 100)), PodAffinityTerm: term()}}
			}
		}
		p.Spec.Affinity = a
	}
	spread := func(p *corev1.Pod) {
		c := corev1.TopologySpreadConstraint{
			MaxSkew:           int32(g.between(1, 2)),
			TopologyKey:       pick(g, []string{labelHostname, labelZone}),
			WhenUnsatisfiable: pick(g, []corev1.UnsatisfiableConstraintAction{corev1.DoNotSchedule, corev1.ScheduleAnyway}),
			LabelSelector:     &metav1.LabelSelector{MatchLabels: map[string]string{labelApp: p.Labels[labelApp]}},
			MatchLabelKeys:    []string{labelVersion},
		}
		if g.chance(0.3) {
			c.MatchLabelKeys = append(c.MatchLabelKeys, labelTier)
		}
		p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, c)
	}
	for _, p := range g.c.Bound {
		if g.chance(0.3) {
			p.Labels[labelTier] = pick(g, tiers)
		}
		if g.chance(0.25) {
			affinity(p)
		}
	}
	n := g.between(0, 2)
	for i := 1; i <= n; i++ {
		g.c.More = append(g.c.More, g.pod(fmt.Sprintf("pending-%d", i), corev1.NamespaceDefault))
	}
	for i, p := range g.c.pendings() {
		if g.chance(0.5) {
			p.Labels[labelVersion] = pick(g, versions)
		}
		if g.chance(0.3) {
			p.Labels[labelTier] = pick(g, tiers)
		}
		switch g.r.IntN(3) {
		case 0:
			affinity(p)
		case 1:
			spread(p)
		default:
			affinity(p)
			spread(p)
		}
		p.CreationTimestamp = metav1.NewTime(created.Add(time.Duration(i+1) * time.Second))
	}
}

// labelVersion is the label matchLabelKeys name most.
const labelVersion = "version"

// uniformNodes makes every node a copy of the first, its pods included
// (as replicas of the same workloads would be): preemption then finds
// equally good candidates on several nodes.
func (g *gen) uniformNodes() {
	first := g.c.Nodes[0]
	var tmpl []*corev1.Pod
	for _, p := range g.c.Bound {
		if p.Spec.NodeName == first.Name {
			tmpl = append(tmpl, p)
		}
	}
	g.c.Bound = nil
	for _, n := range g.c.Nodes {
		n.Status = *first.Status.DeepCopy()
		for _, t := range tmpl {
			p := t.DeepCopy()
			p.Name = fmt.Sprintf("bound-%d", len(g.c.Bound))
			p.UID = types.UID("uid-" + p.Namespace + "-" + p.Name)
			p.Spec.NodeName = n.Name
			g.c.Bound = append(g.c.Bound, p)
		}
	}
}

// startTimes gives every bound pod its own start time on its node:
// among victims of equal priority and start, and for pods that have not
// started (upstream reads the clock for them), which one preemption
// spares depends on the order of the node's pods, which is arbitrary.
// The same times recur on other nodes, so that nodes can tie.
func (g *gen) startTimes() {
	onNode := map[string]int{}
	for _, p := range g.c.Bound {
		onNode[p.Spec.NodeName]++
	}
	starts := map[string][]int{}
	for _, n := range g.c.Nodes { // in order: draws must not follow map order
		starts[n.Name] = g.r.Perm(onNode[n.Name])
	}
	for _, p := range g.c.Bound {
		st := starts[p.Spec.NodeName]
		t := metav1.NewTime(created.Add(time.Duration(st[0]) * time.Minute))
		starts[p.Spec.NodeName] = st[1:]
		p.Status.StartTime = &t
	}
}
