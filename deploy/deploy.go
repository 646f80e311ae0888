// Package deploy holds what runs wasmsched in a cluster — the Helm chart
// (helm/wasmsched) and wasmsched.yaml, the chart rendered with its
// default values — and decodes manifests, so tests can check them against
// the serve command's flags and apply their RBAC rules to a real API
// server.
package deploy

import (
	"bytes"
	_ "embed"
	"fmt"
	"regexp"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

// Manifest is deploy/wasmsched.yaml as it is applied with kubectl.
//
//go:embed wasmsched.yaml
var Manifest []byte

// ChartDir is the chart's directory relative to the repository root.
const ChartDir = "deploy/helm/wasmsched"

// ManifestRelease and ManifestNamespace are the release name and
// namespace deploy/wasmsched.yaml is rendered with.
const (
	ManifestRelease   = "wasmsched"
	ManifestNamespace = "kube-system"
)

// ManifestHeader starts deploy/wasmsched.yaml, above the rendered chart
// (deploy/manifest-header.txt): it says where the file comes from so
// nobody edits it by hand.
//
//go:embed manifest-header.txt
var ManifestHeader []byte

// Objects decodes every document of deploy/wasmsched.yaml into its typed
// object.
func Objects() ([]runtime.Object, error) {
	objs, err := Decode(Manifest)
	if err != nil {
		return nil, fmt.Errorf("deploy/wasmsched.yaml: %w", err)
	}
	return objs, nil
}

// docSeparator splits a multi-document YAML stream.
var docSeparator = regexp.MustCompile(`(?m)^---\s*$`)

// Decode decodes every document of a multi-document manifest (kubectl's
// or helm template's output) into its typed object; documents with only
// comments are skipped. A kind client-go's scheme does not know (a
// CustomResourceDefinition, a ServiceMonitor) comes back as
// *unstructured.Unstructured.
func Decode(manifest []byte) ([]runtime.Object, error) {
	var out []runtime.Object
	for i, doc := range docSeparator.Split(string(manifest), -1) {
		j, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i+1, err)
		}
		if t := bytes.TrimSpace(j); len(t) == 0 || string(t) == "null" {
			continue
		}
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(j, nil, nil)
		if runtime.IsNotRegisteredError(err) {
			u := &unstructured.Unstructured{}
			if err = u.UnmarshalJSON(j); err == nil {
				obj = u
			}
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i+1, err)
		}
		out = append(out, obj)
	}
	return out, nil
}
