package convert

import (
	"math"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Quantity writes v, an amount of the named resource in the units the
// ABI counts it in (cpu in millicores, memory, storage and hugepages in
// bytes, anything else in units), as a Kubernetes quantity a person reads
// at a glance and kubectl would accept: 250m, 4, 4500m, 6.4Gi, 512Mi, 3.
// CPU keeps resource.Quantity's canonical form (exact to the millicore);
// bytes take the largest binary suffix they reach, with at most three
// significant digits when not whole (6871947673.6 reads 6.4Gi, never
// 6.87195e+09); a plain count stays a plain number. Messages and tables
// use it so that a policy's threshold reads like the pod's requests.
func Quantity(name string, v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return strconv.FormatFloat(v, 'g', -1, 64)
	case v < 0:
		return "-" + Quantity(name, -v)
	case v >= 1<<62:
		// Past int64: no quantity suffix helps; say it plainly.
		return strconv.FormatFloat(v, 'g', 6, 64)
	}
	switch {
	case name == string(corev1.ResourceCPU):
		return resource.NewMilliQuantity(int64(math.Round(v)), resource.DecimalSI).String()
	case isBytes(name):
		return binaryBytes(v)
	}
	if v == math.Trunc(v) {
		return strconv.FormatInt(int64(v), 10)
	}
	return short(v)
}

// isBytes reports whether the resource counts bytes.
func isBytes(name string) bool {
	return name == string(corev1.ResourceMemory) || name == string(corev1.ResourceEphemeralStorage) ||
		name == string(corev1.ResourceStorage) || strings.HasPrefix(name, corev1.ResourceHugePagesPrefix)
}

var binarySuffixes = []struct {
	suffix string
	size   float64
}{{"Ei", 1 << 60}, {"Pi", 1 << 50}, {"Ti", 1 << 40}, {"Gi", 1 << 30}, {"Mi", 1 << 20}, {"Ki", 1 << 10}}

// binaryBytes is b bytes with the largest binary suffix it reaches.
func binaryBytes(b float64) string {
	b = math.Round(b)
	for _, s := range binarySuffixes {
		if b >= s.size {
			x := b / s.size
			if x == math.Trunc(x) {
				return strconv.FormatInt(int64(x), 10) + s.suffix
			}
			return short(x) + s.suffix
		}
	}
	return strconv.FormatInt(int64(b), 10)
}

// short is x with at most three significant digits (all of them from
// 100 up), without an exponent or trailing zeros.
func short(x float64) string {
	decimals := 2
	switch {
	case x >= 100:
		decimals = 0
	case x >= 10:
		decimals = 1
	case x < 1 && x > 0:
		decimals = 3
	}
	s := strconv.FormatFloat(x, 'f', decimals, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}
