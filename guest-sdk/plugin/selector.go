package plugin

import "github.com/wasmsched/wasmsched/abi"

// Selector is a compiled metav1.LabelSelector. Compile once per cycle
// (PreFilter) and match per pod: matching allocates nothing.
type Selector struct {
	nothing bool // a nil selector matches nothing
	labels  abi.Labels
	exprs   []abi.Requirement
}

// NewSelector compiles s. A nil s matches nothing; an empty one matches
// every set of labels, as the API defines. Gt and Lt are not label
// selector operators and make an error.
func NewSelector(s *abi.LabelSelector) (Selector, error) {
	if s == nil {
		return Selector{nothing: true}, nil
	}
	for i := range s.MatchExpressions {
		r := &s.MatchExpressions[i]
		switch r.Operator {
		case abi.OpIn, abi.OpNotIn:
			if len(r.Values) == 0 {
				return Selector{}, errSelector("matchExpressions: " + r.Operator.String() + " needs values")
			}
		case abi.OpExists, abi.OpDoesNotExist:
			if len(r.Values) != 0 {
				return Selector{}, errSelector("matchExpressions: " + r.Operator.String() + " takes no values")
			}
		default:
			return Selector{}, errSelector("matchExpressions: operator " + r.Operator.String() + " is not valid in a label selector")
		}
	}
	return Selector{labels: s.MatchLabels, exprs: s.MatchExpressions}, nil
}

type errSelector string

func (e errSelector) Error() string { return "label selector: " + string(e) }

// Empty reports whether the selector matches everything.
func (s *Selector) Empty() bool { return !s.nothing && len(s.labels) == 0 && len(s.exprs) == 0 }

// Matches reports whether labels satisfy the selector: every matchLabels
// pair and every expression.
func (s *Selector) Matches(labels abi.Labels) bool {
	if s.nothing {
		return false
	}
	for i := range s.labels {
		if v, ok := labels.Get(s.labels[i].Key); !ok || v != s.labels[i].Value {
			return false
		}
	}
	for i := range s.exprs {
		r := &s.exprs[i]
		v, ok := labels.Get(r.Key)
		switch r.Operator {
		case abi.OpIn:
			if !ok || !contains(r.Values, v) {
				return false
			}
		case abi.OpNotIn:
			if ok && contains(r.Values, v) {
				return false
			}
		case abi.OpExists:
			if !ok {
				return false
			}
		case abi.OpDoesNotExist:
			if ok {
				return false
			}
		}
	}
	return true
}

func contains(vs []string, v string) bool {
	for _, x := range vs {
		if x == v {
			return true
		}
	}
	return false
}
