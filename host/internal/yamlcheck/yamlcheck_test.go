package yamlcheck

import (
	"reflect"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/api/resource"
)

type inner struct {
	Enabled []string `json:"enabled,omitempty"`
	Weight  int32    `json:"weight"`
}

type embedded struct {
	Name string `json:"name"`
}

type outer struct {
	embedded `json:",inline"`
	Inner    *inner                       `json:"inner"`
	Limits   map[string]resource.Quantity `json:"limits"`
	Flag     bool                         `json:"flag"`
	Any      any                          `json:"any"`
	Deep     [][][][][][][]string         `json:"deep"`
}

func check(t *testing.T, text string) (Lines, []Problem) {
	t.Helper()
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(text), &n); err != nil {
		t.Fatal(err)
	}
	return Check(&n, reflect.TypeFor[outer](), nil)
}

func TestProblemsHaveLinesAndPaths(t *testing.T) {
	_, ps := check(t, "name: x\ninner:\n  enable: [a]\n  weight: 3000000000\nlimits:\n  cpu: lots\n  example.com/gpu: 1\nflag: maybe\nany: {whatever: [1]}\n")
	want := []string{
		`3 inner.enable: unknown field (did you mean "enabled"?)`,
		`4 inner.weight: 3000000000 is out of range (it must fit a 32-bit integer)`,
		`6 limits.cpu: "lots" is not a quantity (e.g. 64Mi or 500m)`,
		`8 flag: "maybe" is not true or false`,
	}
	var got []string
	for _, p := range ps {
		got = append(got, itoa(p.Line)+" "+p.Error())
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestLinesFindTheClosestWrittenParent(t *testing.T) {
	lines, ps := check(t, "name: x\ninner:\n  enabled:\n  - a\n  - b\nlimits:\n  example.com/gpu: 1\n")
	if len(ps) != 0 {
		t.Fatal(ps)
	}
	for path, want := range map[string]int{
		"inner.enabled[1]":         5,
		"inner.weight":             2, // not written: its parent's line
		"limits[example.com/gpu]":  7,
		"nothing.at.all":           0,
		"inner.enabled[1].deeper":  5,
		"limits[example.com/gpu]x": 0,
	} {
		if got := lines.Find(path); got != want {
			t.Errorf("Find(%q) = %d, want %d", path, got, want)
		}
	}
}

// Aliases make a small document expand exponentially; the walk stops
// after MaxNodes values instead of following them all.
func TestAliasExpansionIsBounded(t *testing.T) {
	defer func(n int) { maxNodes = n }(maxNodes)
	maxNodes = 10_000
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 7; i++ {
		b.WriteString("a" + itoa(i) + ": &a" + itoa(i) + " [")
		for j := 0; j < 10; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*a" + itoa(i-1))
		}
		b.WriteString("]\n")
	}
	b.WriteString("deep: *a6\n")
	_, ps := check(t, b.String())
	var tooComplex bool
	for _, p := range ps {
		tooComplex = tooComplex || strings.Contains(p.Msg, "document too complex")
	}
	if !tooComplex || len(ps) > MaxProblems+1 {
		t.Fatalf("%d problems: %v", len(ps), ps)
	}
}

// A plain scalar YAML reads as a number is refused in a string field
// when the decoder would rewrite it, saying into what, and kept when the
// decoder keeps its text: an all-digit sha256 of zeros would become "0".
func TestNumbersInStringFieldsSayWhatTheyBecome(t *testing.T) {
	zeros := strings.Repeat("0", 64)
	for _, tc := range []struct{ value, becomes string }{
		{zeros, "0"},
		{strings.Repeat("1", 64), "+Inf"}, // the decoder formats floats at 32 bits
		{"1.10", "1.1"},
		{"010", "8"},
		{"0x1F", "31"},
		{"123", ""},
		{"1e5", "100000"},
		{`"` + zeros + `"`, ""},
	} {
		_, ps := check(t, "name: "+tc.value+"\n")
		switch {
		case tc.becomes == "" && len(ps) != 0:
			t.Errorf("%s: %v, want it kept", tc.value, ps)
		case tc.becomes != "" && (len(ps) != 1 || ps[0].Error() != "name: "+tc.value+" reads as a number (it would become "+strconv.Quote(tc.becomes)+"); quote it: "+strconv.Quote(tc.value)):
			t.Errorf("%s: %v, want it to say it would become %q", tc.value, ps, tc.becomes)
		}
	}
}
