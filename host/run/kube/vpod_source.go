package kube

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/wasmsched/wasmsched/host/engines/vpod"
)

// VPodCRD is the VPod custom resource's group, version and resource
// (deploy/vpod-crd.yaml).
var VPodCRD = schema.GroupVersionResource{Group: "wasmsched.io", Version: "v1alpha1", Resource: "vpods"}

// The VPod custom resource's fields: a duck-typed source with these
// paths, plus spec.statefulSet choosing the scheduler.
const (
	vpodCRDVReplicasPath   = "spec.vreplicas"
	vpodCRDPlacementsPath  = "status.placements"
	vpodCRDStatefulSetPath = "spec.statefulSet"
)

// VPodSource says where a scheduler's vpods come from: a resource read
// through the dynamic client, the dotted path of its vreplica count and
// that of its placements (a list of {podName, vreplicas}, Knative's
// duckv1alpha1.Placement). The VPod custom resource is the source with
// CRD set; a duck-typed one (a KafkaSource: spec.consumers,
// status.placements) belongs whole to the one scheduler that names it.
type VPodSource struct {
	Resource schema.GroupVersionResource
	// VReplicas and Placements are the parsed paths (ParseFieldPath).
	VReplicas, Placements []string
	// CRD marks the VPod custom resource: objects choose their scheduler
	// by spec.statefulSet, and serve also writes status.vreplicas and
	// status.observedGeneration.
	CRD bool
}

// CRDVPodSource is the source of the VPod custom resource.
func CRDVPodSource() VPodSource {
	return VPodSource{Resource: VPodCRD, CRD: true,
		VReplicas: strings.Split(vpodCRDVReplicasPath, "."), Placements: strings.Split(vpodCRDPlacementsPath, ".")}
}

// NewDuckVPodSource checks a duck-typed source's resource and paths.
// Errors say which part is wrong.
func NewDuckVPodSource(gvr schema.GroupVersionResource, vreplicasPath, placementsPath string) (VPodSource, error) {
	if gvr.Version == "" || gvr.Resource == "" {
		return VPodSource{}, fmt.Errorf("vpod source %q: version and resource are required", resourceName(gvr))
	}
	vr, err := ParseFieldPath(vreplicasPath)
	if err != nil {
		return VPodSource{}, fmt.Errorf("vpod source %s: vreplicasPath: %w", resourceName(gvr), err)
	}
	pl, err := ParseFieldPath(placementsPath)
	if err != nil {
		return VPodSource{}, fmt.Errorf("vpod source %s: placementsPath: %w", resourceName(gvr), err)
	}
	if strings.Join(vr, ".") == strings.Join(pl, ".") {
		return VPodSource{}, fmt.Errorf("vpod source %s: vreplicasPath and placementsPath are the same field %q", resourceName(gvr), vreplicasPath)
	}
	return VPodSource{Resource: gvr, VReplicas: vr, Placements: pl}, nil
}

// ParseFieldPath splits a dotted field path ("spec.consumers", or
// ".spec.consumers" kubectl style) into its field names. Only plain map
// keys are supported: no list indexes, no keys holding dots.
func ParseFieldPath(p string) ([]string, error) {
	p = strings.TrimPrefix(strings.TrimSpace(p), ".")
	if p == "" {
		return nil, fmt.Errorf("empty field path")
	}
	parts := strings.Split(p, ".")
	for _, s := range parts {
		switch {
		case s == "":
			return nil, fmt.Errorf("field path %q has an empty field name", p)
		case strings.ContainsAny(s, "[]{}*$ \t"):
			return nil, fmt.Errorf("field path %q: field %q: only plain field names separated by dots are supported", p, s)
		}
	}
	return parts, nil
}

// status reports whether placements live under status, so they are
// written through the status subresource.
func (s VPodSource) status() bool { return s.Placements[0] == "status" }

// String names the source in logs: the resource and its paths.
func (s VPodSource) String() string {
	return fmt.Sprintf("%s (vreplicas %s, placements %s)", resourceName(s.Resource), strings.Join(s.VReplicas, "."), strings.Join(s.Placements, "."))
}

// vpodFrom reads a vpod from an object of this source. A missing
// vreplica count is an error (Knative's KafkaSource webhook defaults a
// missing spec.consumers to 1; serve does not guess), as are a negative
// or non-integer count, a count above vpod.MaxVReplicas, and placements
// that are not a list of {podName: non-empty string, vreplicas: integer
// ≥ 0} naming each pod once, at most vpod.MaxPlacements of them holding
// at most vpod.MaxVReplicas in all. Missing placements mean none.
func (s VPodSource) vpodFrom(obj *unstructured.Unstructured) (vpod.VPod, error) {
	v := vpod.VPod{Key: vpod.Key{Namespace: obj.GetNamespace(), Name: obj.GetName()}, ResourceVersion: obj.GetResourceVersion()}
	raw, found, err := unstructured.NestedFieldNoCopy(obj.Object, s.VReplicas...)
	if err != nil {
		return v, fmt.Errorf("%s: %w", strings.Join(s.VReplicas, "."), err)
	}
	if !found || raw == nil {
		return v, fmt.Errorf("%s is missing", strings.Join(s.VReplicas, "."))
	}
	if v.VReplicas, err = int32Field(raw); err != nil {
		return v, fmt.Errorf("%s: %w", strings.Join(s.VReplicas, "."), err)
	}
	if v.VReplicas > vpod.MaxVReplicas {
		return v, fmt.Errorf("%s: %d exceeds the limit %d", strings.Join(s.VReplicas, "."), v.VReplicas, vpod.MaxVReplicas)
	}
	if v.Placements, err = s.placementsOf(obj); err != nil {
		return v, err
	}
	return v, nil
}

// placementsOf reads the placements list (see vpodFrom).
func (s VPodSource) placementsOf(obj *unstructured.Unstructured) ([]vpod.Placement, error) {
	path := strings.Join(s.Placements, ".")
	raw, found, err := unstructured.NestedFieldNoCopy(obj.Object, s.Placements...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if !found || raw == nil {
		return nil, nil
	}
	list, ok := raw.([]any)
	if !ok {
		return nil, fmt.Errorf("%s: a %T, not a list", path, raw)
	}
	if len(list) > vpod.MaxPlacements {
		return nil, fmt.Errorf("%s: %d placements exceed the limit %d", path, len(list), vpod.MaxPlacements)
	}
	var total int64
	out := make([]vpod.Placement, 0, len(list))
	seen := make(map[string]bool, len(list))
	for i, e := range list {
		m, ok := e.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s[%d]: a %T, not an object", path, i, e)
		}
		name, ok := m["podName"].(string)
		if !ok || name == "" {
			return nil, fmt.Errorf("%s[%d].podName: missing or not a non-empty string", path, i)
		}
		if seen[name] {
			return nil, fmt.Errorf("%s[%d]: pod %s is listed twice", path, i, name)
		}
		seen[name] = true
		n, err := int32Field(m["vreplicas"])
		if err != nil {
			return nil, fmt.Errorf("%s[%d].vreplicas: %w", path, i, err)
		}
		out = append(out, vpod.Placement{PodName: name, VReplicas: n})
		total += int64(n)
	}
	if total > vpod.MaxVReplicas {
		return nil, fmt.Errorf("%s: %d vreplicas in all exceed the limit %d", path, total, vpod.MaxVReplicas)
	}
	return out, nil
}

// int32Field accepts the integer kinds JSON decoding gives (int64, or a
// float64 with no fraction) within 0..MaxInt32.
func int32Field(raw any) (int32, error) {
	var n int64
	switch x := raw.(type) {
	case int64:
		n = x
	case int32:
		n = int64(x)
	case int:
		n = int64(x)
	case float64:
		if x != math.Trunc(x) || math.IsInf(x, 0) || x > math.MaxInt32 || x < math.MinInt32 {
			return 0, fmt.Errorf("%v is not an int32", x)
		}
		n = int64(x)
	case nil:
		return 0, fmt.Errorf("missing")
	default:
		return 0, fmt.Errorf("a %T (%v), not an integer", raw, raw)
	}
	switch {
	case n < 0:
		return 0, fmt.Errorf("%d is negative", n)
	case n > math.MaxInt32:
		return 0, fmt.Errorf("%d is more than an int32 holds", n)
	}
	return int32(n), nil
}

// withPlacements returns a copy of obj with placements written at the
// source's path (the field removed when there are none, as Knative's
// omitempty does). For the VPod custom resource it also sets
// status.vreplicas (their sum, the scale subresource's status) and
// status.observedGeneration.
func (s VPodSource) withPlacements(obj *unstructured.Unstructured, ps []vpod.Placement) (*unstructured.Unstructured, error) {
	out := obj.DeepCopy()
	if len(ps) == 0 {
		unstructured.RemoveNestedField(out.Object, s.Placements...)
	} else {
		list := make([]any, len(ps))
		for i, p := range ps {
			list[i] = map[string]any{"podName": p.PodName, "vreplicas": int64(p.VReplicas)}
		}
		if err := unstructured.SetNestedSlice(out.Object, list, s.Placements...); err != nil {
			return nil, fmt.Errorf("write %s: %w", strings.Join(s.Placements, "."), err)
		}
	}
	if s.CRD {
		if err := unstructured.SetNestedField(out.Object, int64(vpod.TotalVReplicas(ps)), "status", "vreplicas"); err != nil {
			return nil, fmt.Errorf("write status.vreplicas: %w", err)
		}
		if err := unstructured.SetNestedField(out.Object, out.GetGeneration(), "status", "observedGeneration"); err != nil {
			return nil, fmt.Errorf("write status.observedGeneration: %w", err)
		}
	}
	return out, nil
}

// upToDate reports whether obj's written state already is ps (and, for
// the VPod custom resource, its status fields match its generation), so
// no write is needed.
func (s VPodSource) upToDate(obj *unstructured.Unstructured, have, ps []vpod.Placement) bool {
	if !slices.Equal(have, ps) {
		return false
	}
	if !s.CRD {
		return true
	}
	gen, _, _ := unstructured.NestedInt64(obj.Object, "status", "observedGeneration")
	placed, found, _ := unstructured.NestedInt64(obj.Object, "status", "vreplicas")
	return gen == obj.GetGeneration() && found && placed == int64(vpod.TotalVReplicas(ps))
}

// crdStatefulSet reads a VPod's spec.statefulSet as namespace and name;
// a bare name gives an empty namespace (any scheduler's namespace).
func crdStatefulSet(obj *unstructured.Unstructured) (namespace, name string, err error) {
	raw, found, err := unstructured.NestedFieldNoCopy(obj.Object, strings.Split(vpodCRDStatefulSetPath, ".")...)
	if err != nil {
		return "", "", fmt.Errorf("%s: %w", vpodCRDStatefulSetPath, err)
	}
	s, ok := raw.(string)
	if !found || !ok || s == "" {
		return "", "", fmt.Errorf("%s: missing or not a non-empty string", vpodCRDStatefulSetPath)
	}
	ns, n, cut := strings.Cut(s, "/")
	if !cut {
		return "", s, nil
	}
	if ns == "" || n == "" || strings.Contains(n, "/") {
		return "", "", fmt.Errorf("%s: %q is neither name nor namespace/name", vpodCRDStatefulSetPath, s)
	}
	return ns, n, nil
}

// resourceName names a resource in logs and errors the way kubectl
// does, plus its version: "kafkasources.sources.knative.dev/v1beta1",
// "pods/v1" for the core group.
func resourceName(gvr schema.GroupVersionResource) string {
	if gvr.Group == "" {
		return gvr.Resource + "/" + gvr.Version
	}
	return gvr.Resource + "." + gvr.Group + "/" + gvr.Version
}
