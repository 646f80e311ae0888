package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// The two example ConfigMaps of Knative's scheduler README (the seed),
// verbatim.
const (
	seedSchedulerConfigMap = `data:
  predicates: |+
                  [
                    {"Name": "PodFitsResources"},
                    {"Name": "NoMaxResourceCount",
                    "Args": "{\"NumPartitions\": 100}"},
                    {"Name": "EvenPodSpread",
                    "Args": "{\"MaxSkew\": 2}"}
                  ]
  priorities: |+
                  [
                    {"Name": "AvailabilityZonePriority",
                    "Weight": 10,
                    "Args":  "{\"MaxSkew\": 2}"},
                    {"Name": "LowestOrdinalPriority",
                    "Weight": 2}
                  ]
`
	seedDeschedulerConfigMap = `data:
  priorities: |+
                  [
                    {"Name": "RemoveWithEvenPodSpreadPriority",
                    "Weight": 10,
                    "Args": "{\"MaxSkew\": 2}"},
                    {"Name": "RemoveWithAvailabilityZonePriority",
                    "Weight": 10,
                    "Args":  "{\"MaxSkew\": 2}"},
                    {"Name": "RemoveWithHighestOrdinalPriority",
                    "Weight": 2}
                  ]
`
)

// The entries the seed's ConfigMaps hold, read off them by hand: Args are
// the JSON string literals as written.
var (
	seedSchedulerPolicy = &VPodPolicy{
		Predicates: []VPodPolicyEntry{
			{Name: "PodFitsResources"},
			{Name: "NoMaxResourceCount", Args: json.RawMessage(`"{\"NumPartitions\": 100}"`)},
			{Name: "EvenPodSpread", Args: json.RawMessage(`"{\"MaxSkew\": 2}"`)},
		},
		Priorities: []VPodPolicyEntry{
			{Name: "AvailabilityZonePriority", Weight: 10, Args: json.RawMessage(`"{\"MaxSkew\": 2}"`)},
			{Name: "LowestOrdinalPriority", Weight: 2},
		},
	}
	seedDeschedulerPolicy = &VPodPolicy{
		Priorities: []VPodPolicyEntry{
			{Name: "RemoveWithEvenPodSpreadPriority", Weight: 10, Args: json.RawMessage(`"{\"MaxSkew\": 2}"`)},
			{Name: "RemoveWithAvailabilityZonePriority", Weight: 10, Args: json.RawMessage(`"{\"MaxSkew\": 2}"`)},
			{Name: "RemoveWithHighestOrdinalPriority", Weight: 2},
		},
	}
)

func mustParsePolicy(t *testing.T, doc string) *VPodPolicy {
	t.Helper()
	p, err := ParseKnativePolicy([]byte(doc))
	if err != nil {
		t.Fatalf("ParseKnativePolicy: %v", err)
	}
	return noPos(p)
}

// noPos is p without the entries' positions (File, Line, Field), which
// the tests of what a policy says do not spell out.
func noPos(p *VPodPolicy) *VPodPolicy {
	if p == nil {
		return nil
	}
	p = p.clone()
	for _, es := range [][]VPodPolicyEntry{p.Predicates, p.Priorities} {
		for i := range es {
			es[i].File, es[i].Line, es[i].Field = "", 0, ""
		}
	}
	return p
}

func TestParseKnativePolicySeedExamples(t *testing.T) {
	if got := mustParsePolicy(t, seedSchedulerConfigMap); !reflect.DeepEqual(got, seedSchedulerPolicy) {
		t.Errorf("config-scheduler = %s\nwant %s", dumpPolicy(got), dumpPolicy(seedSchedulerPolicy))
	}
	// The descheduler has no predicates key: none, not an error.
	if got := mustParsePolicy(t, seedDeschedulerConfigMap); !reflect.DeepEqual(got, seedDeschedulerPolicy) {
		t.Errorf("config-descheduler = %s\nwant %s", dumpPolicy(got), dumpPolicy(seedDeschedulerPolicy))
	}
}

// The same policy in every shape Knative users have it in parses to the
// same entries.
func TestParseKnativePolicyShapes(t *testing.T) {
	preds := `[{"Name": "PodFitsResources"}, {"Name": "NoMaxResourceCount", "Args": "{\"NumPartitions\": 100}"}, {"Name": "EvenPodSpread", "Args": "{\"MaxSkew\": 2}"}]`
	prios := `[{"Name": "AvailabilityZonePriority", "Weight": 10, "Args": "{\"MaxSkew\": 2}"}, {"Name": "LowestOrdinalPriority", "Weight": 2}]`
	quote := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	for name, doc := range map[string]string{
		"full ConfigMap in YAML":           "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: config-scheduler\n  namespace: knative-eventing\ndata:\n  _example: ignored\n  predicates: '" + preds + "'\n  priorities: |\n    " + prios + "\n",
		"ConfigMap as kubectl prints JSON": `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "config-scheduler"}, "data": {"predicates": ` + quote(preds) + `, "priorities": ` + quote(prios) + `}}`,
		"bare JSON":                        `{"predicates": ` + preds + `, "priorities": ` + prios + `}`,
		"bare JSON, keys in any case":      `{"Predicates": ` + preds + `, "PRIORITIES": ` + prios + `}`,
		"bare YAML":                        "predicates: " + preds + "\npriorities: " + prios + "\n",
	} {
		t.Run(name, func(t *testing.T) {
			if got := mustParsePolicy(t, doc); !reflect.DeepEqual(got, seedSchedulerPolicy) {
				t.Errorf("policy = %s\nwant %s", dumpPolicy(got), dumpPolicy(seedSchedulerPolicy))
			}
		})
	}
}

func TestParseKnativePolicyEntries(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		want      *VPodPolicy
	}{
		{"keys match case-insensitively, like encoding/json",
			`{"priorities": [{"name": "P", "WEIGHT": 3, "args": "{}"}]}`,
			&VPodPolicy{Priorities: []VPodPolicyEntry{{Name: "P", Weight: 3, Args: json.RawMessage(`"{}"`)}}}},
		{"args that are not a string are kept raw (compacted)",
			`{"predicates": [{"Name": "EvenPodSpread", "Args": {"MaxSkew": 2}}, {"Name": "X", "Args": 7}]}`,
			&VPodPolicy{Predicates: []VPodPolicyEntry{{Name: "EvenPodSpread", Args: json.RawMessage(`{"MaxSkew":2}`)}, {Name: "X", Args: json.RawMessage(`7`)}}}},
		{"null args are no args",
			`{"predicates": [{"Name": "A", "Args": null}]}`,
			&VPodPolicy{Predicates: []VPodPolicyEntry{{Name: "A"}}}},
		{"absent or null weight is 0, as Knative decodes it",
			`{"priorities": [{"Name": "A"}, {"Name": "B", "Weight": null}, {"Name": "C", "Weight": 0}]}`,
			&VPodPolicy{Priorities: []VPodPolicyEntry{{Name: "A"}, {Name: "B"}, {Name: "C"}}}},
		{"Knative's 0..10 is not enforced",
			`{"priorities": [{"Name": "A", "Weight": 1000000}]}`,
			&VPodPolicy{Priorities: []VPodPolicyEntry{{Name: "A", Weight: 1000000}}}},
		{"a predicate's weight is ignored, as Knative has no field for it",
			`{"predicates": [{"Name": "A", "Weight": "heavy"}]}`,
			&VPodPolicy{Predicates: []VPodPolicyEntry{{Name: "A"}}}},
		{"unknown entry keys are ignored, unknown plugins kept",
			`{"predicates": [{"Name": "NoSuchPlugin", "Comment": "x"}]}`,
			&VPodPolicy{Predicates: []VPodPolicyEntry{{Name: "NoSuchPlugin"}}}},
		{"null and empty lists",
			`{"predicates": null, "priorities": []}`,
			&VPodPolicy{}},
		{"a ConfigMap without data is an empty policy",
			"kind: ConfigMap\nmetadata: {name: config-descheduler}\n",
			&VPodPolicy{}},
		{"HTML-ish characters stay as written",
			`{"predicates": [{"Name": "A", "Args": "{\"Zone\": \"<a&b>\"}"}]}`,
			&VPodPolicy{Predicates: []VPodPolicyEntry{{Name: "A", Args: json.RawMessage(`"{\"Zone\": \"<a&b>\"}"`)}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := mustParsePolicy(t, tc.doc)
			norm := func(p *VPodPolicy) *VPodPolicy { // nil and empty lists alike
				if len(p.Predicates) == 0 {
					p.Predicates = nil
				}
				if len(p.Priorities) == 0 {
					p.Priorities = nil
				}
				return p
			}
			if !reflect.DeepEqual(norm(got), tc.want) {
				t.Errorf("policy = %s\nwant %s", dumpPolicy(got), dumpPolicy(tc.want))
			}
		})
	}
}

func TestParseKnativePolicyErrorsNameTheKey(t *testing.T) {
	cm := func(key, value string) string { return "kind: ConfigMap\ndata:\n  " + key + ": |\n    " + value + "\n" }
	for _, tc := range []struct{ name, doc, want string }{
		{"malformed JSON", cm("priorities", `[{"Name": "A", "Weight": 1}, x]`),
			"line 4: data.priorities: invalid character 'x' looking for beginning of value"},
		{"malformed JSON on a later line of the block", "kind: ConfigMap\ndata:\n  predicates: |+\n    [\n      {\"Name\": \"A\"},\n      {\"Name\": \"B\",}\n    ]\n",
			"line 6: data.predicates: invalid character '}' looking for beginning of object key string"},
		{"unterminated list", cm("predicates", `[{"Name": "A"}`), "data.predicates: unexpected end of JSON input"},
		{"empty value", "data: {predicates: ''}", "data.predicates: unexpected end of JSON input"},
		{"negative weight", cm("priorities", `[{"Name": "A", "Weight": 1}, {"Name": "B", "Weight": -1}]`),
			"line 4: data.priorities[1].Weight: must be at least 0, not -1"},
		{"fractional weight", cm("priorities", `[{"Name": "A", "Weight": 2.5}]`), "data.priorities[0].Weight: want a non-negative integer, not 2.5"},
		{"string weight", cm("priorities", `[{"Name": "A", "Weight": "10"}]`), `data.priorities[0].Weight: want a non-negative integer, not "10"`},
		{"weight out of range", cm("priorities", `[{"Name": "A", "Weight": 99999999999999999999}]`), "data.priorities[0].Weight: 99999999999999999999 is out of range"},
		{"entry without a name", cm("predicates", `[{"Name": "A"}, {"Args": "{}"}]`), "data.predicates[1].Name: must name a plugin"},
		{"name not a string", cm("predicates", `[{"Name": 3}]`), "data.predicates[0].Name: want a string, not number"},
		{"entry not an object", cm("predicates", `["PodFitsResources"]`), `data.predicates[0]: want an object {"Name", "Weight", "Args"}, not a string`},
		{"list not a list", cm("priorities", `{"Name": "A"}`), `data.priorities: want a JSON list of {"Name", "Weight", "Args"} objects`},
		{"trailing data", cm("priorities", `[] []`), "data.priorities: unexpected data after the JSON value"},
		{"data value not a string", "kind: ConfigMap\ndata:\n  predicates:\n  - {Name: A}\n",
			"line 3: data.predicates: must be a string holding a JSON list (ConfigMap data values are strings)"},
		{"data not an object", "kind: ConfigMap\ndata: [x]\n", "line 2: data: want an object"},
		{"not a ConfigMap", "kind: Secret\ndata: {}\n", `line 1: kind: must be ConfigMap, not "Secret"`},
		{"bare unknown key", `{"predicates": [], "priorites": []}`, "line 1: priorites: unknown field: want a Knative ConfigMap"},
		{"bare malformed", "{\"predicates\":\n [{\"Name\": \"A\"},\n {\"Name\": \"B\" \"Args\": 1}]}", `line 3: not valid JSON: invalid character '"' after object key:value pair`},
		{"bare negative weight on its line", "{\"priorities\": [\n  {\"Name\": \"A\", \"Weight\": 1},\n  {\"Name\": \"B\", \"Weight\": -2}\n]}",
			"line 3: priorities[1].Weight: must be at least 0, not -2"},
		{"not an object", "[1, 2]", "line 1: want a Knative ConfigMap"},
		{"MaxSkew above the limit", cm("priorities", `[{"Name": "AvailabilityZonePriority", "Weight": 1, "Args": "{\"MaxSkew\": 2147483647}"}]`),
			"line 4: data.priorities[0].Args.MaxSkew: 2147483647 exceeds the limit 100000"},
		{"NumPartitions above the limit, last key counts", cm("predicates", `[{"Name": "NoMaxResourceCount", "Args": "{\"NumPartitions\": 1, \"NUMPARTITIONS\": 100001}"}]`),
			"data.predicates[0].Args.NumPartitions: 100001 exceeds the limit 100000"},
		{"empty", " \n", "empty policy"},
		{"not YAML", "data: [\n", "not valid YAML or JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseKnativePolicy([]byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v\nwant it to contain %q", err, tc.want)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("err is a %T, want *Error", err)
			}
		})
	}
}

// dumpPolicy writes a policy readably, Args as text.
func dumpPolicy(p *VPodPolicy) string {
	if p == nil {
		return "<nil>"
	}
	var b strings.Builder
	for _, l := range []struct {
		n  string
		es []VPodPolicyEntry
	}{{"predicates", p.Predicates}, {"priorities", p.Priorities}} {
		fmt.Fprintf(&b, "%s:", l.n)
		for _, e := range l.es {
			fmt.Fprintf(&b, " {%s w=%d args=%s}", e.Name, e.Weight, e.Args)
		}
		b.WriteString("; ")
	}
	return b.String()
}

func FuzzParseKnativePolicy(f *testing.F) {
	f.Add([]byte(seedSchedulerConfigMap))
	f.Add([]byte(seedDeschedulerConfigMap))
	f.Add([]byte(`{"predicates": [{"Name": "A", "Args": {"x": 1}}], "priorities": [{"name": "B", "weight": 3}]}`))
	f.Add([]byte(`{"kind": "ConfigMap", "data": {"priorities": "[{\"Name\": \"B\", \"Weight\": -1}]"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParseKnativePolicy(b)
		if err != nil {
			return
		}
		// What is accepted is what the engine can use as-is.
		for _, es := range [][]VPodPolicyEntry{p.Predicates, p.Priorities} {
			for _, e := range es {
				if e.Name == "" || e.Weight < 0 || e.Args != nil && !json.Valid(e.Args) {
					t.Fatalf("accepted entry %+v", e)
				}
			}
		}
	})
}
