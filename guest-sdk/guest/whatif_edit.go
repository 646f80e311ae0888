package guest

import (
	"unsafe"

	"github.com/wasmsched/wasmsched/abi"
)

// editView applies an edit_view request (ABI v1.5): many add/remove
// changes, to any nodes, in one call. Each node is copied at most once per
// view level, however many edits touch it; pods named by UID are found
// on the node (remove) or among the pods edits took off it (restore), so
// only the pods an edit carries are decoded.
func (g *Guest) editView(in []byte) error {
	if err := g.canEdit(); err != nil {
		return err
	}
	// UIDs alias the input: they are only compared during this call.
	d := &g.codec.dec
	d.Reset(in, true)
	n := d.ViewEditsCount()
	if err := d.Err(); err != nil {
		return newError("edit_view: " + err.Error())
	}
	var e abi.RawViewEdit
	for i := 0; i < n; i++ {
		d.RawViewEdit(&e)
		err := d.Err()
		if err == nil {
			err = g.applyEdit(&e)
		}
		if err != nil {
			return newError("edit_view: edit " + abi.Itoa(int64(i)) + ": " + err.Error())
		}
	}
	if d.Remaining() != 0 {
		return newError("edit_view: trailing bytes after the edits")
	}
	return nil
}

// canEdit checks that the view may change now: after init, in a cycle.
func (g *Guest) canEdit() error {
	if !g.inited {
		return newError("what-if edit before init")
	}
	if !g.cycle.havePod {
		return newError("what-if edit outside a cycle")
	}
	return nil
}

// applyEdit makes one change to the view. The pods it removes stay in
// the node's removed list; one it adds is copied into the node's pods.
func (g *Guest) applyEdit(e *abi.RawViewEdit) error {
	n, err := g.editable(e.Slot)
	if err != nil {
		return err
	}
	var p *abi.Pod
	switch e.Op {
	case abi.EditRemove, abi.EditRemovePod:
		n.removed = growPods(n.removed)
		p = &n.removed[len(n.removed)-1]
		if e.Op == abi.EditRemove {
			if i := podIndex(n.ni.Pods, e.UID); i >= 0 {
				copyPod(p, &n.ni.Pods[i])
			} else {
				err = newError("no pod with UID \"" + e.UID + "\" on node " + n.ni.Node.Name + " in the view")
			}
		} else {
			// Decoded once, into the slab: a later restore puts it
			// back without decoding it again.
			err = g.decodeCarried(e.Pod, p)
		}
		if err != nil {
			n.removed = n.removed[:len(n.removed)-1]
			return err
		}
		n.ni.RemovePodOwned(p)
	case abi.EditAdd, abi.EditRestore:
		p = &g.view.scratch
		if e.Op == abi.EditAdd {
			err = g.decodeCarried(e.Pod, p)
		} else if i := podIndex(n.removed, e.UID); i >= 0 {
			copyPod(p, &n.removed[i])
			n.removed = deletePod(n.removed, i)
		} else {
			err = newError("restore of pod UID \"" + e.UID + "\", which no edit of this cycle took off node " + n.ni.Node.Name)
		}
		if err != nil {
			return err
		}
		n.ni.AddPod(p)
		p = &n.ni.Pods[len(n.ni.Pods)-1]
	default:
		return newError("unknown view edit op")
	}
	n.ni.IndexPods()
	return g.tellExtensions(p, n, e.Op >= abi.EditAdd)
}

// decodeCarried decodes the pod an edit carries into p, its bytes and
// lists in the view's slab: they outlive the input buffer, until the
// cycle ends.
func (g *Guest) decodeCarried(b []byte, p *abi.Pod) error {
	var d abi.Decoder
	d.Reset(g.view.slab.KeepBytes(b), true)
	d.UseSlab(&g.view.slab)
	d.Pod(p)
	if err := d.Err(); err != nil {
		return err
	}
	if d.Remaining() != 0 {
		return newError("trailing bytes after the pod")
	}
	g.mirror.numberPod(p)
	return nil
}

// podIndex finds the first pod with uid in pods (the one RemovePod
// drops), or -1. An empty UID names no pod.
func podIndex(pods []abi.Pod, uid string) int {
	if uid == "" {
		return -1
	}
	for i := range pods {
		if pods[i].UID == uid {
			return i
		}
	}
	return -1
}

// growPods extends pods by one zero pod (appending a Pod value would
// write it out field by field).
func growPods(pods []abi.Pod) []abi.Pod {
	if len(pods) == cap(pods) {
		pods = append(pods, make([]abi.Pod, 1+len(pods))...)[:len(pods)]
	}
	pods = pods[:len(pods)+1]
	clear(pods[len(pods)-1:])
	return pods
}

// deletePod drops pods[i] in place, keeping the order.
func deletePod(pods []abi.Pod, i int) []abi.Pod {
	copy(pods[i:], pods[i+1:])
	clear(pods[len(pods)-1:])
	return pods[:len(pods)-1]
}

// copyPod is *dst = *src as one memory copy: TinyGo writes out a Pod
// assignment field by field, over a kilobyte of code.
func copyPod(dst, src *abi.Pod) { copy(unsafe.Slice(dst, 1), unsafe.Slice(src, 1)) }
