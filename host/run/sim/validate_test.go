package sim

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	corev1 "k8s.io/api/core/v1"

	"github.com/wasmsched/wasmsched/host/internal/boundedread/specialfiles"
)

const podHead = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    image: i\n"

// Every refusal names the file and line, the document, the object and the
// field. Today's code accepted all but the decoding ones, and placed such
// pods as if nothing were wrong.
func TestManifestsAreValidatedLikeTheAPIServer(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"negative request", podHead + "    resources: {requests: {cpu: '-1'}}\n",
			`test.yaml:8 (document 0, Pod p): spec.containers[0].resources.requests.cpu: Invalid value: "-1": must be greater than or equal to 0`},
		{"negative pod-level request", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  resources: {requests: {cpu: '-1'}}\n  containers: [{name: c, image: i}]\n",
			`test.yaml:5 (document 0, Pod p): spec.resources.requests.cpu: Invalid value: "-1": must be greater than or equal to 0`},
		{"absurd cpu", podHead + "    resources:\n      requests:\n        cpu: 1e30\n",
			`test.yaml:10 (document 0, Pod p): spec.containers[0].resources.requests.cpu: Invalid value: "1e+30": must be at most 1G`},
		{"absurd node memory", "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus:\n  allocatable:\n    cpu: 4\n    memory: 2Pi\n",
			`test.yaml:7 (document 0, Node n1): status.allocatable.memory: Invalid value: "2Pi": must be at most 1Pi`},
		{"negative node capacity", "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {capacity: {pods: -3}}\n",
			`test.yaml:4 (document 0, Node n1): status.capacity.pods: Invalid value: "-3": must be greater than or equal to 0`},
		{"request above limit", podHead + "    resources:\n      requests: {memory: 2Gi}\n      limits: {memory: 1Gi}\n",
			`test.yaml:9 (document 0, Pod p): spec.containers[0].resources.requests.memory: Invalid value: "2Gi": must be less than or equal to memory limit of 1Gi`},
		{"unqualified extended resource", podHead + "    resources: {requests: {gpu: 1}}\n",
			`spec.containers[0].resources.requests.gpu: Invalid value: "gpu": must be a standard resource type or fully qualified`},
		{"container port out of range", podHead + "    ports:\n    - containerPort: 70000\n",
			`test.yaml:9 (document 0, Pod p): spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive`},
		{"container port zero", podHead + "    ports: [{containerPort: 0}]\n",
			`spec.containers[0].ports[0].containerPort: Invalid value: 0: must be between 1 and 65535, inclusive`},
		{"host port negative", podHead + "    ports: [{containerPort: 80, hostPort: -1}]\n",
			`spec.containers[0].ports[0].hostPort: Invalid value: -1: must be between 1 and 65535, inclusive`},
		{"port past int32", podHead + "    ports: [{containerPort: 99999999999}]\n",
			`test.yaml:8 (document 0, Pod p): spec.containers[0].ports[0].containerPort: 99999999999 is out of range (it must fit a 32-bit integer)`},
		{"bad protocol", podHead + "    ports: [{containerPort: 80, protocol: HTTP}]\n",
			`spec.containers[0].ports[0].protocol: Unsupported value: "HTTP"`},
		{"bad pod name", "apiVersion: v1\nkind: Pod\nmetadata: {name: Web_A}\nspec: {containers: [{name: c, image: i}]}\n",
			`test.yaml:3 (document 0, Pod Web_A): metadata.name: Invalid value: "Web_A": a lowercase RFC 1123 subdomain`},
		{"bad namespace", "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: Shop}\nspec: {containers: [{name: c, image: i}]}\n",
			`(document 0, Pod Shop/p): metadata.namespace: Invalid value: "Shop"`},
		{"bad label value", "apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n  labels:\n    zone: " + strings.Repeat("z", 64) + "\n",
			`test.yaml:5 (document 0, Node n1): metadata.labels: Invalid value: "` + strings.Repeat("z", 64) + `": must be no more than 63 bytes`},
		{"bad label key", "apiVersion: v1\nkind: Node\nmetadata: {name: n1, labels: {'-bad': x}}\n",
			`metadata.labels: Invalid value: "-bad": name part must consist of alphanumeric characters`},
		{"bad node selector", podHead + "  nodeSelector: {'a b': c}\n",
			`test.yaml:8 (document 0, Pod p): spec.nodeSelector: Invalid value: "a b"`},
		{"duplicate container", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: i}, {name: c, image: i}]}\n",
			`spec.containers[1].name: Duplicate value: "c"`},
		{"toleration seconds without NoExecute", podHead + "  tolerations: [{key: k, operator: Exists, effect: NoSchedule, tolerationSeconds: 5}]\n",
			`spec.tolerations[0].effect: Invalid value: "NoSchedule": effect must be NoExecute when tolerationSeconds is set`},
		{"empty taint key", "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nspec: {taints: [{effect: NoSchedule}]}\n",
			`spec.taints[0].key: Required value`},
		{"Gt with a word", podHead + "  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: cores, operator: Gt, values: [many]}]}]}}}\n",
			`spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values[0]: Invalid value: "many": must be an integer`},
		{"preferred weight out of range", podHead + "  affinity: {nodeAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 0, preference: {}}]}}\n",
			`spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 0: must be between 1 and 100, inclusive`},
		{"pod affinity without topology key", podHead + "  affinity: {podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{labelSelector: {matchLabels: {app: web}}}]}}\n",
			`spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Required value`},
		{"zero max skew", podHead + "  topologySpreadConstraints: [{maxSkew: 0, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}]\n",
			`spec.topologySpreadConstraints[0].maxSkew: Invalid value: 0: must be greater than zero`},
		{"user priority class above the limit", "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: gold}\nvalue: 2000000000\n",
			`test.yaml:4 (document 0, PriorityClass gold): value: Invalid value: 2000000000: must not be greater than 1000000000`},
		{"budget over 100%", "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: b}\nspec: {minAvailable: 150%}\n",
			`test.yaml:4 (document 0, PodDisruptionBudget b): spec.minAvailable: Invalid value: "150%": must not be greater than 100%`},
		{"budget both set", "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: b}\nspec: {minAvailable: 1, maxUnavailable: 1}\n",
			`spec: Invalid value:`},
		{"service port zero", "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {selector: {app: web}, ports: [{port: 0}]}\n",
			`spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive`},
		{"namespace name", "apiVersion: v1\nkind: Namespace\nmetadata: {name: Shop}\n",
			`(document 0, Namespace Shop): metadata.name: Invalid value: "Shop"`},
		{"workload template", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers:\n      - name: c\n        resources: {requests: {memory: -5Mi}}\n",
			`test.yaml:11 (document 0, Deployment web): spec.template.spec.containers[0].resources.requests.memory: Invalid value: "-5Mi": must be greater than or equal to 0`},
		// Decoding problems, with lines too.
		{"unquoted yes in a string", "apiVersion: v1\nkind: Node\nmetadata: {name: n1, labels: {gpu: yes}}\n",
			`test.yaml:3 (document 0, Node n1): metadata.labels.gpu: yes reads as a boolean in YAML 1.1 (it would become "true"); quote it: "yes"`},
		{"unquoted version in a string", "apiVersion: v1\nkind: Node\nmetadata: {name: n1, labels: {version: 1.10}}\n",
			`metadata.labels.version: 1.10 reads as a number (it would become "1.1"); quote it: "1.10"`},
		{"the issue's example", "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n---\n---\n# three\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  namespace: web\nspec:\n  containers:\n  - name: c\n    resources:\n      requests:\n        cpu: x\n",
			`test.yaml:18 (document 3, Pod web/a): spec.containers[0].resources.requests.cpu: "x" is not a quantity (e.g. 64Mi or 500m)`},
		{"wrong type", "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: rs}\nspec:\n  replicas: many\n",
			`test.yaml:5 (document 0, ReplicaSet rs): spec.replicas: "many" is not an integer`},
		{"object for a list", podHead + "  tolerations: {key: k}\n",
			`test.yaml:8 (document 0, Pod p): spec.tolerations: want a list, not an object`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := read(t, tc.yaml)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v\nwant it to contain %q", err, tc.want)
			}
			var me *ManifestError
			if !errors.As(err, &me) {
				t.Fatalf("err %T is not a *ManifestError", err)
			}
		})
	}
}

func TestAllProblemsOfADocumentAreReported(t *testing.T) {
	_, err := read(t, podHead+"    resources: {requests: {cpu: '-1', memory: -1}}\n    ports: [{containerPort: 0}]\n")
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{"requests.cpu", "requests.memory", "ports[0].containerPort"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want it to name %s", err, want)
		}
	}
}

// countingReader yields an endless line without a newline, counting what
// was read, and fails past max so a test cannot run away.
type countingReader struct{ n, max int }

func (c *countingReader) Read(p []byte) (int, error) {
	if c.n >= c.max {
		return 0, errors.New("read too far")
	}
	for i := range p {
		p[i] = 'a'
	}
	c.n += len(p)
	return len(p), nil
}

// A document longer than the API server's 3 MiB — here one endless line,
// as a 2 GiB line on standard input was — is refused once it passes the
// bound, not after reading it whole.
func TestLongDocumentsAreRefusedWithoutReadingThemWhole(t *testing.T) {
	r := &countingReader{max: 16 << 20}
	o := &Objects{}
	err := o.Read("-", io.MultiReader(strings.NewReader("apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n---\nx: "), r))
	if err == nil || !strings.Contains(err.Error(), "-:5 (document 1): document is larger than 3 MiB, the API server's limit for one object") {
		t.Fatalf("err = %v", err)
	}
	if r.n > MaxObjectBytes+1<<20 {
		t.Fatalf("read %d bytes to refuse a document over %d", r.n, MaxObjectBytes)
	}
}

func TestManifestFilesAreBounded(t *testing.T) {
	dir := t.TempDir()
	fifo := specialfiles.FIFO(t, dir, "fifo")
	big := specialfiles.Sparse(t, dir, "big.yaml", MaxManifestBytes+1)
	for _, tc := range []struct{ name, path, want string }{
		{"device", "/dev/zero", "/dev/zero: is a character device, not a regular file or a pipe"},
		{"directory", dir, "is a directory"},
		{"too large", big, "larger than 64 MiB, the limit for a manifest file"},
		{"fifo without a writer reads empty", fifo, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := specialfiles.Load(t, 10*time.Second, "LoadFiles", func() error { _, err := LoadFiles(tc.path); return err })
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func FuzzManifests(f *testing.F) {
	f.Add([]byte(podHead + "    resources: {requests: {cpu: 500m, memory: 1Gi}, limits: {cpu: 1}}\n    ports: [{containerPort: 80, hostPort: 8080}]\n  tolerations: [{key: k, operator: Exists}]\n"))
	f.Add([]byte("apiVersion: v1\nkind: Node\nmetadata: {name: n, labels: {zone: a}}\nspec: {taints: [{key: k, value: v, effect: NoSchedule}]}\nstatus: {allocatable: {cpu: 4, memory: 8Gi, pods: 110}}\n"))
	f.Add([]byte("apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: hi}\nvalue: 1000\n---\napiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: b}\nspec: {maxUnavailable: 50%, selector: {matchLabels: {a: b}}}\n"))
	f.Add([]byte("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 2\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: c, image: i, resources: {requests: {cpu: 1e30}}}]}\n"))
	f.Add([]byte("a: &a [1, *a]\n"))
	f.Add([]byte("apiVersion: v1\nkind: List\nitems:\n- &n {apiVersion: v1, kind: Node, metadata: {name: n}}\n- *n\n---\napiVersion: v1\nkind: PodList\nitems: [{metadata: {name: p}, spec: {containers: [{name: c}]}}]\n"))
	f.Add([]byte("apiVersion: v1\nkind: Pod\nmetadata: &m {name: p}\nspec: {<<: *m}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		o := &Objects{}
		if err := o.Read("fuzz", strings.NewReader(string(b))); err != nil {
			var me *ManifestError
			if !errors.As(err, &me) && !strings.Contains(err.Error(), "larger than") {
				t.Fatalf("error %T is neither a ManifestError nor a size refusal: %v", err, err)
			}
			return
		}
		// Whatever was accepted holds what validation promises.
		for _, p := range o.Pods {
			checkName(t, "pod", p.Name)
			checkLabels(t, p.Labels)
			checkLabels(t, p.Spec.NodeSelector)
			for _, c := range append(append([]corev1.Container{}, p.Spec.InitContainers...), p.Spec.Containers...) {
				checkResources(t, c.Resources.Requests)
				checkResources(t, c.Resources.Limits)
				for _, port := range c.Ports {
					if port.ContainerPort < 1 || port.ContainerPort > 65535 || port.HostPort < 0 || port.HostPort > 65535 {
						t.Fatalf("accepted port %+v", port)
					}
				}
			}
		}
		for _, n := range o.Nodes {
			checkName(t, "node", n.Name)
			checkLabels(t, n.Labels)
			checkResources(t, n.Status.Capacity)
			checkResources(t, n.Status.Allocatable)
		}
		for _, pc := range o.PriorityClasses {
			if want, ok := systemClasses[pc.Name]; ok && pc.Value != want ||
				!ok && (pc.Value > SystemCriticalPriority || pc.Value > HighestUserPriority && !strings.HasPrefix(pc.Name, "system-")) {
				t.Fatalf("accepted priority class %s = %d", pc.Name, pc.Value)
			}
		}
		_, _, _ = admit(o)
	})
}

func checkName(t *testing.T, what, name string) {
	if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		t.Fatalf("accepted %s name %q: %v", what, name, msgs)
	}
}

func checkLabels(t *testing.T, l map[string]string) {
	for k, v := range l {
		if len(validation.IsQualifiedName(k)) > 0 || len(validation.IsValidLabelValue(v)) > 0 {
			t.Fatalf("accepted label %q=%q", k, v)
		}
	}
}

func checkResources(t *testing.T, rl corev1.ResourceList) {
	for name, q := range rl {
		limit := MaxQuantity
		if name == corev1.ResourceCPU {
			limit = MaxCPU
		}
		if q.Sign() < 0 || q.Cmp(limit) > 0 {
			t.Fatalf("accepted %s = %s", name, q.String())
		}
		// The scheduler's units fit an int64 with room for sums.
		if q.MilliValue() < 0 || q.Cmp(resource.MustParse("9e15")) > 0 && name == corev1.ResourceCPU {
			t.Fatalf("%s = %s overflows", name, q.String())
		}
	}
}
