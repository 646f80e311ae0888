// Command benchreport runs the benchmark table of docs/PERFORMANCE.md
// and writes it back, so the doc's ratios are regenerated rather than
// copied by hand: each row is a Go benchmark whose Wasm and native
// variants run in one process (so their ratio is taken on the same
// machine at the same minute), repeated for a number of rounds that
// alternate over the rows; the doc gets the medians, the per-round
// ratios, the target and whether it is met, and an SVG chart of the
// ratios. `make bench-report` runs it.
//
//	go run ./host/tools/benchreport [-rounds N] [-only row,row] [-list] [-render]
//
// BENCH_ROUNDS and BENCH_ONLY are the defaults of -rounds and -only. A
// run of some rows keeps the others' last results (docs/bench-report.json).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := flag.NewFlagSet("benchreport", flag.ContinueOnError)
	f.SetOutput(stderr)
	rounds := 3
	if v := os.Getenv("BENCH_ROUNDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return fmt.Errorf("BENCH_ROUNDS=%q: want a whole number ≥ 1", v)
		}
		rounds = n
	}
	f.IntVar(&rounds, "rounds", rounds, "times each row runs (rounds alternate over the rows); default $BENCH_ROUNDS or 3")
	only := f.String("only", os.Getenv("BENCH_ONLY"), "comma-separated row names to run (default $BENCH_ONLY; empty: all)")
	root := f.String("root", ".", "the module root")
	doc := f.String("doc", "docs/PERFORMANCE.md", "the doc whose bench-report markers get the table (relative to -root)")
	svg := f.String("svg", "docs/bench-ratios.svg", "the chart written (relative to -root)")
	store := f.String("results", "docs/bench-report.json", "the rows' last results, kept across partial runs (relative to -root)")
	list := f.Bool("list", false, "print the rows and their commands, run nothing")
	renderOnly := f.Bool("render", false, "run nothing: write the doc and the chart from the stored results")
	timeout := f.Duration("row-timeout", 20*time.Minute, "the longest one run of a row may take")
	if err := f.Parse(args); err != nil {
		return err
	}
	if rounds < 1 {
		return fmt.Errorf("-rounds %d: want ≥ 1", rounds)
	}
	rows, err := selectRows(defaultRows, *only)
	if err != nil {
		return err
	}
	if *list {
		for _, r := range rows {
			fmt.Fprintf(stdout, "%-22s %s\n", r.Name, r.Command())
		}
		return nil
	}
	abs := func(p string) string { return filepath.Join(*root, p) }
	outcomes, err := loadOutcomes(abs(*store))
	if err != nil {
		return err
	}
	docBytes, err := os.ReadFile(abs(*doc))
	if err != nil {
		return fmt.Errorf("reading the doc: %w", err)
	}
	if _, err := ReplaceBetween(docBytes, ""); err != nil {
		return fmt.Errorf("%s: %w", *doc, err)
	}

	bins, err := os.MkdirTemp("", "benchreport-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(bins)
	built := map[string]string{}
	buildErr := map[string]error{}
	date := time.Now().UTC().Format("2006-01-02")
	fresh := map[string]*Outcome{}
	for _, r := range rows {
		fresh[r.Name] = &Outcome{Row: r.Name, Date: date}
	}
	if *renderOnly {
		rows, fresh = nil, nil
	}
	for round := 1; round <= rounds && len(rows) > 0; round++ {
		for _, r := range rows {
			o := fresh[r.Name]
			if o.Error != "" {
				continue
			}
			key := r.Pkg + "|" + r.Tags
			if _, ok := built[key]; !ok && buildErr[key] == nil {
				bin := filepath.Join(bins, fmt.Sprintf("t%d.test", len(built)+len(buildErr)))
				fmt.Fprintf(stderr, "building %s (tags %q)\n", r.Pkg, r.Tags)
				if err := buildTest(ctx, *root, r, bin); err != nil {
					buildErr[key] = err
				} else {
					built[key] = bin
				}
			}
			if err := buildErr[key]; err != nil {
				o.Error = err.Error()
				continue
			}
			fmt.Fprintf(stderr, "round %d/%d: %s: %s\n", round, rounds, r.Name, r.Command())
			rd, err := runRow(ctx, *root, r, built[key], *timeout, stderr)
			if err != nil {
				o.Error = err.Error()
				fmt.Fprintf(stderr, "  %s: %v\n", r.Name, err)
				continue
			}
			fmt.Fprintf(stderr, "  %s: Wasm %s, native %s %s, ratio %.2f\n", r.Name, num(rd.Wasm), num(rd.Native), r.Unit, rd.Ratio())
			o.Rounds = append(o.Rounds, rd)
		}
	}
	var failed []string
	for name, o := range fresh {
		if o.Error != "" {
			o.Rounds = nil // a row is quoted from complete runs only
			failed = append(failed, name)
		}
		outcomes[name] = *o
	}
	if err := saveOutcomes(abs(*store), outcomes); err != nil {
		return err
	}
	newDoc, err := ReplaceBetween(docBytes, Table(defaultRows, outcomes))
	if err != nil {
		return err
	}
	if err := os.WriteFile(abs(*doc), newDoc, 0o644); err != nil {
		return fmt.Errorf("writing the doc: %w", err)
	}
	if err := os.WriteFile(abs(*svg), []byte(Chart(defaultRows, outcomes)), 0o644); err != nil {
		return fmt.Errorf("writing the chart: %w", err)
	}
	if *renderOnly {
		fmt.Fprintf(stdout, "wrote %s and %s from %s\n", *doc, *svg, *store)
	} else {
		fmt.Fprintf(stdout, "wrote %s, %s and %s (%d rows, %d rounds)\n", *doc, *svg, *store, len(rows), rounds)
	}
	if len(failed) > 0 {
		sort.Strings(failed)
		return fmt.Errorf("rows not measured: %s (the doc says why)", strings.Join(failed, ", "))
	}
	return nil
}

// selectRows returns the rows named in only (comma-separated), or all.
func selectRows(all []Row, only string) ([]Row, error) {
	if strings.TrimSpace(only) == "" {
		return all, nil
	}
	var out []Row
	for _, name := range strings.Split(only, ",") {
		name = strings.TrimSpace(name)
		i := -1
		for j, r := range all {
			if r.Name == name {
				i = j
			}
		}
		if i < 0 {
			var names []string
			for _, r := range all {
				names = append(names, r.Name)
			}
			return nil, fmt.Errorf("BENCH_ONLY/-only: no row %q (rows: %s)", name, strings.Join(names, ", "))
		}
		out = append(out, all[i])
	}
	return out, nil
}

func buildTest(ctx context.Context, root string, r Row, bin string) error {
	args := []string{"test", "-c", "-o", bin}
	if r.Tags != "" {
		args = append(args, "-tags", r.Tags)
	}
	args = append(args, "./"+r.Pkg+"/")
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	cmd.Env = os.Environ()
	if r.cgo() {
		cmd.Env = append(cmd.Env, "CGO_ENABLED=1")
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building the tests of %s (tags %q): %w: %s", r.Pkg, r.Tags, err, strings.TrimSpace(out.String()))
	}
	return nil
}

// runRow runs the row's test binary once in its package directory (as
// go test does) and sums each side of its output.
func runRow(ctx context.Context, root string, r Row, bin string, timeout time.Duration, log io.Writer) (Round, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-test.run", "^$", "-test.bench", r.Bench, "-test.benchtime", r.Benchtime, "-test.timeout", "0")
	cmd.Dir = filepath.Join(root, r.Pkg)
	cmd.Env = append(os.Environ(), r.Env...)
	var out bytes.Buffer
	cmd.Stdout = io.MultiWriter(&out, log)
	cmd.Stderr = io.MultiWriter(&out, log)
	err := cmd.Run()
	if ctx.Err() != nil {
		return Round{}, fmt.Errorf("%s: over %s", r.Name, timeout)
	}
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return Round{}, fmt.Errorf("%s: the benchmark failed (%v); its output is above", r.Name, err)
		}
		return Round{}, fmt.Errorf("%s: %w", r.Name, err)
	}
	results, err := ParseBench(&out)
	if err != nil {
		return Round{}, err
	}
	return r.Sides(results)
}

func loadOutcomes(path string) (map[string]Outcome, error) {
	out := map[string]Outcome{}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the stored results: %w", err)
	}
	var list []Outcome
	if err := json.Unmarshal(b, &list); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for _, o := range list {
		out[o.Row] = o
	}
	return out, nil
}

func saveOutcomes(path string, m map[string]Outcome) error {
	var list []Outcome
	for _, r := range defaultRows { // rows no longer in the table are dropped
		if o, ok := m[r.Name]; ok {
			list = append(list, o)
		}
	}
	b, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing the stored results: %w", err)
	}
	return nil
}
