package main

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// Chart draws the rows' median ratios as horizontal bars, with each
// row's target as a tick and the line of parity at 1×: green when the
// target is met, red when missed, grey without one. For rates (pods/s)
// a ratio below the target misses; for times, above.
func Chart(rows []Row, outcomes map[string]Outcome) string {
	type bar struct {
		label   string
		s       Summary
		target  Target
		colour  string
		missing string
	}
	var bars []bar
	maxX := 2.0
	for _, r := range rows {
		o, ok := outcomes[r.Name]
		if !ok {
			continue
		}
		b := bar{label: fmt.Sprintf("%s (%s)", r.Name, r.Unit), target: r.Target, colour: "#999999"}
		if o.Error != "" || len(o.Rounds) == 0 {
			b.missing = "not measured"
		} else {
			b.s = Summarize(o.Rounds)
			if met, ok := r.Target.Met(b.s.Ratio); ok {
				b.colour = "#c0392b"
				if met {
					b.colour = "#27ae60"
				}
			}
			maxX = math.Max(maxX, b.s.Max)
		}
		maxX = math.Max(maxX, r.Target.Ratio)
		bars = append(bars, b)
	}
	maxX = math.Ceil(maxX*2) / 2
	const (
		labelW, plotW, rowH, top, bottom = 280.0, 560.0, 26.0, 40.0, 40.0
	)
	width := labelW + plotW + 80
	height := top + bottom + rowH*float64(len(bars))
	x := func(v float64) float64 { return labelW + plotW*v/maxX }
	var s strings.Builder
	fmt.Fprintf(&s, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&s, `<rect width="100%%" height="100%%" fill="#ffffff"/>`+"\n")
	fmt.Fprintf(&s, `<text x="10" y="20" font-size="14" font-weight="bold">Wasm ÷ native, median of the rounds (bar), spread (whisker), target (black tick)</text>`+"\n")
	for v := 0.0; v <= maxX+1e-9; v += 0.5 {
		fmt.Fprintf(&s, `<line x1="%.1f" y1="%.0f" x2="%.1f" y2="%.0f" stroke="#dddddd"/>`+"\n", x(v), top-6, x(v), height-bottom+4)
		fmt.Fprintf(&s, `<text x="%.1f" y="%.0f" text-anchor="middle">%.1f×</text>`+"\n", x(v), height-bottom+18, v)
	}
	fmt.Fprintf(&s, `<line x1="%.1f" y1="%.0f" x2="%.1f" y2="%.0f" stroke="#555555" stroke-dasharray="4 3"/>`+"\n", x(1), top-6, x(1), height-bottom+4)
	for i, b := range bars {
		y := top + rowH*float64(i)
		fmt.Fprintf(&s, `<text x="%.0f" y="%.1f" text-anchor="end">%s</text>`+"\n", labelW-8, y+rowH/2+4, html.EscapeString(b.label))
		if b.missing != "" {
			fmt.Fprintf(&s, `<text x="%.1f" y="%.1f" fill="#999999">%s</text>`+"\n", x(0)+4, y+rowH/2+4, b.missing)
		} else {
			fmt.Fprintf(&s, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`+"\n", x(0), y+5, x(b.s.Ratio)-x(0), rowH-10, b.colour)
			fmt.Fprintf(&s, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#333333"/>`+"\n", x(b.s.Min), y+rowH/2, x(b.s.Max), y+rowH/2)
			fmt.Fprintf(&s, `<text x="%.1f" y="%.1f">%.2f×</text>`+"\n", x(b.s.Max)+6, y+rowH/2+4, b.s.Ratio)
		}
		if b.target.Op != "" {
			fmt.Fprintf(&s, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#000000" stroke-width="2"/>`+"\n", x(b.target.Ratio), y+2, x(b.target.Ratio), y+rowH-2)
		}
	}
	s.WriteString("</svg>\n")
	return s.String()
}
