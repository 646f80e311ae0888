package knative

import "github.com/wasmsched/wasmsched/guest-sdk/plugin"

// EvenPodSpread keeps a vpod's vreplicas evenly spread over the adapter
// pods. As a predicate it fails pod P (holding c of the vpod's
// vreplicas) when one more vreplica there would put it more than MaxSkew
// away from some other pod Q holding o: |c+1−o| > MaxSkew. A Q holding
// none of the vpod and with no free capacity (Free ≤ 0) is left out: it
// is full of other vpods. As a priority it scores −Σ_Q |c+1−o| over the
// other pods, leaving out those with o = 0 and Free exactly 0 (Knative's
// scorer tests == 0 where its filter tests ≤ 0). Both pass or score 0
// when the StatefulSet has no replicas.
type EvenPodSpread struct{ named }

// NewVPodFilter implements plugin.VPodPredicatePlugin; args {"MaxSkew": int32}.
func (EvenPodSpread) NewVPodFilter(args []byte) (plugin.VPodFilter, error) {
	maxSkew, err := maxSkewArgs(args)
	if err != nil {
		return nil, err
	}
	return func(s *plugin.VPodState, pods []int, verdicts []*plugin.Status) {
		if s.Replicas() <= 0 {
			return
		}
		// max over Q ≠ P of |x − o_Q| is at the smallest or the largest
		// o_Q, so the two smallest and two largest (with their pods)
		// answer every P.
		var lo, hi extremes
		lo.init(false)
		hi.init(true)
		for q := 0; q < s.NumPods(); q++ {
			o, _ := s.PodSpread(q)
			if o == 0 && s.Free(q) <= 0 {
				continue
			}
			lo.add(int64(o), q)
			hi.add(int64(o), q)
		}
		for i, p := range pods {
			c, _ := s.PodSpread(p)
			x := int64(c) + 1
			if v, ok := lo.other(p); ok && abs64(x-v) > int64(maxSkew) {
				verdicts[i] = errUnevenSpread
				continue
			}
			if v, ok := hi.other(p); ok && abs64(x-v) > int64(maxSkew) {
				verdicts[i] = errUnevenSpread
			}
		}
	}, nil
}

// NewVPodScorer implements plugin.VPodPriorityPlugin; args {"MaxSkew":
// int32}, decoded but, as in Knative, not used in the score.
func (EvenPodSpread) NewVPodScorer(args []byte) (plugin.VPodScorer, error) {
	if _, err := maxSkewArgs(args); err != nil {
		return nil, err
	}
	var sums absSums
	return func(s *plugin.VPodState, pods []int, scores []int64) error {
		if s.Replicas() <= 0 {
			return nil
		}
		sums.reset()
		for q := 0; q < s.NumPods(); q++ {
			o, _ := s.PodSpread(q)
			if o == 0 && s.Free(q) == 0 {
				continue
			}
			sums.add(int64(o))
		}
		sums.prepare()
		for i, p := range pods {
			c, _ := s.PodSpread(p)
			x := int64(c) + 1
			penalty := sums.sum(x)
			if !(c == 0 && s.Free(p) == 0) {
				penalty -= 1 // P's own term, |c+1−c|
			}
			scores[i] = -penalty
		}
		return nil
	}, nil
}

// extremes keeps the two smallest (or largest) values added and the pods
// holding them.
type extremes struct {
	largest bool
	n       int
	v       [2]int64
	pod     [2]int
}

func (e *extremes) init(largest bool) { *e = extremes{largest: largest} }

func (e *extremes) before(a, b int64) bool {
	if e.largest {
		return a > b
	}
	return a < b
}

func (e *extremes) add(v int64, pod int) {
	switch {
	case e.n == 0 || e.before(v, e.v[0]):
		e.v[1], e.pod[1] = e.v[0], e.pod[0]
		e.v[0], e.pod[0] = v, pod
	case e.n == 1 || e.before(v, e.v[1]):
		e.v[1], e.pod[1] = v, pod
	}
	if e.n < 2 {
		e.n++
	}
}

// other is the extreme value held by a pod other than p.
func (e *extremes) other(p int) (int64, bool) {
	for k := 0; k < e.n; k++ {
		if e.pod[k] != p {
			return e.v[k], true
		}
	}
	return 0, false
}
