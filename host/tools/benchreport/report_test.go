package main

import (
	"encoding/xml"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const sampleOutput = `goos: linux
goarch: amd64
pkg: github.com/wasmsched/wasmsched/host/run/sim
BenchmarkSchedulingBasic/nodes=5000/backend=wasm-2         	       1	3300000000 ns/op	      3030 pods/s
    bench_test.go:99: some log line
BenchmarkSchedulingBasic/nodes=5000/backend=native-2       	       1	2200000000 ns/op	      4545 pods/s
BenchmarkRuntimesTopology/pods=3000/plugin=PodTopologySpread/backend=tinygo-wazero	1500	 900000 ns/op	 180.0 ns/node
BenchmarkRuntimesTopology/pods=3000/plugin=InterPodAffinity/backend=tinygo-wazero	1500	 700000 ns/op	 140.0 ns/node
BenchmarkRuntimesTopology/pods=3000/plugin=PodTopologySpread/backend=native	1500	 400000 ns/op	 80.0 ns/node
BenchmarkRuntimesTopology/pods=3000/plugin=InterPodAffinity/backend=native	1500	 350000 ns/op	 70.0 ns/node
--- FAIL: BenchmarkOther
PASS
ok  	github.com/wasmsched/wasmsched/host/run/sim	12.3s
`

func TestParseBenchAndSides(t *testing.T) {
	res, err := ParseBench(strings.NewReader(sampleOutput))
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 6 {
		t.Fatalf("%d results, want 6: %+v", len(res), res)
	}
	if res[0].Name != "BenchmarkSchedulingBasic/nodes=5000/backend=wasm" || res[0].Metrics["pods/s"] != 3030 || res[0].Metrics["ns/op"] != 3.3e9 {
		t.Errorf("first result %+v", res[0])
	}
	sb := Row{Name: "sb", Wasm: "/backend=wasm$", Native: "/backend=native$", Unit: "pods/s", Target: Target{Op: ">=", Ratio: 0.75}}
	rd, err := sb.Sides(res[:2])
	if err != nil {
		t.Fatal(err)
	}
	if rd.Wasm != 3030 || rd.Native != 4545 || math.Abs(rd.Ratio()-0.6667) > 1e-3 {
		t.Errorf("SchedulingBasic sides %+v ratio %v", rd, rd.Ratio())
	}
	topo := Row{Name: "topo", Wasm: "/backend=tinygo-wazero$", Native: "/backend=native$", Unit: "ns/node"}
	rd, err = topo.Sides(res[2:])
	if err != nil {
		t.Fatal(err)
	}
	if rd.Wasm != 320 || rd.Native != 150 {
		t.Errorf("topology sums %+v, want 320 and 150", rd)
	}
	missing := Row{Name: "m", Wasm: "/backend=wasmtime$", Native: "/backend=native$", Unit: "pods/s"}
	if _, err := missing.Sides(res[:2]); err == nil || !strings.Contains(err.Error(), "0 Wasm") {
		t.Errorf("a side with no result: %v", err)
	}
	noUnit := Row{Name: "u", Wasm: "/backend=wasm$", Native: "/backend=native$", Unit: "ns/vreplica"}
	if _, err := noUnit.Sides(res[:2]); err == nil || !strings.Contains(err.Error(), "reports no ns/vreplica") {
		t.Errorf("a result without the unit: %v", err)
	}
	if _, err := ParseBench(strings.NewReader("BenchmarkX-2 1 abc ns/op\n")); err == nil {
		t.Error("a malformed value parsed")
	}
}

func TestSummary(t *testing.T) {
	s := Summarize([]Round{{Wasm: 120, Native: 100}, {Wasm: 150, Native: 100}, {Wasm: 130, Native: 130}})
	if s.Ratio != 1.2 || s.Min != 1 || s.Max != 1.5 || s.Wasm != 130 || s.Native != 100 {
		t.Errorf("summary %+v", s)
	}
	if met, ok := (Target{Op: "<=", Ratio: 1.3}).Met(1.2); !ok || !met {
		t.Error("1.2 ≤ 1.3 not met")
	}
	if met, ok := (Target{Op: ">=", Ratio: 0.9}).Met(0.54); !ok || met {
		t.Error("0.54 ≥ 0.9 met")
	}
	if _, ok := (Target{}).Met(1); ok {
		t.Error("no target reported as one")
	}
}

func TestReplaceBetween(t *testing.T) {
	doc := []byte("# Perf\n\nbefore\n" + BeginMarker + "\nold table\n" + EndMarker + "\nafter\n")
	out, err := ReplaceBetween(doc, "| new |\n")
	if err != nil {
		t.Fatal(err)
	}
	want := "# Perf\n\nbefore\n" + BeginMarker + "\n| new |\n" + EndMarker + "\nafter\n"
	if string(out) != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
	again, _ := ReplaceBetween(out, "| new |\n")
	if string(again) != want {
		t.Error("replacing twice is not stable")
	}
	for name, bad := range map[string]string{
		"none":     "no markers",
		"reversed": EndMarker + "\n" + BeginMarker,
		"twice":    BeginMarker + EndMarker + BeginMarker + EndMarker,
	} {
		if _, err := ReplaceBetween([]byte(bad), "x"); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func outcomesForTest() ([]Row, map[string]Outcome) {
	rows := []Row{
		{Name: "a <x>", Title: "per node <set> & more", Runtime: "wazero", Pkg: "host/x", Bench: "A/backend=(wasm|native)$", Benchtime: "1x", Unit: "ns/node", Target: Target{Op: "<=", Ratio: 1.3}},
		{Name: "b", Title: "pods", Runtime: "wasmtime", Pkg: "host/y", Tags: "wasmtime", Bench: "B", Benchtime: "1x", Unit: "pods/s", Target: Target{Op: ">=", Ratio: 0.9}},
		{Name: "c", Title: "failed", Runtime: "wazero", Pkg: "host/z", Bench: "C", Benchtime: "1x", Unit: "ns/op"},
		{Name: "d", Title: "not run", Pkg: "host/z", Bench: "D", Benchtime: "1x", Unit: "ns/op"},
	}
	return rows, map[string]Outcome{
		"a <x>": {Row: "a <x>", Date: "2026-11-28", Rounds: []Round{{Wasm: 120, Native: 100}, {Wasm: 140, Native: 100}}},
		"b":     {Row: "b", Date: "2026-11-28", Rounds: []Round{{Wasm: 540, Native: 1000}}},
		"c":     {Row: "c", Date: "2026-11-28", Error: "build | failed\nsecond line"},
	}
}

func TestTable(t *testing.T) {
	rows, outs := outcomesForTest()
	tab := Table(rows, outs)
	lines := strings.Split(strings.TrimSpace(tab), "\n")
	if len(lines) != 5 { // header, rule, three rows ("d" has no outcome)
		t.Fatalf("%d lines:\n%s", len(lines), tab)
	}
	cols := regexp.MustCompile(`(^|[^\\])\|`)
	for _, l := range lines {
		if n := len(cols.FindAllString(l, -1)); n != 9 {
			t.Errorf("%d column bars in %q, want 9", n, l)
		}
	}
	for _, want := range []string{"**1.30** (1.20 1.40; 2 rounds, 2026-11-28) | ≤ 1.30× | met", "**0.54** (0.54; 1 rounds, 2026-11-28) | ≥ 0.90× | **missed**",
		"CGO_ENABLED=1 go test -tags wasmtime", `A/backend=(wasm\|native)$`, `not measured (2026-11-28): build \| failed second line`} {
		if !strings.Contains(tab, want) {
			t.Errorf("table lacks %q:\n%s", want, tab)
		}
	}
}

func TestChartIsWellFormedSVG(t *testing.T) {
	rows, outs := outcomesForTest()
	svg := Chart(rows, outs)
	d := xml.NewDecoder(strings.NewReader(svg))
	var root string
	var rects int
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed: %v\n%s", err, svg)
		}
		if se, ok := tok.(xml.StartElement); ok {
			if root == "" {
				root = se.Name.Local
				if se.Name.Space != "http://www.w3.org/2000/svg" {
					t.Errorf("root namespace %q", se.Name.Space)
				}
			}
			if se.Name.Local == "rect" {
				rects++
			}
		}
	}
	if root != "svg" {
		t.Errorf("root element %q", root)
	}
	if rects != 3 { // the background and two bars
		t.Errorf("%d rects, want 3", rects)
	}
	if !strings.Contains(svg, "a &lt;x&gt; (ns/node)") {
		t.Error("labels are not escaped")
	}
}

func TestSelectRows(t *testing.T) {
	rs, err := selectRows(defaultRows, " vpod-wazero,eviction-wazero ")
	if err != nil || len(rs) != 2 || rs[0].Name != "vpod-wazero" {
		t.Fatalf("%v %v", rs, err)
	}
	if _, err := selectRows(defaultRows, "nope"); err == nil || !strings.Contains(err.Error(), `no row "nope"`) {
		t.Errorf("unknown row: %v", err)
	}
	seen := map[string]bool{}
	for _, r := range defaultRows {
		if seen[r.Name] {
			t.Errorf("row %s twice", r.Name)
		}
		seen[r.Name] = true
		regexp.MustCompile(r.Wasm)
		regexp.MustCompile(r.Native)
		if _, err := os.Stat(filepath.Join("..", "..", "..", r.Pkg)); err != nil {
			t.Errorf("row %s: package %s: %v", r.Name, r.Pkg, err)
		}
	}
}

// TestRunWritesTheDoc runs the driver on a row of this package's own
// fake benchmark, end to end: build, run, parse, and write doc, chart
// and stored results.
func TestRunWritesTheDoc(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a test binary")
	}
	root := t.TempDir()
	write := func(p, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/fake\n\ngo 1.26.0\n")
	write("pkg/fake_test.go", `package pkg
import "testing"
func BenchmarkFake(b *testing.B) {
	for _, be := range []string{"wasm", "native"} {
		b.Run("backend="+be, func(b *testing.B) {
			v := 100.0
			if be == "wasm" { v = 125 }
			b.ReportMetric(v, "ns/node")
		})
	}
}
`)
	write("docs/PERFORMANCE.md", "# P\n"+BeginMarker+"\n"+EndMarker+"\n")
	saved := defaultRows
	defer func() { defaultRows = saved }()
	defaultRows = []Row{{Name: "fake", Title: "fake", Runtime: "wazero", Pkg: "pkg", Bench: "Fake", Benchtime: "1x",
		Wasm: "/backend=wasm$", Native: "/backend=native$", Unit: "ns/node", Target: Target{Op: "<=", Ratio: 1.3}}}
	if err := run(t.Context(), []string{"-root", root, "-rounds", "2"}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	doc, _ := os.ReadFile(filepath.Join(root, "docs/PERFORMANCE.md"))
	if !strings.Contains(string(doc), "**1.25** (1.25 1.25; 2 rounds") || !strings.Contains(string(doc), "| met |") {
		t.Errorf("doc:\n%s", doc)
	}
	for _, p := range []string{"docs/bench-ratios.svg", "docs/bench-report.json"} {
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			t.Error(err)
		}
	}
	// -render writes the same doc and chart from the stored results, running nothing.
	svg, _ := os.ReadFile(filepath.Join(root, "docs/bench-ratios.svg"))
	if err := os.Remove(filepath.Join(root, "docs/bench-ratios.svg")); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(root, "pkg")); err != nil {
		t.Fatal(err)
	}
	if err := run(t.Context(), []string{"-root", root, "-render"}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	doc2, _ := os.ReadFile(filepath.Join(root, "docs/PERFORMANCE.md"))
	svg2, _ := os.ReadFile(filepath.Join(root, "docs/bench-ratios.svg"))
	if string(doc2) != string(doc) || string(svg2) != string(svg) {
		t.Error("-render wrote something else than the run")
	}
}
