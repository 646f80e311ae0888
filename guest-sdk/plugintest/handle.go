package plugintest

import (
	"bytes"
	"encoding/json"
	"sort"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
)

// Handle is a fake plugin.Handle with a fixed cluster size and image
// spread.
type Handle struct {
	NodeCount int
	Images    map[string]int
	// NodeList is what Nodes returns.
	NodeList []*plugin.NodeInfo
	// Namespaces are what NamespaceLabels returns.
	Namespaces map[string]abi.Labels
}

// NumNodes implements plugin.Handle.
func (h *Handle) NumNodes() int { return h.NodeCount }

// Nodes implements plugin.Handle.
func (h *Handle) Nodes() []*plugin.NodeInfo { return h.NodeList }

// NodesWithAffinityPods implements plugin.Handle: the nodes of NodeList
// with affinity pods.
func (h *Handle) NodesWithAffinityPods() []*plugin.NodeInfo {
	var out []*plugin.NodeInfo
	for _, n := range h.NodeList {
		if len(n.PodsWithAffinity) > 0 {
			out = append(out, n)
		}
	}
	return out
}

// NamespaceLabels implements plugin.Handle.
func (h *Handle) NamespaceLabels(name string) (abi.Labels, bool) {
	l, ok := h.Namespaces[name]
	return l, ok
}

// StringID implements plugin.Handle: the fake numbers nothing (plugins
// then compare strings, as they must for unnumbered values).
func (h *Handle) StringID(string) abi.StrID { return 0 }

// ImageNumNodes implements plugin.Handle.
func (h *Handle) ImageNumNodes(name string) int { return h.Images[name] }

// Args parses JSON (YAML's data model) into the abi.Value the host would
// pass, with map keys sorted like the host sorts them. An empty string
// gives nil, i.e. default args.
func Args(t testing.TB, js string) *abi.Value {
	t.Helper()
	if js == "" {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader([]byte(js)))
	d.UseNumber()
	var x any
	if err := d.Decode(&x); err != nil {
		t.Fatalf("plugintest.Args: %v", err)
	}
	v := toValue(x)
	return &v
}

func toValue(x any) abi.Value {
	switch x := x.(type) {
	case nil:
		return abi.Value{}
	case bool:
		return abi.Value{Kind: abi.KindBool, Bool: x}
	case string:
		return abi.Value{Kind: abi.KindString, Str: x}
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return abi.Value{Kind: abi.KindInt, Int: i}
		}
		f, _ := x.Float64()
		return abi.Value{Kind: abi.KindFloat, Float: f}
	case []any:
		v := abi.Value{Kind: abi.KindList, List: make([]abi.Value, len(x))}
		for i := range x {
			v.List[i] = toValue(x[i])
		}
		return v
	case map[string]any:
		v := abi.Value{Kind: abi.KindMap}
		for k, e := range x {
			v.Map = append(v.Map, abi.Field{Key: k, Value: toValue(e)})
		}
		sort.Slice(v.Map, func(i, j int) bool { return v.Map[i].Key < v.Map[j].Key })
		return v
	}
	panic("plugintest: unexpected JSON value")
}
