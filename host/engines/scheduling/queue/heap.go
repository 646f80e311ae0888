package queue

import "container/heap"

// podHeap is a binary heap of pods with an index by UID, so that pods can
// be found, updated and removed in O(log n) besides being popped in order.
type podHeap struct {
	items []*QueuedPodInfo
	pos   map[string]int
	less  func(a, b *QueuedPodInfo) bool
}

func newPodHeap(less func(a, b *QueuedPodInfo) bool) *podHeap {
	return &podHeap{pos: map[string]int{}, less: less}
}

// heap.Interface; use the lower-case methods below instead.
func (h *podHeap) Len() int           { return len(h.items) }
func (h *podHeap) Less(i, j int) bool { return h.less(h.items[i], h.items[j]) }
func (h *podHeap) Swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.pos[h.items[i].Pod.UID] = i
	h.pos[h.items[j].Pod.UID] = j
}
func (h *podHeap) Push(x any) {
	p := x.(*QueuedPodInfo)
	h.pos[p.Pod.UID] = len(h.items)
	h.items = append(h.items, p)
}
func (h *podHeap) Pop() any {
	n := len(h.items) - 1
	p := h.items[n]
	h.items[n] = nil
	h.items = h.items[:n]
	delete(h.pos, p.Pod.UID)
	return p
}

func (h *podHeap) get(uid string) *QueuedPodInfo {
	if i, ok := h.pos[uid]; ok {
		return h.items[i]
	}
	return nil
}

func (h *podHeap) has(uid string) bool { _, ok := h.pos[uid]; return ok }

// add inserts p; the caller makes sure its UID is not present yet.
func (h *podHeap) add(p *QueuedPodInfo) { heap.Push(h, p) }

func (h *podHeap) peek() *QueuedPodInfo {
	if len(h.items) == 0 {
		return nil
	}
	return h.items[0]
}

func (h *podHeap) pop() *QueuedPodInfo {
	if len(h.items) == 0 {
		return nil
	}
	return heap.Pop(h).(*QueuedPodInfo)
}

func (h *podHeap) remove(uid string) *QueuedPodInfo {
	i, ok := h.pos[uid]
	if !ok {
		return nil
	}
	return heap.Remove(h, i).(*QueuedPodInfo)
}

// fix restores the order after the pod's sort key changed.
func (h *podHeap) fix(uid string) {
	if i, ok := h.pos[uid]; ok {
		heap.Fix(h, i)
	}
}
