package interpodaffinity

import (
	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
)

// term is a compiled PodAffinityTerm (kube-scheduler's AffinityTerm): the
// label selector, the namespaces it looks in, and its topology key. It is
// immutable once compiled, so cycle states that hold it share it.
type term struct {
	sel plugin.Selector
	// owner is the labels of the pod the term belongs to, for
	// matchLabelKeys / mismatchLabelKeys.
	owner        abi.Labels
	matchKeys    []string
	mismatchKeys []string
	// namespaces is the explicit list; ownNS is the owner's namespace,
	// used alone when there is neither a list nor a namespaceSelector.
	namespaces []string
	ownNS      string
	ownNSID    abi.StrID // ownNS's number this cycle (0: compare text)
	useOwnNS   bool
	// nsSel is the compiled namespaceSelector when hasNsSel; nsAll when it
	// is empty (every namespace).
	nsSel    plugin.Selector
	hasNsSel bool
	nsAll    bool
	topoKey  string
	// weight is a preferred term's: negative for anti-affinity.
	weight int32
	// key is the index of topoKey in the counts the term feeds.
	key int
	// memo remembers matchesLabels' answers per pod group label set for
	// the cycle (a zero MemoRef remembers nothing).
	memo plugin.MemoRef
}

// compileTerm compiles t as a term of owner. An invalid selector is an
// error.
func compileTerm(owner *abi.Pod, t *abi.PodAffinityTerm, weight int32) (term, error) {
	c := term{
		owner:        owner.Labels,
		matchKeys:    t.MatchLabelKeys,
		mismatchKeys: t.MismatchLabelKeys,
		topoKey:      t.TopologyKey,
		weight:       weight,
	}
	var err error
	if c.sel, err = plugin.NewSelector(t.LabelSelector); err != nil {
		return c, err
	}
	if len(t.Namespaces) == 0 && t.NamespaceSelector == nil {
		c.ownNS, c.ownNSID, c.useOwnNS = owner.Namespace, owner.NamespaceID, true
	} else {
		c.namespaces = t.Namespaces
	}
	if t.NamespaceSelector != nil {
		if c.nsSel, err = plugin.NewSelector(t.NamespaceSelector); err != nil {
			return c, err
		}
		c.hasNsSel = true
		c.nsAll = c.nsSel.Empty()
	}
	return c, nil
}

// compileTerms compiles required terms (weight 0).
func compileTerms(owner *abi.Pod, ts []abi.PodAffinityTerm) ([]term, error) {
	if len(ts) == 0 {
		return nil, nil
	}
	out := make([]term, len(ts))
	for i := range ts {
		var err error
		if out[i], err = compileTerm(owner, &ts[i], 0); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// compileWeighted appends preferred terms to out, their weights times
// sign (1 for affinity, -1 for anti-affinity).
func compileWeighted(out []term, owner *abi.Pod, ts []abi.WeightedPodAffinityTerm, sign int32) ([]term, error) {
	for i := range ts {
		t, err := compileTerm(owner, &ts[i].Term, sign*ts[i].Weight)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// matchesLabels reports whether labels satisfy the term's selector ANDed
// with its matchLabelKeys (key In [owner's value]) and mismatchLabelKeys
// (key NotIn [owner's value]); keys the owner lacks are ignored.
func (t *term) matchesLabels(labels abi.Labels) bool {
	if !t.sel.Matches(labels) {
		return false
	}
	for _, k := range t.matchKeys {
		if ov, ok := t.owner.Get(k); ok {
			if v, ok := labels.Get(k); !ok || v != ov {
				return false
			}
		}
	}
	for _, k := range t.mismatchKeys {
		if ov, ok := t.owner.Get(k); ok {
			if v, ok := labels.Get(k); ok && v == ov {
				return false
			}
		}
	}
	return true
}

// inNamespace reports whether the term covers namespace ns, whose labels
// are nsLabels (nil if unknown): AffinityTerm.Matches' namespace half.
func (t *term) inNamespace(ns string, nsLabels abi.Labels) bool {
	return t.inNamespaceList(ns) || (t.hasNsSel && t.nsSel.Matches(nsLabels))
}

// inNamespaceList is the part of inNamespace that needs no labels.
func (t *term) inNamespaceList(ns string) bool {
	return t.nsAll || (t.useOwnNS && ns == t.ownNS) || t.listed(ns)
}

// listed reports whether ns is in the term's explicit namespace list.
func (t *term) listed(ns string) bool {
	for _, n := range t.namespaces {
		if n == ns {
			return true
		}
	}
	return false
}

// nsCache resolves namespace labels once per namespace for the incoming
// pod's terms, like upstream merging the namespaceSelector into a set of
// names at PreFilter. Filled while the state is built, read-only after.
type nsCache struct {
	h      plugin.Handle
	labels map[string]abi.Labels
	known  map[string]bool
	// frozen: the cache is shared by cloned states and no longer written.
	frozen bool
}

func newNSCache(h plugin.Handle) *nsCache {
	return &nsCache{h: h, labels: map[string]abi.Labels{}, known: map[string]bool{}}
}

// get returns ns's labels. Unknown namespaces are matched by no non-empty
// selector, as upstream lists only existing namespaces.
func (c *nsCache) get(ns string) (abi.Labels, bool) {
	if c == nil {
		return nil, false
	}
	if k, ok := c.known[ns]; ok {
		return c.labels[ns], k
	}
	l, ok := c.h.NamespaceLabels(ns)
	if !c.frozen {
		c.known[ns], c.labels[ns] = ok, l
	}
	return l, ok
}

// single is pod p as a group of one (its labels not numbered), for the
// matching that pod groups go through.
func single(p *abi.Pod) abi.PodGroup {
	return abi.PodGroup{Namespace: p.Namespace, NamespaceID: p.NamespaceID, Labels: p.Labels, Count: 1}
}

// matchesOther reports whether the pods of group g (a pod group of a
// node, or a single pod) match this term of the incoming pod. The plugin
// asks it per group of every node, so it stays small: a label set's
// first match and namespaces other than the owner's are calls.
func (t *term) matchesOther(g *abi.PodGroup, c *nsCache) bool {
	if v, ok := t.memo.Get(g.LabelsID); ok {
		if !v {
			return false
		}
	} else if !t.matchAndRemember(g) {
		return false
	}
	if t.nsAll || (t.useOwnNS && abi.SameString(g.Namespace, g.NamespaceID, t.ownNS, t.ownNSID)) {
		return true
	}
	return t.otherNamespace(g.Namespace, c)
}

// matchAndRemember is matchesLabels for a label set not yet remembered.
//
//go:noinline
func (t *term) matchAndRemember(g *abi.PodGroup) bool {
	v := t.matchesLabels(g.Labels)
	t.memo.Put(g.LabelsID, v)
	return v
}

// otherNamespace is matchesOther's namespace check past the owner's
// own namespace: the explicit list, then the namespaceSelector.
//
//go:noinline
func (t *term) otherNamespace(ns string, c *nsCache) bool {
	if t.listed(ns) {
		return true
	}
	if !t.hasNsSel {
		return false
	}
	l, ok := c.get(ns)
	return ok && t.nsSel.Matches(l)
}

// matchingPods counts the pods of node n that the term matches, and
// reports whether any pod group matched. Groups whose label set the term
// remembers not matching are passed over without a call: most groups,
// for a selector of one workload. (Few parameters on purpose: see
// docs/PERFORMANCE.md on calls in Wasm.) Inlined into the per-node
// loops: a call per node costs Wasm an interruption check.
//
//go:inline
func (t *term) matchingPods(n *plugin.NodeInfo, c *nsCache) (pods int64, matched bool) {
	for gi := range n.PodGroups {
		g := &n.PodGroups[gi]
		if v, known := t.memo.Get(g.LabelsID); known && !v {
			continue
		}
		if t.matchesOther(g, c) {
			pods += int64(g.Count)
			matched = true
		}
	}
	return pods, matched
}

// matchesAll reports whether the pods of g match every term; false for
// no terms, as upstream's podMatchesAllAffinityTerms.
//
//go:inline
func matchesAll(ts []term, g *abi.PodGroup, c *nsCache) bool {
	if len(ts) == 0 {
		return false
	}
	for i := range ts {
		if !ts[i].matchesOther(g, c) {
			return false
		}
	}
	return true
}

// existingTermMatches reports whether a term of an existing pod matches
// the incoming pod, whose namespace labels are nsLabels.
func existingTermMatches(t *abi.PodAffinityTerm, owner, incoming *abi.Pod, nsLabels abi.Labels) bool {
	c, err := compileTerm(owner, t, 0) // a value: compiling allocates nothing
	if err != nil {
		return false // API validation rejects such pods; match nothing
	}
	return c.inNamespace(incoming.Namespace, nsLabels) && c.matchesLabels(incoming.Labels)
}
