package decision

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
)

// DefaultRingSize is how many records serve keeps for /debug/explain
// unless told otherwise (--explain-ring-size): at DefaultLimits a
// scheduling record takes at most about 20 KiB (100 rejected nodes with
// their reasons, 20 scored nodes), an eviction round's a few tens of KiB
// (at most 100 answers and 100 entries per list), a vpod Schedule call's up to about 60 KiB (20
// steps of 20 candidates); scheduling records being most of a ring, it
// stays under a few tens of MiB, and typically a small part of that.
const DefaultRingSize = 1000

// Ring keeps the latest records, at most its size, and answers for a key
// (a pod's namespace/name) with the records it still holds. It is a Sink;
// with a Match set it records only the keys Match accepts.
type Ring struct {
	// Match, if set, picks the keys worth recording (simulate --explain
	// POD); nil records every one.
	Match func(kind, key string) bool

	mu      sync.Mutex
	items   []*Record
	next    int
	size    int
	added   int
	evicted int
}

// NewRing returns a ring of size records (at least 1).
func NewRing(size int) *Ring {
	return &Ring{size: max(size, 1)}
}

// Want implements Sink.
func (r *Ring) Want(kind, key string) bool {
	return r != nil && (r.Match == nil || r.Match(kind, key))
}

// Add implements Sink: the oldest record makes room for r when full.
func (r *Ring) Add(rec *Record) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.added++
	if len(r.items) < r.size {
		r.items = append(r.items, rec)
		return
	}
	r.items[r.next] = rec
	r.next = (r.next + 1) % r.size
	r.evicted++
}

// All returns the records held, oldest first.
func (r *Ring) All() []*Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*Record, 0, len(r.items))
	out = append(out, r.items[r.next:]...)
	return append(out, r.items[:r.next]...)
}

// Lookup returns the records held that mention key (Record.Mentions),
// newest first.
func (r *Ring) Lookup(key string) []*Record {
	all := r.All()
	var out []*Record
	for i := len(all) - 1; i >= 0; i-- {
		if all[i].Mentions(key) {
			out = append(out, all[i])
		}
	}
	return out
}

// Stats are a ring's counts: how many records it was given, and how many
// it let go to make room.
func (r *Ring) Stats() (size, held, added, evicted int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.size, len(r.items), r.added, r.evicted
}

// ExplainResponse is what /debug/explain answers for a pod or a vpod.
type ExplainResponse struct {
	Pod  string `json:"pod,omitempty"`
	VPod string `json:"vpod,omitempty"`
	// Records are the decisions the ring still holds that mention it,
	// newest first: for a pod, each scheduling attempt (with the
	// preemption it ran), the attempts that chose it as a preemption
	// victim, and the eviction rounds that named it; for a vpod, each
	// Schedule call's steps and the autoscaler passes that counted it.
	Records []*Record `json:"records"`
}

// Handler answers /debug/explain?pod=NS/NAME (NAME alone means the
// default namespace) or ?vpod=NS/NAME with the records that mention it
// as JSON; 400 without either, 404 when the ring holds none.
func (r *Ring) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		q := req.URL.Query()
		pod, vpod := q.Get("pod"), q.Get("vpod")
		var key, what string
		var resp ExplainResponse
		switch {
		case pod != "" && vpod == "":
			key, what = PodKey(pod), "pod"
			resp.Pod = key
		case vpod != "" && pod == "":
			key, what = VPodKey(vpod), "vpod"
			resp.VPod = PodKey(vpod)
		default:
			http.Error(w, "want one of ?pod=NAMESPACE/NAME or ?vpod=NAMESPACE/NAME: /debug/explain answers for one pod or one vpod", http.StatusBadRequest)
			return
		}
		recs := r.Lookup(key)
		if len(recs) == 0 {
			size, held, _, evicted := r.Stats()
			http.Error(w, fmt.Sprintf("no decision recorded for %s %s: the ring holds the latest %d decisions (%d now, %d let go); "+
				"it was not handled by this scheduler, or too long ago (--explain-ring-size raises the count)", what, PodKey(strings.TrimPrefix(key, vpodPrefix)), size, held, evicted),
				http.StatusNotFound)
			return
		}
		resp.Records = recs
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(resp)
	})
}

// vpodPrefix marks a vpod's record key, so that a vpod and a pod of the
// same name do not answer for each other.
const vpodPrefix = "vpod:"

// VPodKey is the record key of a vpod named NS/NAME (or NAME in the
// default namespace; a "vpod:" prefix is accepted).
func VPodKey(s string) string {
	return vpodPrefix + PodKey(strings.TrimPrefix(s, vpodPrefix))
}

// AutoscaleKey is the record key of a vpod scheduler's autoscaler
// passes.
func AutoscaleKey(scheduler string) string { return "autoscaler/" + scheduler }

// EvictionKey is the record key of an eviction round.
func EvictionKey(round int) string { return fmt.Sprintf("round-%d", round) }

// PodKey is the key of a pod named NS/NAME, or NAME in the default
// namespace.
func PodKey(s string) string {
	if strings.Contains(s, "/") {
		return s
	}
	return "default/" + s
}
