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
	useOwnNS   bool
	// nsSel is the compiled namespaceSelector when hasNsSel; nsAll when it
	// is empty (every namespace).
	nsSel    plugin.Selector
	hasNsSel bool
	nsAll    bool
	topoKey  string
	weight   int32
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
		c.ownNS, c.useOwnNS = owner.Namespace, true
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

// compileWeighted compiles preferred terms.
func compileWeighted(owner *abi.Pod, ts []abi.WeightedPodAffinityTerm) ([]term, error) {
	if len(ts) == 0 {
		return nil, nil
	}
	out := make([]term, len(ts))
	for i := range ts {
		var err error
		if out[i], err = compileTerm(owner, &ts[i].Term, ts[i].Weight); err != nil {
			return nil, err
		}
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
	if t.nsAll || (t.useOwnNS && ns == t.ownNS) {
		return true
	}
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

// matchesSet is matchesLabels for labels numbered setID
// (abi.PodGroup.LabelsID; 0 for a single pod's), remembered per set.
func (t *term) matchesSet(labels abi.Labels, setID uint32) bool {
	if v, ok := t.memo.Get(setID); ok {
		return v
	}
	v := t.matchesLabels(labels)
	t.memo.Put(setID, v)
	return v
}

// matchesOther reports whether a pod (or pod group) in namespace ns with
// labels, numbered setID (0: not numbered), matches this term of the
// incoming pod.
func (t *term) matchesOther(ns string, labels abi.Labels, setID uint32, c *nsCache) bool {
	if !t.matchesSet(labels, setID) {
		return false
	}
	if t.inNamespaceList(ns) {
		return true
	}
	if !t.hasNsSel {
		return false
	}
	l, ok := c.get(ns)
	return ok && t.nsSel.Matches(l)
}

// matchesAll reports whether (ns, labels) match every term; false for no
// terms, as upstream's podMatchesAllAffinityTerms.
func matchesAll(ts []term, ns string, labels abi.Labels, setID uint32, c *nsCache) bool {
	if len(ts) == 0 {
		return false
	}
	for i := range ts {
		if !ts[i].matchesOther(ns, labels, setID, c) {
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
