package kube

import (
	"fmt"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/wasmsched/wasmsched/host/engines/vpod"
)

// vpodUnschedulableAnnotation marks an adapter pod that takes no
// vreplicas (Knative's scheduler.PodAnnotationKey).
const vpodUnschedulableAnnotation = "eventing.knative.dev/unschedulable"

// vpodZoneLabel is the node label vpod zone spreading reads.
const vpodZoneLabel = "topology.kubernetes.io/zone"

// watchAdapters requeues c's vpods when the adapter pods (named
// <statefulSet>-<ordinal>) or the StatefulSet change in a way the engine
// sees, and drops the cached scale when spec.replicas changes. seen, if
// not nil, is called after each pod or StatefulSet event is handled.
func watchAdapters(f informers.SharedInformerFactory, s vpod.Settings, c *vpodController, seen func()) error {
	isAdapter := func(obj any) bool {
		p, ok := unwrap(obj).(*corev1.Pod)
		return ok && adapterOrdinal(p.Name, s.StatefulSet) >= 0
	}
	pods := cache.FilteringResourceEventHandler{FilterFunc: isAdapter, Handler: changeHandler(podChanged, c.enqueueAll)}
	if _, err := f.Core().V1().Pods().Informer().AddEventHandler(notifying(pods, seen)); err != nil {
		return fmt.Errorf("pod informer: %w", err)
	}
	isSTS := func(obj any) bool {
		x, ok := unwrap(obj).(*appsv1.StatefulSet)
		return ok && x.Name == s.StatefulSet
	}
	onSTS := func() {
		c.cluster.Reset()
		c.enqueueAll()
	}
	sts := cache.FilteringResourceEventHandler{FilterFunc: isSTS, Handler: changeHandler(statefulSetChanged, onSTS)}
	if _, err := f.Apps().V1().StatefulSets().Informer().AddEventHandler(notifying(sts, seen)); err != nil {
		return fmt.Errorf("statefulset informer: %w", err)
	}
	return nil
}

// changeHandler calls do on every add and delete, and on updates that
// changed reports.
func changeHandler(changed func(old, cur any) bool, do func()) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { do() },
		UpdateFunc: func(old, cur any) {
			if changed(old, cur) {
				do()
			}
		},
		DeleteFunc: func(any) { do() },
	}
}

// notifying is h, followed on every event (also those h filters out or
// finds unchanged) by a call of after; h itself when after is nil.
func notifying(h cache.ResourceEventHandler, after func()) cache.ResourceEventHandler {
	if after == nil {
		return h
	}
	return notifyingHandler{h, after}
}

type notifyingHandler struct {
	h     cache.ResourceEventHandler
	after func()
}

func (n notifyingHandler) OnAdd(obj any, isInInitialList bool) {
	n.h.OnAdd(obj, isInInitialList)
	n.after()
}

func (n notifyingHandler) OnUpdate(old, cur any) {
	n.h.OnUpdate(old, cur)
	n.after()
}

func (n notifyingHandler) OnDelete(obj any) {
	n.h.OnDelete(obj)
	n.after()
}

// podChanged: what the engine reads of an adapter pod (its node, the
// unschedulable annotation, its deletion) changed.
func podChanged(old, cur any) bool {
	a, ok1 := old.(*corev1.Pod)
	b, ok2 := cur.(*corev1.Pod)
	if !ok1 || !ok2 {
		return true
	}
	return a.Spec.NodeName != b.Spec.NodeName || a.Annotations[vpodUnschedulableAnnotation] != b.Annotations[vpodUnschedulableAnnotation] ||
		(a.DeletionTimestamp == nil) != (b.DeletionTimestamp == nil)
}

// nodeChanged: cordoning, taints or the zone label changed.
func nodeChanged(old, cur any) bool {
	a, ok1 := old.(*corev1.Node)
	b, ok2 := cur.(*corev1.Node)
	if !ok1 || !ok2 {
		return true
	}
	if a.Spec.Unschedulable != b.Spec.Unschedulable || a.Labels[vpodZoneLabel] != b.Labels[vpodZoneLabel] || len(a.Spec.Taints) != len(b.Spec.Taints) {
		return true
	}
	for i := range a.Spec.Taints {
		if a.Spec.Taints[i].Key != b.Spec.Taints[i].Key || a.Spec.Taints[i].Effect != b.Spec.Taints[i].Effect {
			return true
		}
	}
	return false
}

// statefulSetChanged: spec.replicas changed (status updates do not
// matter).
func statefulSetChanged(old, cur any) bool {
	a, ok1 := old.(*appsv1.StatefulSet)
	b, ok2 := cur.(*appsv1.StatefulSet)
	if !ok1 || !ok2 {
		return true
	}
	return replicasOf(a) != replicasOf(b)
}

func replicasOf(s *appsv1.StatefulSet) int32 {
	if s.Spec.Replicas == nil {
		return 1
	}
	return *s.Spec.Replicas
}

// adapterOrdinal is the ordinal of a pod named <statefulSet>-<n>, or -1.
func adapterOrdinal(pod, statefulSet string) int {
	rest, ok := strings.CutPrefix(pod, statefulSet+"-")
	if !ok || rest == "" || rest[0] == '+' || rest[0] == '-' || len(rest) > 1 && rest[0] == '0' {
		return -1
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 0 {
		return -1
	}
	return n
}
