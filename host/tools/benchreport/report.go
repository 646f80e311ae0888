package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/wasmsched/wasmsched/host/tools/stats"
)

// Row is one line of the report: a Go benchmark command whose output
// holds a Wasm and a native variant, compared by one metric.
type Row struct {
	Name      string // selects the row with BENCH_ONLY
	Title     string // what is measured, for the doc
	Runtime   string // wazero or wasmtime: which runtime runs the Wasm side
	Pkg       string // package directory, relative to the module root
	Tags      string // build tags; "wasmtime" also needs cgo
	Bench     string // -bench pattern selecting both variants
	Benchtime string // -benchtime
	Env       []string
	// Wasm and Native select, by regular expression on the benchmark
	// name (without its -GOMAXPROCS suffix), the results summed into
	// each side: a row may add several sub-benchmarks (the topology row
	// adds both plugins at both pod counts).
	Wasm, Native string
	Unit         string // the metric compared: ns/op, ns/node, pods/s, ...
	Target       Target // zero: no target
}

// Target is a bound on Wasm ÷ native.
type Target struct {
	Op    string // "<=" for times, ">=" for rates
	Ratio float64
}

func (t Target) String() string {
	switch t.Op {
	case "<=":
		return fmt.Sprintf("≤ %.2f×", t.Ratio)
	case ">=":
		return fmt.Sprintf("≥ %.2f×", t.Ratio)
	}
	return "—"
}

// Met reports whether ratio holds the target; ok is false without one.
func (t Target) Met(ratio float64) (met, ok bool) {
	switch t.Op {
	case "<=":
		return ratio <= t.Ratio, true
	case ">=":
		return ratio >= t.Ratio, true
	}
	return false, false
}

// Command is the go test command line that runs the row once.
func (r Row) Command() string {
	var b strings.Builder
	for _, e := range r.Env {
		b.WriteString(e + " ")
	}
	if r.cgo() {
		b.WriteString("CGO_ENABLED=1 ")
	}
	b.WriteString("go test ")
	if r.Tags != "" {
		b.WriteString("-tags " + r.Tags + " ")
	}
	fmt.Fprintf(&b, "-run '^$' -bench '%s' -benchtime %s ./%s/", r.Bench, r.Benchtime, r.Pkg)
	return b.String()
}

func (r Row) cgo() bool { return strings.Contains(r.Tags, "wasmtime") }

// Result is one benchmark line: its name and metrics by unit.
type Result struct {
	Name    string
	Metrics map[string]float64
}

var procSuffix = regexp.MustCompile(`-\d+$`)

// ParseBench reads `go test -bench` output and returns its result lines
// in order. Lines that are not results (logs, PASS, ok) are skipped.
func ParseBench(r io.Reader) ([]Result, error) {
	var out []Result
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue // "BenchmarkX ... --- FAIL" and the like
		}
		res := Result{Name: procSuffix.ReplaceAllString(f[0], ""), Metrics: map[string]float64{}}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("benchmark line %q: value %q: %w", sc.Text(), f[i], err)
			}
			res.Metrics[f[i+1]] = v
		}
		out = append(out, res)
	}
	return out, sc.Err()
}

// Round is one run of a row: the summed Wasm and native values.
type Round struct {
	Wasm   float64 `json:"wasm"`
	Native float64 `json:"native"`
}

// Ratio is Wasm ÷ native.
func (r Round) Ratio() float64 { return r.Wasm / r.Native }

// Sides sums the row's metric over the results each side selects. It
// fails if a side matched nothing or a matched result lacks the unit.
func (r Row) Sides(results []Result) (Round, error) {
	wasm, native := regexp.MustCompile(r.Wasm), regexp.MustCompile(r.Native)
	var rd Round
	var nw, nn int
	for _, res := range results {
		for _, side := range []struct {
			re  *regexp.Regexp
			sum *float64
			n   *int
		}{{wasm, &rd.Wasm, &nw}, {native, &rd.Native, &nn}} {
			if !side.re.MatchString(res.Name) {
				continue
			}
			v, ok := res.Metrics[r.Unit]
			if !ok {
				return Round{}, fmt.Errorf("row %s: %s reports no %s", r.Name, res.Name, r.Unit)
			}
			*side.sum += v
			*side.n++
		}
	}
	if nw == 0 || nn == 0 {
		return Round{}, fmt.Errorf("row %s: %d Wasm and %d native results in the output (patterns %q, %q)", r.Name, nw, nn, r.Wasm, r.Native)
	}
	if rd.Native == 0 {
		return Round{}, fmt.Errorf("row %s: native %s is zero", r.Name, r.Unit)
	}
	return rd, nil
}

// Outcome is what the report keeps of a row: its rounds, or why it
// did not run.
type Outcome struct {
	Row    string  `json:"row"`
	Date   string  `json:"date"`
	Rounds []Round `json:"rounds,omitempty"`
	Error  string  `json:"error,omitempty"`
}

// Summary is a row's medians and spread.
type Summary struct {
	Wasm, Native, Ratio, Min, Max float64
}

// Summarize takes the medians of each side and of the per-round ratios
// (the ratio quoted is the median of the rounds' ratios, each taken
// within one run), and the ratios' spread.
func Summarize(rounds []Round) Summary {
	var w, n, r []float64
	for _, rd := range rounds {
		w, n, r = append(w, rd.Wasm), append(n, rd.Native), append(r, rd.Ratio())
	}
	return Summary{Wasm: stats.Median(w), Native: stats.Median(n), Ratio: stats.Median(r), Min: slices.Min(r), Max: slices.Max(r)}
}

// Markers delimit the generated table in the doc.
const (
	BeginMarker = "<!-- bench-report:begin -->"
	EndMarker   = "<!-- bench-report:end -->"
)

// ReplaceBetween puts body between the markers of doc, keeping them.
func ReplaceBetween(doc []byte, body string) ([]byte, error) {
	i := bytes.Index(doc, []byte(BeginMarker))
	j := bytes.Index(doc, []byte(EndMarker))
	if i < 0 || j < 0 {
		return nil, fmt.Errorf("the doc has no %s … %s markers", BeginMarker, EndMarker)
	}
	if j < i {
		return nil, fmt.Errorf("the doc's %s comes before its %s", EndMarker, BeginMarker)
	}
	if bytes.Count(doc, []byte(BeginMarker)) != 1 || bytes.Count(doc, []byte(EndMarker)) != 1 {
		return nil, fmt.Errorf("the doc has more than one pair of bench-report markers")
	}
	var out bytes.Buffer
	out.Write(doc[:i+len(BeginMarker)])
	out.WriteString("\n" + strings.TrimSpace(body) + "\n")
	out.Write(doc[j:])
	return out.Bytes(), nil
}

func num(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}

// Table renders the rows (in rows' order) with their outcomes as
// Markdown. Rows with no outcome are left out.
func Table(rows []Row, outcomes map[string]Outcome) string {
	var b strings.Builder
	b.WriteString("| measure | runtime | command | Wasm | native | Wasm ÷ native (median; rounds) | target | |\n")
	b.WriteString("|---|---|---|---:|---:|---|---|---|\n")
	for _, r := range rows {
		o, ok := outcomes[r.Name]
		if !ok {
			continue
		}
		cmd := "`" + strings.ReplaceAll(r.Command(), "|", `\|`) + "`"
		title := r.Title
		if o.Error != "" || len(o.Rounds) == 0 {
			msg := o.Error
			if msg == "" {
				msg = "no rounds"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | — | — | not measured (%s): %s | %s | — |\n", title, r.Runtime, cmd, o.Date, oneLine(msg), r.Target)
			continue
		}
		s := Summarize(o.Rounds)
		var rs []string
		for _, rd := range o.Rounds {
			rs = append(rs, fmt.Sprintf("%.2f", rd.Ratio()))
		}
		verdict := "—"
		if met, ok := r.Target.Met(s.Ratio); ok {
			verdict = "**missed**"
			if met {
				verdict = "met"
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s %s | %s %s | **%.2f** (%s; %d rounds, %s) | %s | %s |\n",
			title, r.Runtime, cmd, num(s.Wasm), r.Unit, num(s.Native), r.Unit, s.Ratio, strings.Join(rs, " "), len(o.Rounds), o.Date, r.Target, verdict)
	}
	return b.String()
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	s = strings.ReplaceAll(s, "|", `\|`)
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
