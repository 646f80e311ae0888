package main

// Terminal output: progress while a long simulation runs, one summary
// line at the end, and tables cut to the terminal's width. The full text
// of every message stays in -o json and --explain.

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"golang.org/x/term"

	"github.com/wasmsched/wasmsched/host/run/sim"
)

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// tableWidth is how wide w's tables may be: $COLUMNS when it is set (so
// a script or a test can ask for a width), else the terminal's width
// when w is one; 0, no limit, for a file or a pipe.
func tableWidth(w io.Writer) int {
	if c := os.Getenv("COLUMNS"); c != "" {
		if n, err := strconv.Atoi(c); err == nil && n > 0 {
			return n
		}
	}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		if n, _, err := term.GetSize(int(f.Fd())); err == nil && n > 0 {
			return n
		}
	}
	return 0
}

// progress shows a running simulation's progress on a terminal, on one
// line it rewrites, and ends with the summary line. It stays silent when
// its writer is not a terminal (the summary line excepted, for tables).
type progress struct {
	w     io.Writer
	tty   bool
	start time.Time
	last  time.Time
	shown bool
	// delay is how long a run goes before its progress shows: a short
	// run only prints its summary.
	delay time.Duration
}

func newProgress(w io.Writer) *progress {
	return &progress{w: w, tty: isTerminal(w), start: time.Now(), delay: 300 * time.Millisecond}
}

// update is sim.Options.Progress: at most ten redraws a second.
func (p *progress) update(pr sim.Progress) {
	if !p.tty {
		return
	}
	now := time.Now()
	if now.Sub(p.start) < p.delay || now.Sub(p.last) < 100*time.Millisecond {
		return
	}
	p.last, p.shown = now, true
	fmt.Fprintf(p.w, "\r\033[Kscheduling: %d of %d pods placed, %d cycles, %s", pr.Scheduled, pr.Pods, pr.Cycles,
		now.Sub(p.start).Round(100*time.Millisecond))
}

// clear removes the progress line, if one is shown.
func (p *progress) clear() {
	if p.shown {
		fmt.Fprint(p.w, "\r\033[K")
		p.shown = false
	}
}

// summary writes the run's one summary line: always after a table, and
// after -o json only on a terminal (a pipe gets the JSON alone).
func (p *progress) summary(rep *sim.Report, elapsed time.Duration, table bool, reportPath string) {
	if !table && !p.tty {
		return
	}
	line := summaryOf(rep, elapsed)
	if reportPath != "" {
		line += "; report in " + reportPath
	}
	fmt.Fprintln(p.w, line)
}

// summaryOf is a run's counts in one line: scheduled, unschedulable,
// evicted, the time it took.
func summaryOf(rep *sim.Report, elapsed time.Duration) string {
	c := countRun(rep)
	s := fmt.Sprintf("%d scheduled, %d unschedulable, %d evicted", c.Scheduled, c.Unschedulable+c.Errors, c.Evicted)
	var more []string
	if c.Preempted > 0 {
		more = append(more, fmt.Sprintf("%d preempted", c.Preempted))
	}
	if c.Bound > 0 {
		more = append(more, fmt.Sprintf("%d bound before", c.Bound))
	}
	if c.NotOurs > 0 {
		more = append(more, fmt.Sprintf("%d not ours", c.NotOurs))
	}
	if len(more) > 0 {
		s += " (" + strings.Join(more, ", ") + ")"
	}
	return fmt.Sprintf("%d pods on %d nodes: %s in %s", c.Pods, c.Nodes, s, elapsed.Round(time.Millisecond))
}

// table is a tab-aligned table whose flexible columns (messages,
// reasons) are cut, with an ellipsis, so that its lines fit a width.
type table struct {
	rows [][]string // the header first
	// flex are the columns that may be cut, in the order they give way,
	// each down to its own narrowest.
	flex []flexColumn
}

// flexColumn is a column a table may cut, and how narrow it may get.
type flexColumn struct{ col, min int }

// minFlex is the narrowest a cut message column gets: a cut column still
// says what kind of message it held.
const minFlex = 12

// newTable starts a table with a tab-separated header whose columns flex
// (given by index) may be cut, each down to minFlex, in that order.
func newTable(header string, flex ...int) *table {
	t := &table{rows: [][]string{strings.Split(header, "\t")}}
	for _, c := range flex {
		t.flex = append(t.flex, flexColumn{c, minFlex})
	}
	return t
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

const tablePad = 2

// widths are the columns' natural widths and the widest line's.
func (t *table) widths() ([]int, int) {
	cols := 0
	for _, r := range t.rows {
		cols = max(cols, len(r))
	}
	widths := make([]int, cols)
	for _, r := range t.rows {
		for i, c := range r {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	total := tablePad * max(cols-1, 0)
	for _, n := range widths {
		total += n
	}
	return widths, total
}

// fits reports whether the table's lines fit width uncut (0: no limit).
func (t *table) fits(width int) bool {
	_, total := t.widths()
	return width <= 0 || total <= width
}

// write prints the table as tabwriter(0, 4, 2, ' ') would, its flexible
// columns cut, in their order, so that each line fits width (0: no
// limit). Columns that may not be cut are never cut, so a table of long
// names can still be wider.
func (t *table) write(w io.Writer, width int) error {
	if widths, total := t.widths(); width > 0 && total > width {
		for _, f := range t.flex {
			if total <= width {
				break
			}
			if f.col >= len(widths) || widths[f.col] <= f.min {
				continue
			}
			c := min(widths[f.col]-f.min, total-width)
			widths[f.col] -= c
			total -= c
		}
		for _, r := range t.rows {
			for _, f := range t.flex {
				if f.col < len(r) {
					r[f.col] = cut(r[f.col], widths[f.col])
				}
			}
		}
	}
	tw := tabwriter.NewWriter(w, 0, 4, tablePad, ' ', 0)
	for _, r := range t.rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// cut shortens s to n characters, the last of them an ellipsis.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	if n < 1 {
		return ""
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
