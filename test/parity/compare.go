package parity

import (
	"fmt"
	"sort"
	"strings"
)

// Kinds of mismatch.
const (
	// KindPlacement: both placed the pod, wasmsched outside upstream's
	// top-scoring nodes.
	KindPlacement = "placement"
	// KindMessage: neither placed it, with different messages.
	KindMessage = "message"
	// KindOnlyUpstreamPlaced: upstream placed it, wasmsched did not.
	KindOnlyUpstreamPlaced = "only-upstream-placed"
	// KindOnlyWasmschedPlaced: wasmsched placed it, upstream found no node.
	KindOnlyWasmschedPlaced = "only-wasmsched-placed"
	// KindPreemption: one preempted for the pod and the other did not.
	// (Which node preemption picks is not compared: kube-scheduler
	// starts its search for candidates at a random node.)
	KindPreemption = "preemption"
	// KindRefused: simulate refused manifests the API server accepts.
	KindRefused = "refused"
	// KindMessageDRA: the messages differ only by the text kube-scheduler
	// 1.35's DynamicResources PostFilter puts before preemption's for a
	// pod without claims. Told apart so that other message differences
	// stand out.
	KindMessageDRA = "message-dra-postfilter"
)

// draPostFilter is what DynamicResources' PostFilter says for a pod with
// no resource claims; RunPostFilterPlugins joins it to DefaultPreemption's
// message with ", ".
const draPostFilter = "no new claims to deallocate"

// Mismatch is a case where wasmsched and kube-scheduler disagree.
type Mismatch struct {
	Case *Case
	Kind string
	Up   *Upstream
	WS   *Result
}

// Compare says how wasmsched's result differs from upstream's, or nil
// when it is one upstream could have given.
func Compare(c *Case, up *Upstream, ws *Result) *Mismatch {
	m := &Mismatch{Case: c, Up: up, WS: ws}
	switch {
	case ws.Status == "Refused":
		m.Kind = KindRefused
	case up.Nominated != "" || ws.Victims > 0:
		if up.Nominated != "" && ws.Victims > 0 {
			return nil
		}
		m.Kind = KindPreemption
	case up.Message == "" && ws.Node == "":
		m.Kind = KindOnlyUpstreamPlaced
	case up.Message == "":
		for _, n := range up.Top {
			if n == ws.Node {
				return nil
			}
		}
		m.Kind = KindPlacement
	case ws.Node != "":
		m.Kind = KindOnlyWasmschedPlaced
	case ws.Message != up.Message:
		m.Kind = KindMessage
		if withoutDRA(up.Message) == ws.Message {
			m.Kind = KindMessageDRA
		}
	default:
		return nil
	}
	return m
}

// Summary is the mismatch in one line.
func (m *Mismatch) Summary() string {
	switch m.Kind {
	case KindPlacement:
		return fmt.Sprintf("wasmsched chose %s; upstream's best %v (%s)", m.WS.Node, m.Up.Top, m.scoreLine())
	case KindOnlyUpstreamPlaced:
		return fmt.Sprintf("upstream places it on %v; wasmsched: %s: %s", m.Up.Top, m.WS.Status, m.WS.Message)
	case KindOnlyWasmschedPlaced:
		return fmt.Sprintf("wasmsched chose %s; upstream: %s", m.WS.Node, m.Up.Message)
	case KindPreemption:
		if m.Up.Nominated != "" {
			return fmt.Sprintf("upstream preempts on %s; wasmsched removed no pod: %s %s %s", m.Up.Nominated, m.WS.Node, m.WS.Status, m.WS.Message)
		}
		return fmt.Sprintf("wasmsched removed %d pod(s) and chose %q; upstream found no victims: %s", m.WS.Victims, m.WS.Node, m.Up.Message)
	case KindMessage, KindMessageDRA:
		return fmt.Sprintf("upstream %q; wasmsched %s %q", m.Up.Message, m.WS.Status, m.WS.Message)
	}
	return fmt.Sprintf("simulate refused the manifests: %s", m.WS.Message)
}

// scoreLine is upstream's total per feasible node.
func (m *Mismatch) scoreLine() string {
	if len(m.Up.Scores) == 0 {
		return "no scoring: one feasible or nominated node"
	}
	var parts []string
	for _, s := range m.Up.Scores {
		parts = append(parts, fmt.Sprintf("%s=%d", s.Node, s.Total))
	}
	return strings.Join(parts, " ")
}

// Detail is everything needed to look into the mismatch: how to run it
// again, both results, upstream's scores per plugin and the objects.
func (m *Mismatch) Detail() string {
	var b strings.Builder
	c := m.Case
	fmt.Fprintf(&b, "=== family %s, seed %d: %s\n", c.Family, c.Seed, m.Kind)
	fmt.Fprintf(&b, "again: make parity PARITY_FLAGS='-parity.only=%s -parity.seed=%d -parity.n=1 -parity.v'\n", c.Family, c.Seed)
	fmt.Fprintf(&b, "%s\n", m.Summary())
	if m.Up.Message != "" {
		fmt.Fprintf(&b, "upstream:  %s\n", m.Up.Message)
	} else {
		fmt.Fprintf(&b, "upstream:  top %v (its own draw: %s)\n", m.Up.Top, m.Up.Chosen)
	}
	if m.WS.Node != "" {
		fmt.Fprintf(&b, "wasmsched: %s\n", m.WS.Node)
	} else {
		fmt.Fprintf(&b, "wasmsched: %s: %s\n", m.WS.Status, m.WS.Message)
	}
	for _, s := range m.Up.Scores {
		names := make([]string, 0, len(s.Plugins))
		for n := range s.Plugins {
			names = append(names, n)
		}
		sort.Strings(names)
		parts := make([]string, 0, len(names))
		for _, n := range names {
			parts = append(parts, fmt.Sprintf("%s=%d", n, s.Plugins[n]))
		}
		fmt.Fprintf(&b, "  upstream score %s: %d = %s\n", s.Node, s.Total, strings.Join(parts, " "))
	}
	y, err := c.YAML()
	if err != nil {
		fmt.Fprintf(&b, "(no YAML: %v)\n", err)
	} else {
		b.Write(y)
	}
	return b.String()
}

// withoutDRA removes DynamicResources' PostFilter text from an upstream
// message.
func withoutDRA(msg string) string {
	msg = strings.Replace(msg, draPostFilter+", ", "", 1)
	return strings.Replace(msg, " "+draPostFilter+".", "", 1)
}
