// Package deploy holds the manifests that run wasmsched in a cluster
// (wasmsched.yaml) and decodes them, so tests can check them against the
// serve command's flags and apply their RBAC rules to a real API server.
package deploy

import (
	"bytes"
	_ "embed"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

// Manifest is deploy/wasmsched.yaml as it is applied with kubectl.
//
//go:embed wasmsched.yaml
var Manifest []byte

// Objects decodes every document of the manifest into its typed object.
func Objects() ([]runtime.Object, error) {
	var out []runtime.Object
	for i, doc := range bytes.Split(Manifest, []byte("\n---\n")) {
		j, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("deploy/wasmsched.yaml document %d: %w", i+1, err)
		}
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(j, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("deploy/wasmsched.yaml document %d: %w", i+1, err)
		}
		out = append(out, obj)
	}
	return out, nil
}
