package parity

import (
	"fmt"
	"math/rand/v2"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Label keys and values the generator draws from. Few values, so that
// selectors, affinities and spreading often match something.
const (
	labelHostname = "kubernetes.io/hostname"
	labelZone     = "topology.kubernetes.io/zone"
	labelDisk     = "disktype"
	labelTier     = "tier"
	labelApp      = "app"
	labelHash     = "pod-template-hash"
	resourceGPU   = corev1.ResourceName("example.com/gpu")
	nsOther       = "other"
)

var (
	zones  = []string{"zone-a", "zone-b", "zone-c"}
	apps   = []string{"web", "db", "cache"}
	disks  = []string{"ssd", "hdd"}
	tiers  = []string{"1", "2", "3"}
	images = []struct {
		name string
		size int64
	}{
		{"registry.example/big:1.0", 900 << 20},
		{"docker.io/library/nginx:1.25", 180 << 20},
		{"docker.io/library/redis:latest", 120 << 20},
		{"registry.example/mid:2.1", 400 << 20},
		{"registry.example/small:0.1", 30 << 20},
	}
)

// Family is one group of scheduling rules the generator exercises on top
// of a plain cluster (nodes, bound pods and a pending pod with explicit
// cpu and memory requests). Mismatches are reported per family.
type Family struct {
	Name string
	// What, in a few words, for the report and docs/PARITY.md.
	What  string
	apply func(g *gen)
}

// Families are the rule families, in report order. "plain" adds nothing;
// "mixed" applies every other family's rules at random.
var Families = []Family{
	{"plain", "cpu/memory requests only: fit, LeastAllocated, BalancedAllocation", func(*gen) {}},
	{"resources", "extended resources, ephemeral storage, pod count, several containers", (*gen).resources},
	{"limitsonly", "containers with limits and no requests (API defaulting)", (*gen).limitsOnly},
	{"zerorequests", "explicit zero vs missing cpu/memory requests", (*gen).zeroRequests},
	{"initcontainers", "init containers and sidecars (restartPolicy Always)", (*gen).initContainers},
	{"overhead", "spec.overhead", (*gen).overhead},
	{"podlevel", "pod-level resources (spec.resources)", (*gen).podLevel},
	{"resize", "in-place resize: status resources, allocatedResources, PodResizePending", (*gen).resize},
	{"finished", "Succeeded/Failed bound pods", (*gen).finished},
	{"taints", "taints and tolerations: NoSchedule, PreferNoSchedule, NoExecute", (*gen).taints},
	{"nodeaffinity", "required (matchExpressions, matchFields metadata.name) and preferred node affinity", (*gen).nodeAffinity},
	{"nodeselector", "spec.nodeSelector", (*gen).nodeSelector},
	{"unschedulable", "spec.unschedulable nodes", (*gen).unschedulable},
	{"hostports", "host ports", (*gen).hostPorts},
	{"images", "ImageLocality", (*gen).images},
	{"podaffinity", "inter-pod affinity and anti-affinity, required and preferred, both ways", (*gen).podAffinity},
	{"spread", "explicit topology spread constraints", (*gen).spread},
	{"defaultspread", "default spreading: Services and the controlling ReplicaSet", (*gen).defaultSpread},
	{"nominated", "status.nominatedNodeName on the pending pod", (*gen).nominated},
	{"priority", "PriorityClasses: preemption's part of the message, preemptionPolicy Never, whether it preempts", (*gen).priority},
	{"declaredfeatures", "nodes' status.declaredFeatures and pods needing them (NodeDeclaredFeatures)", (*gen).declaredFeatures},
}

// mixed is added here: its rules are the other families', and Families
// cannot refer to itself while it is initialised.
func init() {
	Families = append(Families, Family{"mixed", "all of the above at random", (*gen).mixed})
}

// FamilyNamed returns the family called name.
func FamilyNamed(name string) (Family, bool) {
	for _, f := range Families {
		if f.Name == name {
			return f, true
		}
	}
	return Family{}, false
}

// Generate builds the case of family f for seed: the same seed and family
// always give the same objects.
func Generate(f Family, seed uint64) *Case {
	g := &gen{r: rand.New(rand.NewPCG(seed, seed^0x5bd1e995)), c: &Case{Seed: seed, Family: f.Name}}
	g.base()
	f.apply(g)
	return g.c
}

// gen is the state of one case's generation.
type gen struct {
	r *rand.Rand
	c *Case
}

func (g *gen) chance(p float64) bool { return g.r.Float64() < p }

// between returns an int in [lo, hi].
func (g *gen) between(lo, hi int) int { return lo + g.r.IntN(hi-lo+1) }

func pick[T any](g *gen, xs []T) T { return xs[g.r.IntN(len(xs))] }

func q(s string) resource.Quantity { return resource.MustParse(s) }

func milli(m int) resource.Quantity { return *resource.NewMilliQuantity(int64(m), resource.DecimalSI) }

func mebi(n int) resource.Quantity { return *resource.NewQuantity(int64(n)<<20, resource.BinarySI) }

// cpuReq and memReq draw a request of the sizes bound pods and the
// pending pod have.
func (g *gen) cpuReq() resource.Quantity { return milli(50 * g.between(2, 30)) }
func (g *gen) memReq() resource.Quantity { return mebi(64 * g.between(1, 32)) }

func (g *gen) base() {
	c := g.c
	c.Namespaces = []*corev1.Namespace{
		namespace(corev1.NamespaceDefault, map[string]string{"team": "a"}),
		namespace(nsOther, map[string]string{"team": "b"}),
	}
	n := g.between(2, 8)
	for i := 0; i < n; i++ {
		c.Nodes = append(c.Nodes, g.node(i))
	}
	for _, node := range c.Nodes {
		for j := g.between(0, 3); j > 0; j-- {
			c.Bound = append(c.Bound, g.boundPod(node.Name))
		}
	}
	c.Pending = g.pod("pending", corev1.NamespaceDefault)
}

func namespace(name string, labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
	}
}

func (g *gen) node(i int) *corev1.Node {
	name := fmt.Sprintf("node-%d", i)
	rl := corev1.ResourceList{
		corev1.ResourceCPU:    q(pick(g, []string{"2", "4", "8"})),
		corev1.ResourceMemory: q(pick(g, []string{"4Gi", "8Gi", "16Gi"})),
		corev1.ResourcePods:   q("110"),
	}
	return &corev1.Node{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			labelHostname: name,
			labelZone:     pick(g, zones),
			labelDisk:     pick(g, disks),
			labelTier:     pick(g, tiers),
		}},
		Status: corev1.NodeStatus{Capacity: rl, Allocatable: rl.DeepCopy()},
	}
}

// pod is a pending pod with one container requesting cpu and memory.
func (g *gen) pod(name, ns string) *corev1.Pod {
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: ns, UID: types.UID("uid-" + ns + "-" + name),
			Labels: map[string]string{labelApp: pick(g, apps)},
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{g.container("main")}},
	}
}

func (g *gen) container(name string) corev1.Container {
	return corev1.Container{
		Name:  name,
		Image: "registry.example/app:1",
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: g.cpuReq(), corev1.ResourceMemory: g.memReq(),
		}},
	}
}

// setRequest sets one request of c; another family may have left c
// with none.
func setRequest(c *corev1.Container, name corev1.ResourceName, v resource.Quantity) {
	if c.Resources.Requests == nil {
		c.Resources.Requests = corev1.ResourceList{}
	}
	c.Resources.Requests[name] = v
}

// sortedNames lists rl's resource names in order, so that draws made
// per resource do not depend on map order.
func sortedNames(rl corev1.ResourceList) []corev1.ResourceName {
	out := make([]corev1.ResourceName, 0, len(rl))
	for name := range rl {
		out = append(out, name)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// raiseRequest sets a request of c and raises its limit, if it has one,
// to match: a request may not exceed its limit.
func raiseRequest(c *corev1.Container, name corev1.ResourceName, v resource.Quantity) {
	setRequest(c, name, v)
	if l, ok := c.Resources.Limits[name]; ok && l.Cmp(v) < 0 {
		c.Resources.Limits[name] = v
	}
}

func (g *gen) boundPod(node string) *corev1.Pod {
	p := g.pod(fmt.Sprintf("bound-%d", len(g.c.Bound)), corev1.NamespaceDefault)
	p.Spec.NodeName = node
	p.Status.Phase = corev1.PodRunning
	return p
}

// pods are every pod of the case, the pending one last.
func (g *gen) pods() []*corev1.Pod { return append(append([]*corev1.Pod{}, g.c.Bound...), g.c.Pending) }

// mixed applies each other family with probability 1/4, pod-level
// resources last: they must cover the containers' final requests.
func (g *gen) mixed() {
	podLevel := false
	for _, f := range Families {
		if f.Name == "mixed" || f.Name == "plain" || !g.chance(0.25) {
			continue
		}
		if f.Name == "podlevel" {
			podLevel = true
			continue
		}
		f.apply(g)
	}
	if podLevel {
		g.podLevel()
	}
}
