package parity

import (
	"fmt"
	"slices"
	"strings"
)

// More kinds of mismatch, for cases of several cycles.
const (
	// KindOrder: the cycles tried other pods, or in another order.
	KindOrder = "order"
	// KindVictims: both preempted, on a node or with victims none of
	// upstream's equally good candidates has.
	KindVictims = "victims"
)

// CycleMismatch is a case whose cycles differ, at cycle Index.
type CycleMismatch struct {
	Case  *Case
	Kind  string
	Index int
	Up    []*PodOutcome
	WS    []*PodOutcome
}

// CompareCycles says where wasmsched's cycles differ from upstream's, or
// nil when every one is an outcome upstream could have given: the same
// pods in the same order; each placed on one of upstream's best nodes,
// or failed with the same message; preemption on a node with victims
// among upstream's equally good candidates.
func CompareCycles(c *Case, up, ws []*PodOutcome) *CycleMismatch {
	m := &CycleMismatch{Case: c, Up: up, WS: ws}
	if len(ws) == 1 && ws[0].Pod == refusedPod {
		m.Kind = KindRefused
		return m
	}
	// A preemptor's next cycle goes to the node it was nominated to;
	// when the two drew different nodes among equally good ones, that
	// is upstream's node on one side and wasmsched's on the other.
	drew := map[string][2]string{}
	for i := 0; i < max(len(up), len(ws)); i++ {
		m.Index = i
		if i >= len(up) || i >= len(ws) || up[i].Pod != ws[i].Pod {
			m.Kind = KindOrder
			return m
		}
		u, w := up[i], ws[i]
		if d, ok := drew[u.Pod]; ok && len(u.Top) == 1 && u.Top[0] == d[0] && w.Chosen == d[1] {
			u = &PodOutcome{Pod: u.Pod, Top: []string{d[1]}, Chosen: d[1]}
		}
		delete(drew, u.Pod)
		if k := compareOutcome(u, w); k != "" {
			m.Kind = k
			return m
		}
		if u.Nominated != "" && w.Nominated != "" {
			drew[u.Pod] = [2]string{u.Nominated, w.Nominated}
		}
	}
	return nil
}

func compareOutcome(u, w *PodOutcome) string {
	upPlaced, wsPlaced := u.Message == "", w.Chosen != ""
	switch {
	case u.Nominated != "" || w.Nominated != "" || len(w.Victims) > 0:
		if u.Nominated == "" || w.Nominated == "" {
			return KindPreemption
		}
		for _, ch := range u.Choices {
			if ch.Node == w.Nominated && slices.Equal(ch.Victims, w.Victims) {
				// The message names the node upstream drew; had it drawn
				// wasmsched's, it would name that one.
				want := strings.Replace(u.Message, "on node "+u.Nominated+",", "on node "+w.Nominated+",", 1)
				if want != w.Message {
					return messageKind(want, w.Message)
				}
				return ""
			}
		}
		return KindVictims
	case upPlaced && !wsPlaced:
		return KindOnlyUpstreamPlaced
	case upPlaced:
		if slices.Contains(u.Top, w.Chosen) {
			return ""
		}
		return KindPlacement
	case wsPlaced:
		return KindOnlyWasmschedPlaced
	case u.Message != w.Message:
		return messageKind(u.Message, w.Message)
	}
	return ""
}

func messageKind(up, ws string) string {
	if withoutDRA(up) == ws {
		return KindMessageDRA
	}
	return KindMessage
}

// Summary is the mismatch in one line.
func (m *CycleMismatch) Summary() string {
	if m.Kind == KindRefused {
		return "simulate refused the case: " + m.WS[0].Message
	}
	if m.Kind == KindOrder {
		return fmt.Sprintf("cycle %d: upstream tried %s, wasmsched %s", m.Index, podsOf(m.Up), podsOf(m.WS))
	}
	u, w := m.Up[m.Index], m.WS[m.Index]
	return fmt.Sprintf("cycle %d, pod %s: upstream %s; wasmsched %s", m.Index, u.Pod, u.describe(true), w.describe(false))
}

func podsOf(os []*PodOutcome) string {
	var names []string
	for _, o := range os {
		names = append(names, o.Pod)
	}
	return "[" + strings.Join(names, " ") + "]"
}

// describe is one outcome in words.
func (o *PodOutcome) describe(upstream bool) string {
	var b strings.Builder
	switch {
	case upstream && o.Message == "":
		fmt.Fprintf(&b, "best %v (drew %s)", o.Top, o.Chosen)
	case !upstream && o.Chosen != "":
		fmt.Fprintf(&b, "chose %s", o.Chosen)
	default:
		fmt.Fprintf(&b, "%q", o.Message)
	}
	if o.Nominated != "" {
		fmt.Fprintf(&b, ", nominated %s, victims %v", o.Nominated, o.Victims)
	}
	if upstream && len(o.Choices) > 0 {
		fmt.Fprintf(&b, ", equally good choices %v", o.Choices)
	}
	return b.String()
}

// Detail is everything needed to look into the mismatch.
func (m *CycleMismatch) Detail() string {
	var b strings.Builder
	c := m.Case
	fmt.Fprintf(&b, "=== kind %s, seed %d: %s\n", c.Family, c.Seed, m.Kind)
	fmt.Fprintf(&b, "again: make parity PARITY_FLAGS='-parity.kind=%s -parity.seed=%d -parity.n=1 -parity.v'\n", c.Family, c.Seed)
	fmt.Fprintf(&b, "%s\n", m.Summary())
	for i, u := range m.Up {
		fmt.Fprintf(&b, "upstream  cycle %d %s: %s\n", i, u.Pod, u.describe(true))
		for _, s := range u.Scores {
			fmt.Fprintf(&b, "    score %s: %d = %v\n", s.Node, s.Total, s.Plugins)
		}
	}
	for i, w := range m.WS {
		fmt.Fprintf(&b, "wasmsched cycle %d %s: %s\n", i, w.Pod, w.describe(false))
	}
	if y, err := c.YAML(); err != nil {
		fmt.Fprintf(&b, "(no YAML: %v)\n", err)
	} else {
		b.Write(y)
	}
	return b.String()
}
