package sim

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	kjson "sigs.k8s.io/json"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/wasmsched/wasmsched/host/internal/boundedread"
	"github.com/wasmsched/wasmsched/host/internal/yamlcheck"
)

// Objects are the Kubernetes objects a simulation starts from.
type Objects struct {
	Nodes []*corev1.Node
	// Pods are scheduled in this order: those written as Pods and those
	// the workloads below expanded into, each at its document's place.
	Pods            []*corev1.Pod
	PriorityClasses []*schedulingv1.PriorityClass
	PDBs            []*policyv1.PodDisruptionBudget
	// Namespaces are optional — a pod's namespace need not have one — and
	// kept with their labels for namespaceSelectors to match.
	Namespaces []*corev1.Namespace
	// Services matter for their selectors: the pods they select get
	// kube-scheduler's default topology spread constraints.
	Services []*corev1.Service

	// Deployments, ReplicaSets (including those the Deployments created)
	// and StatefulSets are a record of the workloads read: their pods are
	// already in Pods. Add them with AddDeployment, AddReplicaSet and
	// AddStatefulSet, which expand them; appending here expands nothing.
	Deployments  []*appsv1.Deployment
	ReplicaSets  []*appsv1.ReplicaSet
	StatefulSets []*appsv1.StatefulSet

	// NodeMetrics and PodMetrics (metrics.k8s.io/v1beta1) are measured
	// usage for eviction policies, as a metrics server would report it.
	NodeMetrics []metricsv1beta1.NodeMetrics
	PodMetrics  []metricsv1beta1.PodMetrics

	// VPods (wasmsched.io/v1alpha1) are the vpods the configuration's
	// vpod schedulers place onto their adapter StatefulSets' pods.
	VPods []*VPodObject
}

// Bounds on what simulate reads. The API server refuses a request body
// over 3 MiB, so no real object is larger; a manifest file or stream may
// hold many objects, up to 64 MiB in all. A longer line, document or
// stream is refused as soon as it passes its bound, without reading the
// rest into memory.
//
// A List document (what `kubectl get -o yaml` prints) holds many objects,
// so it may be as large as MaxListBytes; each of its items is held to
// MaxObjectBytes.
const (
	MaxManifestBytes = 64 << 20
	MaxObjectBytes   = 3 << 20
	MaxListBytes     = MaxManifestBytes
)

// maxErrorsPerDocument caps the problems reported for one document.
const maxErrorsPerDocument = 20

// ManifestError names where in the input a problem is: the file, the line
// (when known), the document's index in the file (from 0), the object and
// the field, and what is wrong. It reads
// cluster.yaml:37 (document 3, Pod web/a): spec.containers[0].resources.requests.cpu: "x" is not a quantity (e.g. 64Mi or 500m).
type ManifestError struct {
	File     string
	Line     int // 1-based line in File; 0 if unknown
	Document int
	// Item is "items[3]" when the object is an item of a List document
	// (kind: List, or a typed list such as PodList); "" otherwise.
	Item      string
	Kind      string
	Namespace string
	Name      string
	Field     string // field path within the object; "" if Err names it or none applies
	Err       error
}

func (e *ManifestError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	fmt.Fprintf(&b, " (document %d", e.Document)
	if e.Item != "" {
		b.WriteString(", " + e.Item)
	}
	if e.Kind != "" {
		b.WriteString(", " + e.Kind)
		if e.Name != "" {
			b.WriteString(" ")
			if e.Namespace != "" {
				b.WriteString(e.Namespace + "/")
			}
			b.WriteString(e.Name)
		}
	}
	b.WriteString("): ")
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *ManifestError) Unwrap() error { return e.Err }

// LoadFiles reads manifests from files ("-" is standard input). A file
// must be a regular file or a pipe (process substitution works; devices
// and directories are refused) of at most MaxManifestBytes.
func LoadFiles(paths ...string) (*Objects, error) {
	objs := &Objects{}
	if err := objs.ReadFiles(paths...); err != nil {
		return nil, err
	}
	return objs, nil
}

// ReadFiles adds the objects of manifest files ("-" for standard input)
// to o, as LoadFiles reads them: simulate --from-cluster adds the extra
// pods of manifests to what it read from the cluster.
func (o *Objects) ReadFiles(paths ...string) error {
	for _, p := range paths {
		if err := o.readFile(p); err != nil {
			return err
		}
	}
	return nil
}

func (o *Objects) readFile(p string) error {
	var r io.Reader = os.Stdin
	if p != "-" {
		rc, err := boundedread.Open(p, MaxManifestBytes, boundedread.RegularOrPipe, "a manifest file")
		if err != nil {
			return err
		}
		defer rc.Close()
		r = rc
	}
	return o.Read(p, r)
}

// Read adds the objects of a multi-document YAML stream named name, of at
// most MaxManifestBytes with no document over MaxObjectBytes. Every
// document is checked before it is used, as the API server would check
// it: strictly decoded (unknown fields, wrong types and malformed
// quantities are errors with their line and field path) and validated
// (names, labels, resources, ports, tolerations, affinity and more: see
// validateObject). Errors are *ManifestError, one per problem of the first
// bad document, joined. Deployments, ReplicaSets and StatefulSets are
// expanded into their pods where they stand (see AddDeployment), since no
// controller runs in a simulation.
//
// A List document — apiVersion v1, kind List, as `kubectl get -o yaml`
// prints, or a typed list such as PodList — is read as if each of its
// items were a document of its own, in order; errors name the item
// (items[3]). Items of a typed list may leave out apiVersion and kind, as
// the API server's own list responses do.
func (o *Objects) Read(name string, r io.Reader) error {
	sp := &splitter{br: bufio.NewReader(boundedread.Limit(r, name, MaxManifestBytes, "a manifest file or stream"))}
	for doc := 0; ; doc++ {
		raw, start, err := sp.next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if boundedread.IsTooLarge(err) {
			return err // it names the file and the limit
		}
		if err != nil {
			return &ManifestError{File: name, Line: start, Document: doc, Err: err}
		}
		if len(bytes.TrimSpace(stripComments(raw))) == 0 {
			continue
		}
		if err := o.readDocument(name, doc, start, raw); err != nil {
			return err
		}
	}
}

// document is one YAML document, or one item of a List document, being
// read, for its errors.
type document struct {
	file           string
	index, start   int
	item           string // "items[3]" for an item of a List document
	itemLine       int    // the item's line in the document, for errors of the whole item
	kind, ns, name string
	lines          yamlcheck.Lines
}

// fail makes the error for a problem at field (its line looked up) or, with
// field "", at the line given (the document's first if 0).
func (d *document) fail(line int, field string, err error) *ManifestError {
	abs := d.start
	if line == 0 && field != "" {
		line = d.lines.Find(field)
	}
	if line == 0 {
		line = d.itemLine
	}
	if line > 0 {
		abs = d.start + line - 1
	}
	return &ManifestError{File: d.file, Line: abs, Document: d.index, Item: d.item, Kind: d.kind, Namespace: d.ns, Name: d.name, Field: field, Err: err}
}

// wrap turns an error from the workload code, which starts with the field
// it is about ("spec.replicas: …"), into a ManifestError at that field's line.
func (d *document) wrap(err error) error {
	line := 0
	if m := leadingField.FindStringSubmatch(err.Error()); m != nil {
		line = d.lines.Find(m[1])
	}
	return d.fail(line, "", err)
}

var simpleKeyIndex = regexp.MustCompile(`\[([A-Za-z_][A-Za-z0-9_-]*)\]`)

var leadingField = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9_.\[\]/-]*): `)

// join reports up to maxErrorsPerDocument problems as one error.
func join(errs []error) error {
	if len(errs) > maxErrorsPerDocument {
		more := len(errs) - maxErrorsPerDocument
		errs = append(errs[:maxErrorsPerDocument:maxErrorsPerDocument], fmt.Errorf("… and %d more problems in this document", more))
	}
	return errors.Join(errs...)
}

func (o *Objects) readDocument(file string, index, start int, raw []byte) error {
	d := &document{file: file, index: index, start: start}
	root, err := parseYAML(raw)
	if err != nil {
		var ye *yamlError
		if errors.As(err, &ye) {
			return d.fail(ye.line, "", errors.New(ye.msg))
		}
		return d.fail(0, "", err)
	}
	if root == nil {
		return nil
	}
	if root.Kind != yaml.MappingNode {
		return d.fail(root.Line, "", errors.New("want an object with apiVersion, kind and metadata"))
	}
	if apiVersion, kind := scalarAt(root, "apiVersion"), scalarAt(root, "kind"); isList(apiVersion, kind) {
		return o.readList(d, root, apiVersion, kind)
	}
	if len(raw) > MaxObjectBytes {
		return d.fail(0, "", errObjectTooLarge) // only a List may be larger
	}
	return o.readObject(d, root, raw)
}

// isList reports whether apiVersion/kind is a list simulate reads: v1
// List, or the list of a kind it reads (v1 PodList, apps/v1
// ReplicaSetList, ...).
func isList(apiVersion, kind string) bool {
	if apiVersion == "v1" && kind == "List" {
		return true
	}
	elem, ok := strings.CutSuffix(kind, "List")
	return ok && elem != "" && newObject(apiVersion+"/"+elem) != nil
}

// readList reads the items of a List document, each as a document of its
// own would be read. An item of a typed list (PodList) that leaves out
// apiVersion and kind gets the list's; one that gives them must agree.
func (o *Objects) readList(d *document, root *yaml.Node, apiVersion, kind string) error {
	d.kind = kind
	lines, problems := yamlcheck.Check(root, reflect.TypeFor[metav1.List](), nil) // items are checked one by one below
	d.lines = lines
	if len(problems) > 0 {
		errs := make([]error, len(problems))
		for i, p := range problems {
			errs[i] = d.fail(p.Line, p.Path, errors.New(p.Msg))
		}
		return join(errs)
	}
	elemKind, _ := strings.CutSuffix(kind, "List") // "" for v1 List
	items := valueAt(root, "items")
	if items == nil || items.Kind == yaml.ScalarNode && items.Tag == "!!null" {
		return nil
	}
	for i, item := range items.Content {
		id := &document{file: d.file, index: d.index, start: d.start, item: fmt.Sprintf("items[%d]", i), itemLine: item.Line}
		for depth := 0; item.Kind == yaml.AliasNode && item.Alias != nil && depth < 100; depth++ {
			item = item.Alias
		}
		if item.Kind != yaml.MappingNode {
			return id.fail(item.Line, "", errors.New("want an object with apiVersion, kind and metadata"))
		}
		if elemKind != "" {
			item = withTypeMeta(item, apiVersion, elemKind)
			if v, k := scalarAt(item, "apiVersion"), scalarAt(item, "kind"); v != apiVersion || k != elemKind {
				id.kind = k
				return id.fail(item.Line, "", fmt.Errorf("%s %s in a %s %s: want %s %s", v, k, apiVersion, kind, apiVersion, elemKind))
			}
		}
		if v, k := scalarAt(item, "apiVersion"), scalarAt(item, "kind"); isList(v, k) {
			id.kind = k
			return id.fail(item.Line, "", errors.New("a List inside a List is not supported"))
		}
		raw, err := encodeNode(item)
		if err == nil && len(raw) > MaxObjectBytes {
			err = errObjectTooLarge
		}
		if err != nil {
			return id.fail(item.Line, "", err)
		}
		if err := o.readObject(id, item, raw); err != nil {
			return err
		}
		items.Content[i] = nil // read: let it go
	}
	return nil
}

// withTypeMeta returns item with apiVersion and kind added where it has
// none (a shallow copy: the caller's node is not changed).
func withTypeMeta(item *yaml.Node, apiVersion, kind string) *yaml.Node {
	var add []*yaml.Node
	for _, kv := range [][2]string{{"apiVersion", apiVersion}, {"kind", kind}} {
		if valueAt(item, kv[0]) == nil {
			add = append(add,
				&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: kv[0], Line: item.Line, Column: item.Column},
				&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: kv[1], Line: item.Line, Column: item.Column})
		}
	}
	if len(add) == 0 {
		return item
	}
	c := *item
	c.Content = append(add, item.Content...)
	return &c
}

// encodeNode writes one item of a List back as a YAML document, so it is
// decoded exactly as the same object written on its own would be.
func encodeNode(n *yaml.Node) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("cannot re-encode the item (%v)", r)
		}
	}()
	return yaml.Marshal(n)
}

// readObject checks and adds one object: a document, or an item of a
// List document. root is its parsed YAML (lines counted from d.start),
// raw its text.
func (o *Objects) readObject(d *document, root *yaml.Node, raw []byte) error {
	apiVersion := scalarAt(root, "apiVersion")
	d.kind = scalarAt(root, "kind")
	if md := valueAt(root, "metadata"); md != nil {
		d.name, d.ns = scalarAt(md, "name"), scalarAt(md, "namespace")
	}
	if d.kind == "" {
		return d.fail(0, "", errors.New("kind: missing"))
	}
	if d.name == "" {
		return d.fail(0, "", errors.New("metadata.name: missing"))
	}
	obj := newObject(apiVersion + "/" + d.kind)
	if obj == nil {
		return d.fail(0, "", fmt.Errorf("unsupported kind %s %q (supported: v1 Node, Pod, Namespace, Service; apps/v1 Deployment, ReplicaSet, StatefulSet; scheduling.k8s.io/v1 PriorityClass; policy/v1 PodDisruptionBudget; metrics.k8s.io/v1beta1 NodeMetrics, PodMetrics; wasmsched.io/v1alpha1 VPod; their lists and v1 List)",
			apiVersion, d.kind))
	}
	lines, problems := yamlcheck.Check(root, reflect.TypeOf(obj), nil)
	d.lines = lines
	if len(problems) > 0 {
		errs := make([]error, len(problems))
		for i, p := range problems {
			errs[i] = d.fail(p.Line, p.Path, errors.New(p.Msg))
		}
		return join(errs)
	}
	if err := strict(raw, obj); err != nil {
		return d.wrap(err)
	}
	if fe := validateObject(obj); len(fe) > 0 {
		errs := make([]error, len(fe))
		for i, e := range fe {
			f := simpleKeyIndex.ReplaceAllString(e.Field, ".$1") // requests[cpu] -> requests.cpu, as the decoder's paths
			errs[i] = d.fail(0, f, errors.New(e.ErrorBody()))
		}
		return join(errs)
	}
	var err2 error
	switch x := obj.(type) {
	case *corev1.Node:
		o.Nodes = append(o.Nodes, x)
	case *corev1.Pod:
		if len(x.Spec.Containers) == 0 {
			return d.fail(0, "spec.containers", errors.New("at least one container is required"))
		}
		o.Pods = append(o.Pods, x)
	case *corev1.Service:
		o.Services = append(o.Services, x)
	case *corev1.Namespace:
		o.Namespaces = append(o.Namespaces, x)
	case *appsv1.Deployment:
		err2 = o.AddDeployment(x)
	case *appsv1.ReplicaSet:
		err2 = o.AddReplicaSet(x)
	case *appsv1.StatefulSet:
		err2 = o.AddStatefulSet(x)
	case *schedulingv1.PriorityClass:
		o.PriorityClasses = append(o.PriorityClasses, x)
	case *policyv1.PodDisruptionBudget:
		o.PDBs = append(o.PDBs, x)
	case *metricsv1beta1.NodeMetrics:
		o.NodeMetrics = append(o.NodeMetrics, *x)
	case *metricsv1beta1.PodMetrics:
		o.PodMetrics = append(o.PodMetrics, *x)
	case *VPodObject:
		if err := checkVPod(x); err != nil {
			return d.wrap(err)
		}
		if len(o.VPods) >= MaxVPods {
			return d.wrap(fmt.Errorf("more than %d VPod objects: a simulation takes at most %d", MaxVPods, MaxVPods))
		}
		o.VPods = append(o.VPods, x)
	}
	if err2 != nil {
		return d.wrap(err2)
	}
	return nil
}

// newObject returns a new object of the kind "apiVersion/kind", or nil if
// simulate does not read that kind.
func newObject(gvk string) any {
	switch gvk {
	case "v1/Node":
		return &corev1.Node{}
	case "v1/Pod":
		return &corev1.Pod{}
	case "v1/Service":
		return &corev1.Service{}
	case "v1/Namespace":
		return &corev1.Namespace{}
	case "apps/v1/Deployment":
		return &appsv1.Deployment{}
	case "apps/v1/ReplicaSet":
		return &appsv1.ReplicaSet{}
	case "apps/v1/StatefulSet":
		return &appsv1.StatefulSet{}
	case "scheduling.k8s.io/v1/PriorityClass":
		return &schedulingv1.PriorityClass{}
	case "policy/v1/PodDisruptionBudget":
		return &policyv1.PodDisruptionBudget{}
	case "metrics.k8s.io/v1beta1/NodeMetrics":
		return &metricsv1beta1.NodeMetrics{}
	case "metrics.k8s.io/v1beta1/PodMetrics":
		return &metricsv1beta1.PodMetrics{}
	case "wasmsched.io/v1alpha1/VPod":
		return &VPodObject{}
	}
	return nil
}

// strict decodes like the API server's strict field validation, with
// the full path of an unknown or duplicate field in the error.
func strict(raw []byte, into any) error {
	js, err := sigsyaml.YAMLToJSON(raw)
	if err != nil {
		return err
	}
	strictErrs, err := kjson.UnmarshalStrict(js, into)
	if err != nil {
		return errors.New(strings.TrimPrefix(err.Error(), "json: "))
	}
	if len(strictErrs) > 0 {
		msgs := make([]string, len(strictErrs))
		for i, e := range strictErrs {
			msgs[i] = e.Error()
		}
		return errors.New(strings.Join(msgs, "; "))
	}
	return nil
}

func stripComments(b []byte) []byte {
	var out []byte
	for _, line := range bytes.Split(b, []byte("\n")) {
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' && !bytes.Equal(t, []byte("---")) {
			out = append(out, line...)
			out = append(out, '\n')
		}
	}
	return out
}
