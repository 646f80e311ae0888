package plugin

import "github.com/wasmsched/wasmsched/abi"

// Selector is a compiled metav1.LabelSelector. Compile once per cycle
// (PreFilter) and match per pod: matching allocates nothing.
type Selector struct {
	nothing bool // a nil selector matches nothing
	labels  abi.Labels
	exprs   []abi.Requirement
	// keyIDs and valueIDs number exprs' keys and values (Number); nil
	// until then.
	keyIDs   []abi.StrID
	valueIDs [][]abi.StrID
}

// Number looks the selector's keys and values up in the mirror's string
// table (see Handle.StringID), so that matching numbered labels (those of
// node records, and the cycle's pod) compares numbers instead of strings.
// Call it once after NewSelector, in the cycle that uses the selector; the
// result matches exactly as before, only faster.
func (s *Selector) Number(h Handle) {
	if s.nothing || h == nil {
		return
	}
	if len(s.labels) > 0 {
		ls := make(abi.Labels, len(s.labels))
		for i, l := range s.labels {
			ls[i] = abi.Label{Key: l.Key, Value: l.Value, KeyID: h.StringID(l.Key), ValueID: h.StringID(l.Value)}
		}
		s.labels = ls
	}
	if len(s.exprs) > 0 {
		s.keyIDs = make([]abi.StrID, len(s.exprs))
		s.valueIDs = make([][]abi.StrID, len(s.exprs))
		for i := range s.exprs {
			s.keyIDs[i] = h.StringID(s.exprs[i].Key)
			if vs := s.exprs[i].Values; len(vs) > 0 {
				ids := make([]abi.StrID, len(vs))
				for j, v := range vs {
					ids[j] = h.StringID(v)
				}
				s.valueIDs[i] = ids
			}
		}
	}
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
		want := &s.labels[i]
		j := labels.Find(want.Key, want.KeyID)
		if j < 0 || !abi.SameString(labels[j].Value, labels[j].ValueID, want.Value, want.ValueID) {
			return false
		}
	}
	for i := range s.exprs {
		r := &s.exprs[i]
		var keyID abi.StrID
		var valueIDs []abi.StrID
		if s.keyIDs != nil {
			keyID, valueIDs = s.keyIDs[i], s.valueIDs[i]
		}
		j := labels.Find(r.Key, keyID)
		ok := j >= 0
		switch r.Operator {
		case abi.OpIn:
			if !ok || !abi.AnyString(r.Values, valueIDs, labels[j].Value, labels[j].ValueID) {
				return false
			}
		case abi.OpNotIn:
			if ok && abi.AnyString(r.Values, valueIDs, labels[j].Value, labels[j].ValueID) {
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
