package kube

import (
	"fmt"
	"strings"

	"github.com/hashicorp/go-hclog"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// vpodRouter sends each VPod object to the scheduler its spec.statefulSet
// names: "namespace/name" exactly; a bare name to the scheduler whose
// StatefulSet has that name, or, if several do, to the one in the VPod's
// namespace.
type vpodRouter struct {
	log        hclog.Logger
	schedulers []vpodRoute
}

type vpodRoute struct{ scheduler, namespace, statefulSet string }

// add registers a scheduler taking VPods and returns its filter.
func (r *vpodRouter) add(scheduler, namespace, statefulSet string) func(*unstructured.Unstructured) bool {
	r.schedulers = append(r.schedulers, vpodRoute{scheduler, namespace, statefulSet})
	return func(u *unstructured.Unstructured) bool {
		s, err := r.route(u)
		return err == nil && s == scheduler
	}
}

// first is the scheduler that logs the VPods no scheduler takes (each
// scheduler taking VPods has an informer of them), "" for none.
func (r *vpodRouter) first() string {
	if len(r.schedulers) == 0 {
		return ""
	}
	return r.schedulers[0].scheduler
}

// route names the scheduler of a VPod, or says why there is none.
func (r *vpodRouter) route(u *unstructured.Unstructured) (string, error) {
	ns, name, err := crdStatefulSet(u)
	if err != nil {
		return "", err
	}
	var match []vpodRoute
	for _, s := range r.schedulers {
		if s.statefulSet == name && (ns == "" || s.namespace == ns) {
			match = append(match, s)
		}
	}
	if len(match) > 1 {
		for _, s := range match {
			if s.namespace == u.GetNamespace() {
				return s.scheduler, nil
			}
		}
		return "", fmt.Errorf("statefulset %q is ambiguous: write namespace/name", name)
	}
	if len(match) == 0 {
		return "", fmt.Errorf("no vpod scheduler taking VPods is configured for statefulset %q", strings.TrimPrefix(ns+"/"+name, "/"))
	}
	return match[0].scheduler, nil
}

// logIgnored logs a VPod version that no scheduler takes.
func (r *vpodRouter) logIgnored(u *unstructured.Unstructured) {
	if _, err := r.route(u); err != nil {
		r.log.Warn("VPod ignored", "vpod", u.GetNamespace()+"/"+u.GetName(), "resource_version", u.GetResourceVersion(), "reason", err)
	}
}
