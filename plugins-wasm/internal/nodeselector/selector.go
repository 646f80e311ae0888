package nodeselector

import (
	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
	"github.com/wasmsched/wasmsched/plugins-wasm/internal/argparse"
	"github.com/wasmsched/wasmsched/plugins-wasm/internal/kubename"
)

// Package nodeselector is the node selector machinery of
// k8s.io/component-helpers' nodeaffinity package, shared by the plugins
// that match pods' node affinity (NodeAffinity, PodTopologySpread's
// nodeAffinityPolicy): compiled once per cycle (or once per plugin for
// args) into a form that matches a node without allocating.

// ObjectNameField is the only node field kube-scheduler knows in matchFields.
const ObjectNameField = "metadata.name"

// requirement is a compiled matchExpressions entry.
type requirement struct {
	key    string
	op     abi.Operator
	values []string
	bound  int64 // the integer operand of Gt and Lt
	// keyID and valueIDs number key and values for this cycle (number);
	// zero and nil compare strings.
	keyID    abi.StrID
	valueIDs []abi.StrID
}

// number looks the requirement's key and values up in the mirror's
// string table; the numbers hold for the cycle they were looked up in.
func (r *requirement) number(h plugin.Handle) {
	r.keyID = h.StringID(r.key)
	if r.op != abi.OpIn && r.op != abi.OpNotIn {
		return
	}
	if cap(r.valueIDs) < len(r.values) {
		r.valueIDs = make([]abi.StrID, len(r.values))
	}
	r.valueIDs = r.valueIDs[:len(r.values)]
	for i, v := range r.values {
		r.valueIDs[i] = h.StringID(v)
	}
}

// number numbers every requirement of the term.
func (t *term) number(h plugin.Handle) {
	for i := range t.exprs {
		t.exprs[i].number(h)
	}
}

// fieldRequirement is a compiled matchFields entry: field == value (In)
// or field != value (NotIn).
type fieldRequirement struct {
	key   string
	equal bool
	value string
}

// term is a compiled node selector term: expressions and fields ANDed. A
// term that failed to parse (err set) matches no node, as upstream.
type term struct {
	exprs  []requirement
	fields []fieldRequirement
	err    error
}

// isEmptyTerm: a term with neither expressions nor fields selects nothing
// and is dropped before compiling.
func isEmptyTerm(t *abi.NodeSelectorTerm) bool {
	return len(t.MatchExpressions) == 0 && len(t.MatchFields) == 0
}

// compileTerm validates and compiles t with apimachinery's rules; path
// names t in error messages.
func compileTerm(t *abi.NodeSelectorTerm, path string) term {
	var c term
	if len(t.MatchExpressions) > 0 {
		c.exprs = make([]requirement, 0, len(t.MatchExpressions))
		for i := range t.MatchExpressions {
			r, err := compileRequirement(&t.MatchExpressions[i], argparse.Index(argparse.Child(path, "matchExpressions"), i))
			if err != nil {
				c.err = err
				return c
			}
			c.exprs = append(c.exprs, r)
		}
	}
	if len(t.MatchFields) > 0 {
		c.fields = make([]fieldRequirement, 0, len(t.MatchFields))
		for i := range t.MatchFields {
			r, err := compileFieldRequirement(&t.MatchFields[i], argparse.Index(argparse.Child(path, "matchFields"), i))
			if err != nil {
				c.err = err
				return c
			}
			c.fields = append(c.fields, r)
		}
	}
	return c
}

// compileRequirement applies labels.NewRequirement's checks: a qualified
// key; In/NotIn need values, Exists/DoesNotExist take none, Gt/Lt take
// exactly one integer; every value must be a valid label value.
func compileRequirement(r *abi.Requirement, path string) (requirement, error) {
	c := requirement{key: r.Key, op: r.Operator, values: r.Values}
	if r.Operator > abi.OpLt {
		return c, argparse.Errorf(argparse.Child(path, "operator"),
			"Unsupported value: "+argparse.Quote(r.Operator.String())+`: supported values: "DoesNotExist", "Exists", "Gt", "In", "Lt", "NotIn"`)
	}
	if !kubename.IsQualifiedName(r.Key) {
		return c, argparse.Invalid(argparse.Child(path, "key"), argparse.Quote(r.Key), "must be a qualified name (an optional DNS subdomain prefix and '/', then at most 63 alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric)")
	}
	valuesPath := argparse.Child(path, "values")
	switch r.Operator {
	case abi.OpIn, abi.OpNotIn:
		if len(r.Values) == 0 {
			return c, argparse.Invalid(valuesPath, "[]", "for 'in', 'notin' operators, values set can't be empty")
		}
	case abi.OpExists, abi.OpDoesNotExist:
		if len(r.Values) != 0 {
			return c, argparse.Invalid(valuesPath, quoteList(r.Values), "values set must be empty for exists and does not exist")
		}
	case abi.OpGt, abi.OpLt:
		if len(r.Values) != 1 {
			return c, argparse.Invalid(valuesPath, quoteList(r.Values), "for 'Gt', 'Lt' operators, exactly one value is required")
		}
		n, ok := kubename.ParseInt64(r.Values[0])
		if !ok {
			return c, argparse.Invalid(argparse.Index(valuesPath, 0), argparse.Quote(r.Values[0]), "for 'Gt', 'Lt' operators, the value must be an integer")
		}
		c.bound = n
	}
	for i, v := range r.Values {
		if !kubename.IsLabelValue(v) {
			return c, argparse.Invalid(argparse.Index(valuesPath, i), argparse.Quote(v), "must be a valid label value (at most 63 alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric)")
		}
	}
	return c, nil
}

// compileFieldRequirement: field selectors support In and NotIn with
// exactly one value.
func compileFieldRequirement(r *abi.Requirement, path string) (fieldRequirement, error) {
	c := fieldRequirement{key: r.Key, equal: r.Operator == abi.OpIn}
	if r.Operator != abi.OpIn && r.Operator != abi.OpNotIn {
		return c, argparse.Errorf(argparse.Child(path, "operator"),
			"Unsupported value: "+argparse.Quote(r.Operator.String())+`: supported values: "In", "NotIn"`)
	}
	if len(r.Values) != 1 {
		return c, argparse.Invalid(argparse.Child(path, "values"), quoteList(r.Values), "must have one element")
	}
	c.value = r.Values[0]
	return c, nil
}

func quoteList(vs []string) string {
	s := "["
	for i, v := range vs {
		if i > 0 {
			s += ", "
		}
		s += argparse.Quote(v)
	}
	return s + "]"
}

// matches reports whether node satisfies every expression and field.
func (t *term) matches(node *abi.Node) bool {
	if t.err != nil {
		return false
	}
	for i := range t.exprs {
		if !t.exprs[i].matches(node) {
			return false
		}
	}
	// Fields are only compared when the node has any (a name), as the
	// field set kube builds for a node is empty otherwise.
	if len(t.fields) > 0 && node.Name != "" {
		for i := range t.fields {
			f := &t.fields[i]
			var v string // fields other than metadata.name read as ""
			if f.key == ObjectNameField {
				v = node.Name
			}
			if (v == f.value) != f.equal {
				return false
			}
		}
	}
	return true
}

// matches applies labels.Requirement.Matches to a node's labels. It runs
// per node and term, so it takes two pointers (in a Wasm guest every
// parameter past the first few is passed on the stack, and reloading them
// cost more than the matching) and compares numbers in loops of its own
// when the requirement and the node's labels are numbered, as they are
// for a mirrored node; abi.Labels.Find and abi.AnyString, which it would
// otherwise call with seven and ten words of parameters, answer the rest.
func (r *requirement) matches(node *abi.Node) bool {
	ls := node.Labels
	j := -1
	if id := r.keyID; id != 0 && id != abi.StrAbsent {
		for i := range ls {
			if k := ls[i].KeyID; k == id || (k == 0 && ls[i].Key == r.key) {
				j = i
				break
			}
		}
	} else {
		j = ls.Find(r.key, r.keyID)
	}
	ok := j >= 0
	switch r.op {
	case abi.OpIn:
		return ok && r.hasValue(&ls[j])
	case abi.OpNotIn:
		return !ok || !r.hasValue(&ls[j])
	case abi.OpExists:
		return ok
	case abi.OpDoesNotExist:
		return !ok
	case abi.OpGt, abi.OpLt:
		if !ok {
			return false
		}
		n, valid := kubename.ParseInt64(ls[j].Value)
		if !valid {
			return false
		}
		if r.op == abi.OpGt {
			return n > r.bound
		}
		return n < r.bound
	}
	return false
}

// hasValue reports whether l's value is one of r's values, as
// abi.AnyString(r.values, r.valueIDs, l.Value, l.ValueID) does, comparing
// numbers without that call's ten words of parameters when l's value and
// all of r's are numbered.
func (r *requirement) hasValue(l *abi.Label) bool {
	vid := l.ValueID
	if vid == 0 || vid == abi.StrAbsent || len(r.valueIDs) < len(r.values) {
		return abi.AnyString(r.values, r.valueIDs, l.Value, vid)
	}
	for i, id := range r.valueIDs[:len(r.values)] {
		if id == vid || (id == 0 && r.values[i] == l.Value) {
			return true
		}
	}
	return false
}

// Selector is a compiled NodeSelector: terms ORed. Empty terms are
// dropped and terms that failed to parse never match, so a selector with
// no usable term matches no node.
type Selector struct {
	terms []term
}

// Compile compiles ns, returning the first parse error too:
// args treat it as fatal, pods ignore it (kube's LazyErrorNodeSelector).
func Compile(ns *abi.NodeSelector, path string) (*Selector, error) {
	s := &Selector{terms: make([]term, 0, len(ns.Terms))}
	var first error
	termsPath := argparse.Child(path, "nodeSelectorTerms")
	for i := range ns.Terms {
		if isEmptyTerm(&ns.Terms[i]) {
			continue
		}
		t := compileTerm(&ns.Terms[i], argparse.Index(termsPath, i))
		if t.err != nil && first == nil {
			first = t.err
		}
		s.terms = append(s.terms, t)
	}
	return s, first
}

// matches reports whether any term matches node.
// Number looks the selector's keys and values up in the mirror's string
// table (plugin.Handle.StringID), so matching numbered node labels
// compares numbers. The numbers hold for the cycle they were looked up
// in: call it again in every cycle that matches with the selector.
func (s *Selector) Number(h plugin.Handle) {
	if s == nil || h == nil {
		return
	}
	for i := range s.terms {
		s.terms[i].number(h)
	}
}

func (s *Selector) Matches(node *abi.Node) bool {
	for i := range s.terms {
		if s.terms[i].matches(node) {
			return true
		}
	}
	return false
}

// Preferred is a compiled weighted preference.
type Preferred struct {
	term
	weight int64
}

// CompilePreferred compiles weighted terms as NewPreferredSchedulingTerms:
// zero weights and empty terms are dropped; any parse error is returned.
func CompilePreferred(pts []abi.PreferredSchedulingTerm, path string) ([]Preferred, error) {
	out := make([]Preferred, 0, len(pts))
	for i := range pts {
		pt := &pts[i]
		if pt.Weight == 0 || isEmptyTerm(&pt.Term) {
			continue
		}
		t := compileTerm(&pt.Term, argparse.Child(argparse.Index(path, i), "preference"))
		if t.err != nil {
			return nil, t.err
		}
		out = append(out, Preferred{term: t, weight: int64(pt.Weight)})
	}
	return out, nil
}

// ScorePreferred sums the weights of the terms node matches.
// NumberPreferred is Selector.Number for preferred terms.
func NumberPreferred(pts []Preferred, h plugin.Handle) {
	if h == nil {
		return
	}
	for i := range pts {
		pts[i].number(h)
	}
}

func ScorePreferred(pts []Preferred, node *abi.Node) int64 {
	var sum int64
	for i := range pts {
		if pts[i].matches(node) {
			sum += pts[i].weight
		}
	}
	return sum
}

// Required is a pod's nodeSelector ANDed with its required node affinity,
// immutable once built, so Clone shares it.
type Required struct {
	nodeSelector abi.Labels
	affinity     *Selector
}

// Clone implements plugin.StateData.
func (r *Required) Clone() plugin.StateData { return r }

// ForPod compiles the pod's required node constraints. Terms that fail to
// parse match nothing; the error is ignored for backwards compatibility,
// as upstream. h numbers them for the cycle (nil compares strings).
func ForPod(pod *abi.Pod, h plugin.Handle) *Required {
	r := &Required{nodeSelector: pod.NodeSelector}
	if na := pod.NodeAffinity; na != nil && na.Required != nil {
		r.affinity, _ = Compile(na.Required, "")
		r.affinity.Number(h)
	}
	return r
}

// Matches reports whether the node satisfies both.
func (r *Required) Matches(node *abi.Node) bool {
	for i := range r.nodeSelector {
		want := &r.nodeSelector[i]
		j := node.Labels.Find(want.Key, want.KeyID)
		if j < 0 || !abi.SameString(node.Labels[j].Value, node.Labels[j].ValueID, want.Value, want.ValueID) {
			return false
		}
	}
	return r.affinity == nil || r.affinity.Matches(node)
}
