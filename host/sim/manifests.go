package sim

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
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
}

// ManifestError names where in the input a problem is: the file, the
// document's index in it (from 0), and what.
type ManifestError struct {
	File     string
	Document int
	Kind     string
	Name     string
	Err      error
}

func (e *ManifestError) Error() string {
	where := fmt.Sprintf("%s: document %d", e.File, e.Document)
	if e.Kind != "" {
		where += " (" + e.Kind
		if e.Name != "" {
			where += " " + e.Name
		}
		where += ")"
	}
	return where + ": " + e.Err.Error()
}

func (e *ManifestError) Unwrap() error { return e.Err }

// LoadFiles reads manifests from files ("-" is standard input).
func LoadFiles(paths ...string) (*Objects, error) {
	objs := &Objects{}
	for _, p := range paths {
		var r io.Reader
		if p == "-" {
			r = os.Stdin
		} else {
			f, err := os.Open(p)
			if err != nil {
				return nil, err
			}
			defer f.Close()
			r = f
		}
		if err := objs.Read(p, r); err != nil {
			return nil, err
		}
	}
	return objs, nil
}

type typeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
}

// Read adds the objects of a multi-document YAML stream named name.
// Unknown kinds and malformed objects are errors naming the document and
// the field; strict decoding refuses unknown fields, as kubectl's
// server-side validation would. Deployments, ReplicaSets and
// StatefulSets are expanded into their pods where they stand (see
// AddDeployment), since no controller runs in a simulation.
func (o *Objects) Read(name string, r io.Reader) error {
	yr := k8syaml.NewYAMLReader(bufio.NewReader(r))
	for doc := 0; ; doc++ {
		raw, err := yr.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return &ManifestError{File: name, Document: doc, Err: err}
		}
		if len(bytes.TrimSpace(stripComments(raw))) == 0 {
			continue
		}
		var tm typeMeta
		if err := yaml.Unmarshal(raw, &tm); err != nil {
			return &ManifestError{File: name, Document: doc, Err: err}
		}
		merr := func(err error) error {
			return &ManifestError{File: name, Document: doc, Kind: tm.Kind, Name: tm.Metadata.Name, Err: err}
		}
		if tm.Kind == "" {
			return merr(errors.New("kind: missing"))
		}
		if tm.Metadata.Name == "" {
			return merr(errors.New("metadata.name: missing"))
		}
		switch tm.APIVersion + "/" + tm.Kind {
		case "v1/Node":
			var n corev1.Node
			if err := strict(raw, &n); err != nil {
				return merr(err)
			}
			o.Nodes = append(o.Nodes, &n)
		case "v1/Pod":
			var p corev1.Pod
			if err := strict(raw, &p); err != nil {
				return merr(err)
			}
			if len(p.Spec.Containers) == 0 {
				return merr(errors.New("spec.containers: at least one container is required"))
			}
			o.Pods = append(o.Pods, &p)
		case "v1/Service":
			var svc corev1.Service
			if err := strict(raw, &svc); err != nil {
				return merr(err)
			}
			o.Services = append(o.Services, &svc)
		case "v1/Namespace":
			var ns corev1.Namespace
			if err := strict(raw, &ns); err != nil {
				return merr(err)
			}
			o.Namespaces = append(o.Namespaces, &ns)
		case "apps/v1/Deployment":
			var d appsv1.Deployment
			if err := strict(raw, &d); err != nil {
				return merr(err)
			}
			if err := o.AddDeployment(&d); err != nil {
				return merr(err)
			}
		case "apps/v1/ReplicaSet":
			var rs appsv1.ReplicaSet
			if err := strict(raw, &rs); err != nil {
				return merr(err)
			}
			if err := o.AddReplicaSet(&rs); err != nil {
				return merr(err)
			}
		case "apps/v1/StatefulSet":
			var sts appsv1.StatefulSet
			if err := strict(raw, &sts); err != nil {
				return merr(err)
			}
			if err := o.AddStatefulSet(&sts); err != nil {
				return merr(err)
			}
		case "scheduling.k8s.io/v1/PriorityClass":
			var pc schedulingv1.PriorityClass
			if err := strict(raw, &pc); err != nil {
				return merr(err)
			}
			o.PriorityClasses = append(o.PriorityClasses, &pc)
		case "policy/v1/PodDisruptionBudget":
			var pdb policyv1.PodDisruptionBudget
			if err := strict(raw, &pdb); err != nil {
				return merr(err)
			}
			o.PDBs = append(o.PDBs, &pdb)
		default:
			return merr(fmt.Errorf("unsupported kind %s %q (supported: v1 Node, Pod, Namespace, Service; apps/v1 Deployment, ReplicaSet, StatefulSet; scheduling.k8s.io/v1 PriorityClass; policy/v1 PodDisruptionBudget)",
				tm.APIVersion, tm.Kind))
		}
	}
}

// strict decodes like the API server's strict field validation, with
// the full path of an unknown or duplicate field in the error.
func strict(raw []byte, into any) error {
	js, err := yaml.YAMLToJSON(raw)
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
