package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
	sigsyaml "sigs.k8s.io/yaml"
)

// VPodPolicy is a Knative scheduler or descheduler policy: predicates
// decide which adapter pods may take a vreplica, priorities score them.
type VPodPolicy struct {
	Predicates []VPodPolicyEntry
	Priorities []VPodPolicyEntry
	// Lenient is the scheduler's knativeCompat: lenient, set by
	// Defaulted (a policy as parsed is strict): the engine then logs
	// and skips what it would otherwise refuse.
	Lenient bool
}

// VPodPolicyEntry is one predicate or priority, in Knative's encoding.
type VPodPolicyEntry struct {
	// Name is the plugin's name, as written; names no module serves are
	// not refused here but when the engine binds the policy to modules
	// (or, lenient, logged and skipped there, as Knative does).
	Name string
	// Weight multiplies a priority's score (at least 0); 0 for
	// predicates, which have none.
	Weight int64
	// Args is the raw JSON value: normally a JSON string holding the
	// args object (`"{\"MaxSkew\":2}"`), which is what Knative's plugins
	// read; any other JSON value is kept raw and refused by the plugin at
	// run time ("invalid arguments"), as Knative v1.16.0 does. nil when
	// absent or null.
	Args json.RawMessage
	// File, Line and Field say where the entry was written (the
	// configuration or a policy file; Field is the entry's path there,
	// "vpod.schedulers[0].schedulerPolicy.predicates[1]" or
	// "data.predicates[1]"), so that the engine's refusal of it names
	// them; empty or 0 when unknown.
	File  string
	Line  int
	Field string
}

func (p *VPodPolicy) clone() *VPodPolicy {
	if p == nil {
		return nil
	}
	cp := func(es []VPodPolicyEntry) []VPodPolicyEntry {
		if es == nil {
			return nil
		}
		out := make([]VPodPolicyEntry, len(es))
		for i, e := range es {
			out[i] = e
			if e.Args != nil {
				out[i].Args = append(json.RawMessage(nil), e.Args...)
			}
		}
		return out
	}
	return &VPodPolicy{Predicates: cp(p.Predicates), Priorities: cp(p.Priorities), Lenient: p.Lenient}
}

// knative converts a YAML-written policy (checked by Validate) to
// Knative's encoding; field prefixes its errors and the entries' Field,
// and at (nil when unknown) gives their file and lines.
func (c *VPodPolicyConfig) knative(field string, at *sourceAt) (*VPodPolicy, *Error) {
	p := &VPodPolicy{}
	conv := func(list []VPodPluginConfig, kind string) ([]VPodPolicyEntry, *Error) {
		if len(list) == 0 {
			return nil, nil
		}
		out := make([]VPodPolicyEntry, len(list))
		for i, e := range list {
			args, err := knativeArgs(e.Args)
			if err != nil {
				return nil, &Error{Field: fmt.Sprintf("%s.%s[%d].args", field, kind, i), Msg: err.Error()}
			}
			ef := fmt.Sprintf("%s.%s[%d]", field, kind, i)
			out[i] = VPodPolicyEntry{Name: e.Name, Args: args, Field: ef}
			if at != nil {
				out[i].File, out[i].Line = at.file, at.lines.Find(ef+".name")
			}
			if e.Weight != nil {
				out[i].Weight = *e.Weight
			}
		}
		return out, nil
	}
	var err *Error
	if p.Predicates, err = conv(c.Predicates, "predicates"); err != nil {
		return nil, err
	}
	if p.Priorities, err = conv(c.Priorities, "priorities"); err != nil {
		return nil, err
	}
	return p, nil
}

// knativeArgs converts args written in YAML (arriving as JSON) to
// Knative's encoding: an object becomes a JSON string holding its compact
// JSON; a string is kept as it is (it is already the encoding); null or
// nothing is no args.
func knativeArgs(raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	switch raw[0] {
	case '{':
		var b bytes.Buffer
		if err := json.Compact(&b, raw); err != nil {
			return nil, err
		}
		s = b.String()
	case '"':
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("must be an object, or a string holding one as Knative writes it ('{\"MaxSkew\": 2}'), not %s", jsonKind(raw))
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

func jsonKind(raw []byte) string {
	switch raw[0] {
	case '[':
		return "a list"
	case 't', 'f':
		return "a boolean"
	case '{':
		return "an object"
	case '"':
		return "a string"
	}
	return "a number"
}

// ParseKnativePolicy reads a Knative scheduler or descheduler policy as
// Knative users already have it, so it needs no translation:
//
//   - the config-scheduler / config-descheduler ConfigMap unchanged, in
//     YAML or JSON (kind ConfigMap, or just its `data:`), whose
//     data.predicates and data.priorities are strings holding JSON lists
//     of {"Name", "Weight", "Args"}; either key may be absent and other
//     keys are ignored, as Knative reads only those two;
//   - or a bare JSON object {"predicates": [...], "priorities": [...]}.
//
// Entry keys match case-insensitively, as encoding/json (which Knative
// decodes them with) matches them; unknown entry keys are ignored as
// Knative ignores them, and so is a predicate's Weight. Args are kept as
// raw JSON (see VPodPolicyEntry). Refused: malformed JSON, an entry
// without a name, a negative or non-integer weight, and a MaxSkew or
// NumPartitions of Knative's plugins above MaxVPodSkew or
// MaxVPodPartitions (a size no vpod may reach). The error is an
// *Error naming the key ("data.priorities[1].Weight") and, where it can
// be told, the line.
func ParseKnativePolicy(data []byte) (*VPodPolicy, error) {
	p, err := parseKnativePolicy(data)
	if err != nil {
		return nil, err
	}
	return p, nil
}

const policyShape = `a Knative ConfigMap (data.predicates, data.priorities) or an object {"predicates": [...], "priorities": [...]}`

func parseKnativePolicy(data []byte) (*VPodPolicy, *Error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, &Error{Msg: "empty policy: want " + policyShape}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		// What looks like JSON gets JSON's error, with its line: YAML
		// (which JSON also is) describes the same mistake less precisely.
		if t := bytes.TrimSpace(data); t[0] == '{' || t[0] == '[' {
			var v any
			var se *json.SyntaxError
			if errors.As(json.Unmarshal(data, &v), &se) {
				return nil, &Error{Line: lineAt(string(data), se.Offset), Msg: "not valid JSON: " + se.Error()}
			}
		}
		if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
			line, _ := strconv.Atoi(m[1])
			return nil, &Error{Line: line, Msg: "not valid YAML or JSON: " + m[2]}
		}
		return nil, &Error{Msg: "not valid YAML or JSON: " + strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) > 0 {
		root = root.Content[0]
	}
	if root.Kind != yaml.MappingNode {
		return nil, &Error{Line: root.Line, Msg: "want " + policyShape}
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		switch root.Content[i].Value {
		case "data", "kind", "apiVersion", "metadata":
			return configMapPolicy(root)
		}
	}
	return barePolicy(data, root)
}

// configMapPolicy reads a ConfigMap's data.predicates and data.priorities.
func configMapPolicy(root *yaml.Node) (*VPodPolicy, *Error) {
	if k, v := mapValue(root, "kind"); v != nil && v.Value != "ConfigMap" {
		return nil, &Error{Line: k.Line, Field: "kind", Msg: fmt.Sprintf("must be ConfigMap, not %q", v.Value)}
	}
	p := &VPodPolicy{}
	k, data := mapValue(root, "data")
	if data == nil || data.Tag == "!!null" {
		return p, nil
	}
	if data.Kind != yaml.MappingNode {
		return nil, &Error{Line: k.Line, Field: "data", Msg: "want an object"}
	}
	for _, key := range []string{"predicates", "priorities"} {
		k, v := mapValue(data, key)
		if v == nil {
			continue
		}
		field := "data." + key
		if v.Kind != yaml.ScalarNode || v.Tag != "!!str" {
			return nil, &Error{Line: k.Line, Field: field, Msg: "must be a string holding a JSON list (ConfigMap data values are strings): write it as a block scalar (`" + key + ": |`) or quote it"}
		}
		// A literal block keeps the JSON's lines, so an offset in the JSON
		// maps to a line of the document; otherwise name the key's line.
		locate := func(int64) int { return k.Line }
		if v.Style&yaml.LiteralStyle != 0 {
			text := v.Value
			locate = func(off int64) int { return v.Line + lineAt(text, off) }
		}
		entries, err := decodeEntries([]byte(v.Value), field, locate, key == "priorities")
		if err != nil {
			return nil, err
		}
		if key == "predicates" {
			p.Predicates = entries
		} else {
			p.Priorities = entries
		}
	}
	return p, nil
}

// barePolicy reads {"predicates": [...], "priorities": [...]}, keys
// matched case-insensitively. JSON is read as written (so errors have
// lines); YAML is converted to JSON first.
func barePolicy(data []byte, root *yaml.Node) (*VPodPolicy, *Error) {
	lines := map[string]int{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k := root.Content[i]
		var key string
		for _, want := range []string{"predicates", "priorities"} {
			if strings.EqualFold(k.Value, want) {
				key = want
			}
		}
		if key == "" {
			return nil, &Error{Line: k.Line, Field: k.Value, Msg: "unknown field: want " + policyShape}
		}
		if _, dup := lines[key]; dup {
			return nil, &Error{Line: k.Line, Field: k.Value, Msg: fmt.Sprintf("duplicate field (also on line %d)", lines[key])}
		}
		lines[key] = k.Line
	}
	js := data
	fromJSON := json.Valid(data)
	if !fromJSON {
		var err error
		if js, err = sigsyaml.YAMLToJSON(data); err != nil {
			return nil, &Error{Msg: "not valid YAML: " + err.Error()}
		}
	}
	p := &VPodPolicy{}
	dec := json.NewDecoder(bytes.NewReader(js))
	if _, err := dec.Token(); err != nil { // the '{'
		return nil, &Error{Msg: err.Error()}
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, &Error{Msg: err.Error()}
		}
		name, _ := tok.(string)
		key := strings.ToLower(name)
		start := dec.InputOffset()
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, &Error{Line: lines[key], Field: key, Msg: err.Error()}
		}
		// The value starts after the ':' and any space following the key.
		start += int64(len(js[start:]) - len(bytes.TrimLeft(js[start:], " \t\r\n:")))
		locate := func(int64) int { return lines[key] }
		if fromJSON {
			locate = func(off int64) int { return lineAt(string(js), start+off) }
		}
		entries, perr := decodeEntries(raw, key, locate, key == "priorities")
		if perr != nil {
			return nil, perr
		}
		if key == "predicates" {
			p.Predicates = entries
		} else {
			p.Priorities = entries
		}
	}
	return p, nil
}

// mapValue finds key (exactly) in a mapping node: its key and value
// nodes, or nils.
func mapValue(m *yaml.Node, key string) (*yaml.Node, *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i], m.Content[i+1]
		}
	}
	return nil, nil
}

// lineAt is the 1-based line of byte off in text.
func lineAt(text string, off int64) int {
	off = max(0, min(off, int64(len(text))))
	return 1 + strings.Count(text[:off], "\n")
}

// knativeEntry is one entry as Knative's encoding/json decoding sees it.
type knativeEntry struct {
	Name   string
	Weight json.RawMessage
	Args   json.RawMessage
}

// decodeEntries decodes a JSON list of entries. field names it in errors
// ("data.priorities"); locate maps an offset in raw to a line.
func decodeEntries(raw []byte, field string, locate func(int64) int, priorities bool) ([]VPodPolicyEntry, *Error) {
	fail := func(off int64, f string, format string, a ...any) *Error {
		return &Error{Line: locate(off), Field: f, Msg: fmt.Sprintf(format, a...)}
	}
	jsonErr := func(err error, off int64) *Error {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			off = se.Offset
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return fail(int64(len(raw)), field, "unexpected end of JSON input")
		}
		return fail(off, field, "%v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, jsonErr(err, 0)
	}
	if tok == nil { // null: no entries, as encoding/json reads it
		return nil, checkEnd(dec, field, fail)
	}
	if tok != json.Delim('[') {
		return nil, fail(0, field, `want a JSON list of {"Name", "Weight", "Args"} objects`)
	}
	var out []VPodPolicyEntry
	for i := 0; dec.More(); i++ {
		ef := fmt.Sprintf("%s[%d]", field, i)
		off := dec.InputOffset()
		off += int64(len(raw[off:]) - len(bytes.TrimLeft(raw[off:], " \t\r\n,")))
		var el json.RawMessage
		if err := dec.Decode(&el); err != nil {
			return nil, jsonErr(err, off)
		}
		if el[0] != '{' {
			return nil, fail(off, ef, `want an object {"Name", "Weight", "Args"}, not %s`, jsonKind(el))
		}
		var e knativeEntry
		if err := json.Unmarshal(el, &e); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) && te.Field != "" {
				return nil, fail(off, ef+"."+te.Field, "want a %s, not %s", te.Type, te.Value)
			}
			return nil, fail(off, ef, "%v", err)
		}
		if e.Name == "" {
			return nil, fail(off, ef+".Name", "must name a plugin")
		}
		entry := VPodPolicyEntry{Name: e.Name, Line: locate(off), Field: ef}
		if priorities {
			if entry.Weight, err = knativeWeight(e.Weight); err != nil {
				return nil, fail(off, ef+".Weight", "%v", err)
			}
		}
		if a := bytes.TrimSpace(e.Args); len(a) > 0 && string(a) != "null" {
			var b bytes.Buffer
			if err := json.Compact(&b, a); err != nil {
				return nil, fail(off, ef+".Args", "%v", err)
			}
			entry.Args = b.Bytes()
			if arg, msg := checkKnativeArgBound(entry.Name, entry.Args); msg != "" {
				return nil, fail(off, ef+".Args."+arg, "%s", msg)
			}
		}
		out = append(out, entry)
	}
	if _, err := dec.Token(); err != nil { // the ']'
		return nil, jsonErr(err, dec.InputOffset())
	}
	return out, checkEnd(dec, field, fail)
}

// checkEnd refuses anything after the list.
func checkEnd(dec *json.Decoder, field string, fail func(int64, string, string, ...any) *Error) *Error {
	off := dec.InputOffset()
	if _, err := dec.Token(); err != io.EOF {
		return fail(off, field, "unexpected data after the JSON value")
	}
	return nil
}

// knativeWeight reads a priority's Weight: absent or null is 0 (as
// Knative's decoding leaves it); otherwise a non-negative integer.
// Knative decodes it as a uint64, so a negative or fractional weight is
// an error there too.
func knativeWeight(raw json.RawMessage) (int64, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return 0, nil
	}
	w, err := strconv.ParseInt(string(raw), 10, 64)
	switch {
	case err != nil && errors.Is(err, strconv.ErrRange):
		return 0, fmt.Errorf("%s is out of range", raw)
	case err != nil:
		return 0, fmt.Errorf("want a non-negative integer, not %s", raw)
	case w < 0:
		return 0, fmt.Errorf("must be at least 0, not %d", w)
	}
	return w, nil
}

// knativeSizeArg is the arg of one of Knative's plugins that sizes
// something, and its bound.
type knativeSizeArg struct {
	field string
	limit int64
}

// knativeSizeArgs are the sizing args of Knative's plugins by plugin name
// (the builtin knative bundle serves them under these names).
var knativeSizeArgs = map[string]knativeSizeArg{
	"EvenPodSpread":                      {"MaxSkew", MaxVPodSkew},
	"AvailabilityNodePriority":           {"MaxSkew", MaxVPodSkew},
	"AvailabilityZonePriority":           {"MaxSkew", MaxVPodSkew},
	"RemoveWithEvenPodSpreadPriority":    {"MaxSkew", MaxVPodSkew},
	"RemoveWithAvailabilityNodePriority": {"MaxSkew", MaxVPodSkew},
	"RemoveWithAvailabilityZonePriority": {"MaxSkew", MaxVPodSkew},
	"NoMaxResourceCount":                 {"NumPartitions", MaxVPodPartitions},
}

// checkKnativeArgBound checks the sizing arg of a Knative plugin entry
// (args in Knative's encoding: a JSON string holding an object) against
// its bound, reading the args as the plugin does (keys matched
// case-insensitively, the last one counting, null ignored). It returns
// the arg's name and why when the value is above the bound; args that do
// not decode are left for the plugin to refuse ("invalid arguments").
func checkKnativeArgBound(plugin string, args json.RawMessage) (field, msg string) {
	a, ok := knativeSizeArgs[plugin]
	if !ok || args == nil {
		return "", ""
	}
	var s string
	if json.Unmarshal(args, &s) != nil {
		return "", ""
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return "", ""
	}
	var val json.RawMessage
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return "", ""
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return "", ""
		}
		if strings.EqualFold(key, a.field) && string(v) != "null" {
			val = v
		}
	}
	if len(val) == 0 || val[0] == '-' {
		return "", ""
	}
	n, err := strconv.ParseInt(string(val), 10, 64)
	switch {
	case err != nil && errors.Is(err, strconv.ErrRange), err == nil && n > a.limit:
		return a.field, fmt.Sprintf("%s exceeds the limit %d", val, a.limit)
	}
	return "", ""
}
