package plugin

import (
	"testing"

	"github.com/wasmsched/wasmsched/abi"
)

func TestSelectorSemantics(t *testing.T) {
	web := abi.Labels{{Key: "app", Value: "web"}, {Key: "tier", Value: "front"}}
	for _, tc := range []struct {
		name string
		sel  *abi.LabelSelector
		want bool
	}{
		{"nil matches nothing", nil, false},
		{"empty matches everything", &abi.LabelSelector{}, true},
		{"matchLabels", &abi.LabelSelector{MatchLabels: abi.Labels{{Key: "app", Value: "web"}}}, true},
		{"matchLabels other value", &abi.LabelSelector{MatchLabels: abi.Labels{{Key: "app", Value: "db"}}}, false},
		{"In", &abi.LabelSelector{MatchExpressions: []abi.Requirement{{Key: "tier", Operator: abi.OpIn, Values: []string{"back", "front"}}}}, true},
		{"NotIn", &abi.LabelSelector{MatchExpressions: []abi.Requirement{{Key: "tier", Operator: abi.OpNotIn, Values: []string{"front"}}}}, false},
		{"NotIn of a missing key", &abi.LabelSelector{MatchExpressions: []abi.Requirement{{Key: "zone", Operator: abi.OpNotIn, Values: []string{"a"}}}}, true},
		{"Exists", &abi.LabelSelector{MatchExpressions: []abi.Requirement{{Key: "app", Operator: abi.OpExists}}}, true},
		{"DoesNotExist", &abi.LabelSelector{MatchExpressions: []abi.Requirement{{Key: "app", Operator: abi.OpDoesNotExist}}}, false},
		{"labels and expressions ANDed", &abi.LabelSelector{MatchLabels: abi.Labels{{Key: "app", Value: "web"}},
			MatchExpressions: []abi.Requirement{{Key: "tier", Operator: abi.OpIn, Values: []string{"back"}}}}, false},
	} {
		s, err := NewSelector(tc.sel)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := s.Matches(web); got != tc.want {
			t.Errorf("%s: Matches = %v, want %v", tc.name, got, tc.want)
		}
	}
	if _, err := NewSelector(&abi.LabelSelector{MatchExpressions: []abi.Requirement{{Key: "x", Operator: abi.OpGt, Values: []string{"1"}}}}); err == nil {
		t.Error("Gt accepted in a label selector")
	}
	if _, err := NewSelector(&abi.LabelSelector{MatchExpressions: []abi.Requirement{{Key: "x", Operator: abi.OpIn}}}); err == nil {
		t.Error("In without values accepted")
	}
}
