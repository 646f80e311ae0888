package sim

// Workload controllers, done once: a simulation has no controller
// manager, so a Deployment, ReplicaSet or StatefulSet in the input is
// turned into the pods its controller would create, at the moment it is
// read. The pods look like the real ones where the scheduler can tell —
// labels, owner references, namespace, the whole template spec — and
// their names are deterministic, so the same input gives the same report.

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"reflect"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	ktypes "k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
)

// nameAlphabet is the API server's generateName alphabet (no vowels, no
// look-alike digits), so generated names look like a cluster's.
const nameAlphabet = "bcdfghjklmnpqrstvwxz2456789"

// maxGeneratedNameBase is how much of a generateName prefix the API
// server keeps before the 5 random characters (63 - 5).
const maxGeneratedNameBase = 58

// MaxWorkloadReplicas bounds spec.replicas: a typo such as 1000000000
// would otherwise exhaust memory expanding pods instead of failing.
const MaxWorkloadReplicas = 100000

// AddDeployment records d and the ReplicaSet the Deployment controller
// would create for it, and appends that ReplicaSet's pods to o.Pods. The
// ReplicaSet is named <deployment>-<pod-template-hash>, the hash being a
// stable function of the pod template, and adds the pod-template-hash
// label to its selector and pods, as the controller does, so that
// topology spreading with matchLabelKeys: [pod-template-hash] works.
// Errors name the offending field; Read adds the file and document.
func (o *Objects) AddDeployment(d *appsv1.Deployment) error {
	d = d.DeepCopy()
	defaultMeta(&d.ObjectMeta, "Deployment")
	for _, x := range o.Deployments {
		if x.Namespace == d.Namespace && x.Name == d.Name {
			return fmt.Errorf("metadata.name: Deployment %s/%s is already defined", d.Namespace, d.Name)
		}
	}
	if err := validateWorkload(d.Spec.Replicas, d.Spec.Selector, &d.Spec.Template); err != nil {
		return err
	}
	hash := templateHash(&d.Spec.Template)
	rs := &appsv1.ReplicaSet{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ReplicaSet"},
		ObjectMeta: metav1.ObjectMeta{
			Name:            d.Name + "-" + hash,
			Namespace:       d.Namespace,
			Labels:          withLabels(d.Spec.Template.Labels, appsv1.DefaultDeploymentUniqueLabelKey, hash),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))},
		},
		Spec: appsv1.ReplicaSetSpec{
			Replicas:        replicasOf(d.Spec.Replicas),
			MinReadySeconds: d.Spec.MinReadySeconds,
			Selector:        d.Spec.Selector.DeepCopy(),
			Template:        *d.Spec.Template.DeepCopy(),
		},
	}
	if rs.Spec.Selector.MatchLabels == nil {
		rs.Spec.Selector.MatchLabels = map[string]string{}
	}
	rs.Spec.Selector.MatchLabels[appsv1.DefaultDeploymentUniqueLabelKey] = hash
	rs.Spec.Template.Labels = withLabels(rs.Spec.Template.Labels, appsv1.DefaultDeploymentUniqueLabelKey, hash)
	if err := o.AddReplicaSet(rs); err != nil {
		return err // only a clash with a ReplicaSet of the same name: d's spec is valid
	}
	o.Deployments = append(o.Deployments, d)
	return nil
}

// AddReplicaSet records rs and appends the spec.replicas (default 1) pods
// the ReplicaSet controller would create: named <rs>-<5 characters>, the
// characters derived from the name and the pod's index instead of drawn
// at random so that runs are reproducible; template labels, annotations
// and spec; and rs as controlling owner.
func (o *Objects) AddReplicaSet(rs *appsv1.ReplicaSet) error {
	rs = rs.DeepCopy()
	defaultMeta(&rs.ObjectMeta, "ReplicaSet")
	for _, x := range o.ReplicaSets {
		if x.Namespace == rs.Namespace && x.Name == rs.Name {
			return fmt.Errorf("metadata.name: ReplicaSet %s/%s is already defined", rs.Namespace, rs.Name)
		}
	}
	if err := validateWorkload(rs.Spec.Replicas, rs.Spec.Selector, &rs.Spec.Template); err != nil {
		return err
	}
	owner := *metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))
	base := rs.Name + "-"
	if len(base) > maxGeneratedNameBase {
		base = base[:maxGeneratedNameBase]
	}
	taken := map[string]bool{}
	n := int(*replicasOf(rs.Spec.Replicas))
	for i := 0; i < n; i++ {
		var name string
		for attempt := 0; ; attempt++ {
			name = base + nameSuffix(rs.Name, i, attempt)
			if !taken[name] {
				break
			}
		}
		taken[name] = true
		p := podFromTemplate(&rs.Spec.Template, rs.Namespace, name, owner)
		p.GenerateName = base
		o.Pods = append(o.Pods, p)
	}
	o.ReplicaSets = append(o.ReplicaSets, rs)
	return nil
}

// AddStatefulSet records sts and appends its pods <sts>-<ordinal>, the
// ordinals counting from spec.ordinals.start (default 0). Besides the
// template labels each pod carries the labels the StatefulSet controller
// adds: statefulset.kubernetes.io/pod-name, apps.kubernetes.io/pod-index
// and controller-revision-hash (<sts>-<template hash>), which spreading
// constraints and affinities commonly select on. All pods are created at
// once, as with podManagementPolicy Parallel: with no kubelet, none would
// ever become Ready for OrderedReady to go on. volumeClaimTemplates are
// not turned into volumes; the simulation has no PersistentVolumes.
func (o *Objects) AddStatefulSet(sts *appsv1.StatefulSet) error {
	sts = sts.DeepCopy()
	defaultMeta(&sts.ObjectMeta, "StatefulSet")
	for _, x := range o.StatefulSets {
		if x.Namespace == sts.Namespace && x.Name == sts.Name {
			return fmt.Errorf("metadata.name: StatefulSet %s/%s is already defined", sts.Namespace, sts.Name)
		}
	}
	if err := validateWorkload(sts.Spec.Replicas, sts.Spec.Selector, &sts.Spec.Template); err != nil {
		return err
	}
	start := int32(0)
	if sts.Spec.Ordinals != nil {
		if start = sts.Spec.Ordinals.Start; start < 0 {
			return fmt.Errorf("spec.ordinals.start: must be greater than or equal to 0, got %d", start)
		}
	}
	n := *replicasOf(sts.Spec.Replicas)
	for i := int32(0); i < n; i++ {
		o.Pods = append(o.Pods, statefulSetPod(sts, start+i))
	}
	o.StatefulSets = append(o.StatefulSets, sts)
	return nil
}

// statefulSetPod is the pod the StatefulSet controller creates for an
// ordinal: <name>-<ordinal>, from the template, with the pod-name, index
// and revision labels.
func statefulSetPod(sts *appsv1.StatefulSet, ordinal int32) *corev1.Pod {
	owner := *metav1.NewControllerRef(sts, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))
	revision := sts.Name + "-" + templateHash(&sts.Spec.Template)
	idx := strconv.Itoa(int(ordinal))
	name := sts.Name + "-" + idx
	p := podFromTemplate(&sts.Spec.Template, sts.Namespace, name, owner)
	p.Labels = withLabels(p.Labels, appsv1.StatefulSetPodNameLabel, name)
	p.Labels[appsv1.PodIndexLabel] = idx
	p.Labels[appsv1.ControllerRevisionHashLabelKey] = revision
	return p
}

// validateWorkload refuses what the API server would refuse in a
// workload's spec and what would make its pods meaningless: the
// controllers only own pods their selector matches, so a selector that
// misses the template would, in a cluster, create pods forever.
func validateWorkload(replicas *int32, selector *metav1.LabelSelector, tmpl *corev1.PodTemplateSpec) error {
	if replicas != nil && *replicas < 0 {
		return fmt.Errorf("spec.replicas: must be greater than or equal to 0, got %d", *replicas)
	}
	if replicas != nil && *replicas > MaxWorkloadReplicas {
		return fmt.Errorf("spec.replicas: %d is more than the simulation's limit of %d", *replicas, MaxWorkloadReplicas)
	}
	if reflect.DeepEqual(*tmpl, corev1.PodTemplateSpec{}) {
		return errors.New("spec.template: missing")
	}
	if selector == nil {
		return errors.New("spec.selector: missing (required in apps/v1)")
	}
	if len(selector.MatchLabels) == 0 && len(selector.MatchExpressions) == 0 {
		return errors.New("spec.selector: empty selector is invalid")
	}
	sel, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		return fmt.Errorf("spec.selector: %w", err)
	}
	if !sel.Matches(labels.Set(tmpl.Labels)) {
		return errors.New("spec.selector: does not match spec.template.metadata.labels")
	}
	if len(tmpl.Spec.Containers) == 0 {
		return errors.New("spec.template.spec.containers: at least one container is required")
	}
	return nil
}

// defaultMeta gives a workload the namespace and UID the API server would,
// so its pods' owner references and namespace are complete.
func defaultMeta(m *metav1.ObjectMeta, kind string) {
	if m.Namespace == "" {
		m.Namespace = corev1.NamespaceDefault
	}
	if m.UID == "" {
		m.UID = ktypes.UID("uid-" + strings.ToLower(kind) + "-" + m.Namespace + "/" + m.Name)
	}
}

// podFromTemplate builds a pod as the controllers' GetPodFromTemplate
// does: template labels, annotations, finalizers and spec, in the owner's
// namespace, controlled by owner.
func podFromTemplate(tmpl *corev1.PodTemplateSpec, namespace, name string, owner metav1.OwnerReference) *corev1.Pod {
	t := tmpl.DeepCopy()
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       namespace,
			Labels:          t.Labels,
			Annotations:     t.Annotations,
			Finalizers:      t.Finalizers,
			OwnerReferences: []metav1.OwnerReference{owner},
		},
		Spec: t.Spec,
	}
}

// replicasOf applies the apps/v1 default of 1 replica.
func replicasOf(r *int32) *int32 {
	n := int32(1)
	if r != nil {
		n = *r
	}
	return &n
}

// withLabels returns a copy of ls with key=value added.
func withLabels(ls map[string]string, key, value string) map[string]string {
	out := make(map[string]string, len(ls)+1)
	for k, v := range ls {
		out[k] = v
	}
	out[key] = value
	return out
}

// templateHash is a short, stable name-safe digest of a pod template, in
// the Deployment controller's format (FNV-32a, its decimal digits mapped
// onto the generateName alphabet: 8-10 characters). It is not the same
// value a cluster would compute — that one hashes the template after the
// API server's defaulting — but equal templates always give equal hashes
// and a changed template almost always a different one.
func templateHash(tmpl *corev1.PodTemplateSpec) string {
	b, err := json.Marshal(tmpl)
	if err != nil {
		// A decoded PodTemplateSpec always marshals.
		panic(fmt.Sprintf("marshal pod template: %v", err))
	}
	h := fnv.New32a()
	h.Write(b)
	return utilrand.SafeEncodeString(strconv.FormatUint(uint64(h.Sum32()), 10))
}

// nameSuffix stands in for generateName's 5 random characters: derived
// from the ReplicaSet's name and the pod's index (and a retry count, for
// the rare clash between two indexes), so reruns name pods identically.
func nameSuffix(rsName string, index, attempt int) string {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s/%d/%d", rsName, index, attempt)
	v := h.Sum64()
	var b [5]byte
	for i := range b {
		b[i] = nameAlphabet[v%uint64(len(nameAlphabet))]
		v /= uint64(len(nameAlphabet))
	}
	return string(b[:])
}
