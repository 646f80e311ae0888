package noderesources

import (
	"reflect"
	"testing"

	"github.com/wasmsched/wasmsched/guest-sdk/plugintest"
)

func TestParseFitArgs(t *testing.T) {
	tests := []struct {
		name    string
		args    string
		want    *ScoringStrategy // checked when set
		wantErr string
	}{
		{name: "defaults", args: "",
			want: &ScoringStrategy{Type: LeastAllocated, Resources: []ResourceSpec{{"cpu", 1}, {"memory", 1}}}},
		{name: "strategy without resources gets the default resources",
			args: `{"scoringStrategy":{"type":"MostAllocated"}}`,
			want: &ScoringStrategy{Type: MostAllocated, Resources: []ResourceSpec{{"cpu", 1}, {"memory", 1}}}},
		{name: "weight 0 or missing defaults to 1",
			args: `{"scoringStrategy":{"type":"LeastAllocated","resources":[{"name":"cpu","weight":0},{"name":"memory"}]}}`,
			want: &ScoringStrategy{Type: LeastAllocated, Resources: []ResourceSpec{{"cpu", 1}, {"memory", 1}}}},
		{name: "shape",
			args: `{"scoringStrategy":{"type":"RequestedToCapacityRatio","requestedToCapacityRatio":{"shape":[{"utilization":0,"score":0},{"utilization":100,"score":10}]}}}`,
			want: &ScoringStrategy{Type: RequestedToCapacityRatio, Resources: []ResourceSpec{{"cpu", 1}, {"memory", 1}},
				Shape: []UtilizationShapePoint{{0, 0}, {100, 10}}, HasShape: true}},
		{name: "apiVersion and kind are accepted",
			args: `{"apiVersion":"kubescheduler.config.k8s.io/v1","kind":"NodeResourcesFitArgs"}`},
		{name: "weight above 100",
			args:    `{"scoringStrategy":{"type":"LeastAllocated","resources":[{"name":"cpu","weight":1},{"name":"memory","weight":101}]}}`,
			wantErr: "scoringStrategy.resources[1].weight: Invalid value: 101: resource weight of memory not in valid range (0, 100]"},
		{name: "negative weight",
			args:    `{"scoringStrategy":{"type":"LeastAllocated","resources":[{"name":"cpu","weight":-1}]}}`,
			wantErr: "scoringStrategy.resources[0].weight: Invalid value: -1: resource weight of cpu not in valid range (0, 100]"},
		{name: "missing type",
			args:    `{"scoringStrategy":{"resources":[{"name":"cpu","weight":1}]}}`,
			wantErr: `scoringStrategy.type: Unsupported value: "": supported values: "LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"`},
		{name: "unknown type",
			args:    `{"scoringStrategy":{"type":"Random"}}`,
			wantErr: `scoringStrategy.type: Unsupported value: "Random": supported values: "LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"`},
		{name: "ratio without shape",
			args:    `{"scoringStrategy":{"type":"RequestedToCapacityRatio"}}`,
			wantErr: "scoringStrategy.requestedToCapacityRatio: Required value: a shape is needed for type RequestedToCapacityRatio"},
		{name: "a shape for another type",
			args:    `{"scoringStrategy":{"type":"MostAllocated","requestedToCapacityRatio":{"shape":[{"utilization":0,"score":0}]}}}`,
			wantErr: "scoringStrategy.requestedToCapacityRatio: Forbidden: must be nil when type is not RequestedToCapacityRatio"},
		{name: "empty shape",
			args:    `{"scoringStrategy":{"type":"RequestedToCapacityRatio","requestedToCapacityRatio":{"shape":[]}}}`,
			wantErr: "scoringStrategy.requestedToCapacityRatio.shape: Required value: at least one point must be specified"},
		{name: "shape not increasing",
			args:    `{"scoringStrategy":{"type":"RequestedToCapacityRatio","requestedToCapacityRatio":{"shape":[{"utilization":50,"score":1},{"utilization":50,"score":2}]}}}`,
			wantErr: "scoringStrategy.requestedToCapacityRatio.shape[1].utilization: Invalid value: 50: values must be sorted in increasing order"},
		{name: "utilization out of range",
			args:    `{"scoringStrategy":{"type":"RequestedToCapacityRatio","requestedToCapacityRatio":{"shape":[{"utilization":10,"score":1},{"utilization":110,"score":2}]}}}`,
			wantErr: "scoringStrategy.requestedToCapacityRatio.shape[1].utilization: Invalid value: 110: not in valid range [0, 100]"},
		{name: "score out of range",
			args:    `{"scoringStrategy":{"type":"RequestedToCapacityRatio","requestedToCapacityRatio":{"shape":[{"utilization":10,"score":11}]}}}`,
			wantErr: "scoringStrategy.requestedToCapacityRatio.shape[0].score: Invalid value: 11: not in valid range [0, 10]"},
		{name: "ignored resource group with a slash",
			args:    `{"ignoredResourceGroups":["example.com/gpu"]}`,
			wantErr: `ignoredResourceGroups[0]: Invalid value: "example.com/gpu": resource group name can't contain '/'`},
		{name: "ignored resource not a qualified name",
			args:    `{"ignoredResources":["ok.io/a","-bad"]}`,
			wantErr: `ignoredResources[1]: Invalid value: "-bad": must be a qualified name`},
		{name: "unknown field",
			args:    `{"scoringStrategy":{"type":"LeastAllocated","shape":[]}}`,
			wantErr: "scoringStrategy.shape: unknown field"},
		{name: "wrong type",
			args:    `{"ignoredResources":"example.com/gpu"}`,
			wantErr: "ignoredResources: expected list, got string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := ParseFitArgs(plugintest.Args(t, tt.args))
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				if _, err := NewFit(plugintest.Args(t, tt.args), &plugintest.Handle{}); err == nil {
					t.Error("NewFit accepted invalid args")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.want != nil && !reflect.DeepEqual(a.ScoringStrategy, *tt.want) {
				t.Errorf("strategy = %+v, want %+v", a.ScoringStrategy, *tt.want)
			}
		})
	}
}

func TestParseBalancedAllocationArgs(t *testing.T) {
	tests := []struct {
		name    string
		args    string
		want    []ResourceSpec
		wantErr string
	}{
		{name: "defaults", want: []ResourceSpec{{"cpu", 1}, {"memory", 1}}},
		{name: "custom", args: `{"resources":[{"name":"cpu"},{"name":"nvidia.com/gpu","weight":1}]}`,
			want: []ResourceSpec{{"cpu", 1}, {"nvidia.com/gpu", 1}}},
		{name: "weight must be 1", args: `{"resources":[{"name":"cpu","weight":2}]}`,
			wantErr: "resources[0].weight: Invalid value: 2: must be 1"},
		{name: "duplicate", args: `{"resources":[{"name":"cpu"},{"name":"cpu"}]}`,
			wantErr: `resources[1].name: Duplicate value: "cpu"`},
		{name: "unknown field", args: `{"resource":[]}`, wantErr: "resource: unknown field"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := ParseBalancedAllocationArgs(plugintest.Args(t, tt.args))
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(a.Resources, tt.want) {
				t.Errorf("resources = %v, want %v", a.Resources, tt.want)
			}
		})
	}
}
