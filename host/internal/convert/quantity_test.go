package convert

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
)

func TestQuantityReadsAsAKubernetesQuantity(t *testing.T) {
	for _, c := range []struct {
		name string
		v    float64
		want string
	}{
		{"cpu", 250, "250m"},
		{"cpu", 4000, "4"},
		{"cpu", 4500, "4500m"},
		{"cpu", 0, "0"},
		{"cpu", 1, "1m"},
		{"memory", 6.4 * (1 << 30), "6.4Gi"},
		{"memory", 6871947673.6, "6.4Gi"},
		{"memory", 7516192768, "7Gi"},
		{"memory", 512 << 20, "512Mi"},
		{"memory", 1536 << 20, "1.5Gi"},
		{"memory", 1000, "1000"},
		{"memory", 0, "0"},
		{"ephemeral-storage", 10 << 30, "10Gi"},
		{"hugepages-2Mi", 4 << 20, "4Mi"},
		{"pods", 3, "3"},
		{"pods", 110, "110"},
		{"example.com/gpu", 2.5, "2.5"},
		{"memory", -(2 << 30), "-2Gi"},
	} {
		got := Quantity(c.name, c.v)
		if got != c.want {
			t.Errorf("Quantity(%q, %v) = %q, want %q", c.name, c.v, got, c.want)
			continue
		}
		// Whatever it prints parses back as a quantity near v.
		q, err := resource.ParseQuantity(got)
		if err != nil {
			t.Errorf("Quantity(%q, %v) = %q: not a quantity: %v", c.name, c.v, got, err)
			continue
		}
		back := q.AsApproximateFloat64()
		if c.name == "cpu" {
			back *= 1000
		}
		if d := back - c.v; d > 0.01*abs(c.v)+1e-9 || d < -0.01*abs(c.v)-1e-9 {
			t.Errorf("Quantity(%q, %v) = %q parses back as %v", c.name, c.v, got, back)
		}
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
