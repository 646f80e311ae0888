package abi

// AnnotationAllowDisruptionByPriority is the PriorityClass annotation that
// carries KEP-3280's allowDisruptionByPriorityGreaterThanOrEqual, a field
// upstream never merged: the PodDisruptionBudgets of pods of that class
// may only be violated by a preemptor whose priority is at least the
// annotation's value. The host copies it onto pods by priorityClassName
// (Pod.DisruptionGuard) and refuses values above system-cluster-critical.
const AnnotationAllowDisruptionByPriority = "scheduling.wasmsched.io/allow-disruption-by-priority-greater-than-or-equal"

// SystemClusterCritical is the priority of the system-cluster-critical
// class, the highest value AnnotationAllowDisruptionByPriority may take
// (so core components can always preempt).
const SystemClusterCritical int32 = 2000000000

// PDB is the part of a PodDisruptionBudget that preemption reads: which
// pods it covers and how many more of them may be disrupted now. The host
// keeps the table and sends it to preemption policies, so they never need
// API access.
type PDB struct {
	Namespace string
	Name      string
	// Selector is spec.selector. Preemption treats a nil or empty selector
	// as matching no pod, as kube-scheduler does.
	Selector *LabelSelector
	// DisruptionsAllowed is status.disruptionsAllowed.
	DisruptionsAllowed int32
	// DisruptedPods are the names in status.disruptedPods, sorted: pods
	// already being disrupted, which do not count against the budget again.
	DisruptedPods []string
}

// PDB appends a PodDisruptionBudget.
func (e *Encoder) PDB(p *PDB) {
	e.String(p.Namespace)
	e.String(p.Name)
	e.LabelSelector(p.Selector)
	e.Varint(int64(p.DisruptionsAllowed))
	e.Strings(p.DisruptedPods)
}

// PDB reads a PodDisruptionBudget into p, overwriting every field.
func (d *Decoder) PDB(p *PDB) {
	p.Namespace = d.String()
	p.Name = d.String()
	p.Selector = d.LabelSelector()
	p.DisruptionsAllowed = d.Int32()
	p.DisruptedPods = d.Strings()
}
