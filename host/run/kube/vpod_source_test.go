package kube

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/wasmsched/wasmsched/host/engines/vpod"
)

func TestParseFieldPath(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		err  string
	}{
		{in: "spec.consumers", want: []string{"spec", "consumers"}},
		{in: ".status.placements", want: []string{"status", "placements"}},
		{in: " spec.vreplicas ", want: []string{"spec", "vreplicas"}},
		{in: "replicas", want: []string{"replicas"}},
		{in: "", err: "empty field path"},
		{in: ".", err: "empty field path"},
		{in: "spec..consumers", err: "empty field name"},
		{in: "spec.consumers.", err: "empty field name"},
		{in: "status.placements[0]", err: "only plain field names"},
		{in: "{.spec.consumers}", err: "only plain field names"},
		{in: "spec.*", err: "only plain field names"},
	} {
		got, err := ParseFieldPath(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseFieldPath(%q) = %v, %v; want an error with %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseFieldPath(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestNewDuckVPodSourceChecks(t *testing.T) {
	gvr := schema.GroupVersionResource{Group: "sources.knative.dev", Version: "v1beta1", Resource: "kafkasources"}
	s, err := NewDuckVPodSource(gvr, "spec.consumers", "status.placements")
	if err != nil || s.CRD || !s.status() || s.Resource != gvr {
		t.Fatalf("KafkaSource: %+v, %v", s, err)
	}
	for _, tc := range []struct {
		gvr        schema.GroupVersionResource
		vr, pl, in string
	}{
		{schema.GroupVersionResource{Group: "x", Resource: "r"}, "spec.n", "status.p", "version and resource"},
		{gvr, "", "status.p", "vreplicasPath"},
		{gvr, "spec.n", "status.p[0]", "placementsPath"},
		{gvr, "spec.n", ".spec.n", "the same field"},
	} {
		if _, err := NewDuckVPodSource(tc.gvr, tc.vr, tc.pl); err == nil || !strings.Contains(err.Error(), tc.in) {
			t.Errorf("NewDuckVPodSource(%v, %q, %q): %v, want an error about %q", tc.gvr, tc.vr, tc.pl, err, tc.in)
		}
	}
	// Placements outside status are written with a plain update.
	if s, _ := NewDuckVPodSource(gvr, "spec.n", "spec.placements"); s.status() {
		t.Error("spec.placements would be written through the status subresource")
	}
}

// obj decodes a JSON object into an unstructured one, as the dynamic
// client does (numbers become int64 or float64).
func obj(t *testing.T, js string) *unstructured.Unstructured {
	t.Helper()
	m := map[string]any{}
	if err := utiljson.Unmarshal([]byte(js), &m); err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return &unstructured.Unstructured{Object: m}
}

func TestVPodFromReadsAndRefusesMalformed(t *testing.T) {
	kafka, err := NewDuckVPodSource(schema.GroupVersionResource{Group: "sources.knative.dev", Version: "v1beta1", Resource: "kafkasources"}, "spec.consumers", "status.placements")
	if err != nil {
		t.Fatal(err)
	}
	const head = `{"apiVersion":"sources.knative.dev/v1beta1","kind":"KafkaSource","metadata":{"namespace":"ns","name":"k","resourceVersion":"7"},`
	for _, tc := range []struct {
		name string
		body string
		want vpod.VPod
		err  string
	}{
		{name: "count and placements", body: `"spec":{"consumers":5},"status":{"placements":[{"podName":"d-0","vreplicas":3},{"podName":"d-1","vreplicas":2}]}}`,
			want: vpod.VPod{VReplicas: 5, Placements: []vpod.Placement{pl("d-0", 3), pl("d-1", 2)}}},
		{name: "no status yet", body: `"spec":{"consumers":2}}`, want: vpod.VPod{VReplicas: 2}},
		{name: "null placements", body: `"spec":{"consumers":2},"status":{"placements":null}}`, want: vpod.VPod{VReplicas: 2}},
		{name: "zero vreplicas", body: `"spec":{"consumers":0}}`, want: vpod.VPod{VReplicas: 0}},
		{name: "integral float", body: `"spec":{"consumers":4.0}}`, want: vpod.VPod{VReplicas: 4}},
		{name: "placement with 0", body: `"spec":{"consumers":1},"status":{"placements":[{"podName":"d-0","vreplicas":0}]}}`,
			want: vpod.VPod{VReplicas: 1, Placements: []vpod.Placement{pl("d-0", 0)}}},
		{name: "missing count", body: `"spec":{}}`, err: "spec.consumers is missing"},
		{name: "null count", body: `"spec":{"consumers":null}}`, err: "spec.consumers is missing"},
		{name: "negative count", body: `"spec":{"consumers":-1}}`, err: "spec.consumers: -1 is negative"},
		{name: "string count", body: `"spec":{"consumers":"3"}}`, err: "spec.consumers: a string"},
		{name: "fraction", body: `"spec":{"consumers":1.5}}`, err: "not an int32"},
		{name: "too big", body: `"spec":{"consumers":3000000000}}`, err: "more than an int32"},
		{name: "spec not a map", body: `"spec":3}`, err: "spec.consumers"},
		{name: "placements a map", body: `"spec":{"consumers":1},"status":{"placements":{"d-0":1}}}`, err: "not a list"},
		{name: "placement not an object", body: `"spec":{"consumers":1},"status":{"placements":["d-0"]}}`, err: "placements[0]: a string"},
		{name: "no pod name", body: `"spec":{"consumers":1},"status":{"placements":[{"vreplicas":1}]}}`, err: "placements[0].podName"},
		{name: "negative placement", body: `"spec":{"consumers":1},"status":{"placements":[{"podName":"d-0","vreplicas":-2}]}}`, err: "placements[0].vreplicas: -2 is negative"},
		{name: "missing placement count", body: `"spec":{"consumers":1},"status":{"placements":[{"podName":"d-0"}]}}`, err: "placements[0].vreplicas: missing"},
		{name: "pod twice", body: `"spec":{"consumers":2},"status":{"placements":[{"podName":"d-0","vreplicas":1},{"podName":"d-0","vreplicas":1}]}}`, err: "listed twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := kafka.vpodFrom(obj(t, head+tc.body))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %+v, %v; want an error with %q", got, err, tc.err)
				}
				return
			}
			tc.want.Key, tc.want.ResourceVersion = vpod.Key{Namespace: "ns", Name: "k"}, "7"
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestWithPlacementsWritesTheCRDStatus(t *testing.T) {
	src := CRDVPodSource()
	in := obj(t, `{"apiVersion":"wasmsched.io/v1alpha1","kind":"VPod","metadata":{"namespace":"ns","name":"v","generation":3},
		"spec":{"vreplicas":5,"statefulSet":"d"},"status":{"placements":[{"podName":"d-2","vreplicas":5}]}}`)
	ps := []vpod.Placement{pl("d-0", 2), pl("d-1", 3)}
	if src.upToDate(in, []vpod.Placement{pl("d-2", 5)}, ps) {
		t.Fatal("other placements reported up to date")
	}
	out, err := src.withPlacements(in, ps)
	if err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(out.Object["status"])
	if want := `{"observedGeneration":3,"placements":[{"podName":"d-0","vreplicas":2},{"podName":"d-1","vreplicas":3}],"vreplicas":5}`; string(js) != want {
		t.Errorf("status = %s, want %s", js, want)
	}
	if _, ok := in.Object["status"].(map[string]any)["observedGeneration"]; ok {
		t.Error("the input object was changed")
	}
	back, err := src.vpodFrom(out)
	if err != nil || !slices.Equal(back.Placements, ps) {
		t.Errorf("read back %+v, %v", back.Placements, err)
	}
	if !src.upToDate(out, back.Placements, ps) {
		t.Error("the written object is not up to date with what was written")
	}
	// Same placements, but the spec moved on: observedGeneration is stale.
	out.SetGeneration(4)
	if src.upToDate(out, back.Placements, ps) {
		t.Error("a stale observedGeneration reported up to date")
	}
	// No placements: the list goes, the sum is 0.
	empty, err := src.withPlacements(out, nil)
	if err != nil {
		t.Fatal(err)
	}
	js, _ = json.Marshal(empty.Object["status"])
	if want := `{"observedGeneration":4,"vreplicas":0}`; string(js) != want {
		t.Errorf("status = %s, want %s", js, want)
	}
}

func TestWithPlacementsDuckTypedTouchesOnlyThePath(t *testing.T) {
	src, _ := NewDuckVPodSource(schema.GroupVersionResource{Group: "g", Version: "v1", Resource: "r"}, "spec.consumers", "status.placements")
	in := obj(t, `{"metadata":{"namespace":"ns","name":"k","generation":9},"spec":{"consumers":1},"status":{"conditions":[{"type":"Ready"}]}}`)
	out, err := src.withPlacements(in, []vpod.Placement{pl("d-0", 1)})
	if err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(out.Object["status"])
	if want := `{"conditions":[{"type":"Ready"}],"placements":[{"podName":"d-0","vreplicas":1}]}`; string(js) != want {
		t.Errorf("status = %s, want %s", js, want)
	}
	if !src.upToDate(out, []vpod.Placement{pl("d-0", 1)}, []vpod.Placement{pl("d-0", 1)}) {
		t.Error("duck-typed sources have no observedGeneration to compare")
	}
}

func TestCRDStatefulSetAndRouting(t *testing.T) {
	r := &vpodRouter{}
	r.add("kafka", "knative-eventing", "dispatcher")
	r.add("east", "east", "adapter")
	r.add("west", "west", "adapter")
	for _, tc := range []struct {
		ns, sts, want, err string
	}{
		{ns: "default", sts: "dispatcher", want: "kafka"},
		{ns: "default", sts: "knative-eventing/dispatcher", want: "kafka"},
		{ns: "default", sts: "other/dispatcher", err: "no vpod scheduler"},
		{ns: "default", sts: "missing", err: `statefulset "missing"`},
		{ns: "west", sts: "adapter", want: "west"},
		{ns: "default", sts: "east/adapter", want: "east"},
		{ns: "default", sts: "adapter", err: "ambiguous"},
		{ns: "default", sts: "a/b/c", err: "neither name nor namespace/name"},
		{ns: "default", sts: "/b", err: "neither"},
		{ns: "default", sts: "", err: "spec.statefulSet: missing"},
	} {
		u := obj(t, `{"metadata":{"namespace":"`+tc.ns+`","name":"v"},"spec":{"vreplicas":1,"statefulSet":"`+tc.sts+`"}}`)
		got, err := r.route(u)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s in %s: %q, %v; want an error with %q", tc.sts, tc.ns, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s in %s: %q, %v; want %q", tc.sts, tc.ns, got, err, tc.want)
		}
	}
	noSpec := obj(t, `{"metadata":{"namespace":"ns","name":"v"}}`)
	if _, err := r.route(noSpec); err == nil {
		t.Error("a VPod without spec was routed")
	}
}

func TestAdapterOrdinal(t *testing.T) {
	for pod, want := range map[string]int{
		"disp-0": 0, "disp-12": 12, "disp": -1, "disp-": -1, "disp-a": -1, "disp-01": -1, "disp--1": -1,
		"disp-+1": -1, "other-0": -1, "disp-1-0": -1, "disp-x-1": -1, "dispatcher-1": -1,
	} {
		if got := adapterOrdinal(pod, "disp"); got != want {
			t.Errorf("adapterOrdinal(%q) = %d, want %d", pod, got, want)
		}
	}
	if got := adapterOrdinal("my-sts-3", "my-sts"); got != 3 {
		t.Errorf("a StatefulSet name with a dash: %d", got)
	}
}

// pl is a placement.
func pl(pod string, n int32) vpod.Placement { return vpod.Placement{PodName: pod, VReplicas: n} }
