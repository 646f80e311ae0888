package guest

import (
	"context"

	"github.com/wasmsched/wasmsched/abi"
)

// EditOp is what one ViewEdit does to a node of the what-if view.
type EditOp uint8

const (
	// EditRemove takes off its node a pod the cycle's snapshot has there
	// (a preemption victim).
	EditRemove EditOp = iota
	// EditAdd puts on the node a pod that is not there (a nominated pod).
	EditAdd
	// EditRestore puts back a pod an EditRemove took off the same node
	// earlier in this cycle's view and that nothing has put back since (a
	// victim reprieved).
	EditRestore
	// EditRemoveRestored takes off again a pod an EditRestore put back.
	EditRemoveRestored
)

// ViewEdit is one change to a node of the cycle's what-if view.
type ViewEdit struct {
	Slot uint32
	Op   EditOp
	Pod  *abi.Pod
}

// editViewMinor is the ABI minor version that brought FuncEditView.
const editViewMinor = 5

// EditView applies edits, in order, to this cycle's what-if view. A module
// of ABI v1.5 or later gets them in one edit_view call, naming by UID the
// pods its guest already holds (those its node records carry, and
// restored ones), so it decodes only the pods it has never seen; an older
// module gets one add_pod or remove_pod per edit.
func (c *Client) EditView(ctx context.Context, edits []ViewEdit) error {
	if len(edits) == 0 {
		return nil
	}
	if c.module.manifest.VersionMinor < editViewMinor {
		for i := range edits {
			e := &edits[i]
			var err error
			if e.Op == EditAdd || e.Op == EditRestore {
				err = c.AddPod(ctx, e.Slot, e.Pod)
			} else {
				err = c.RemovePod(ctx, e.Slot, e.Pod)
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
	c.enc.Reset()
	c.enc.Uvarint(uint64(len(edits)))
	for i := range edits {
		e := &edits[i]
		w := abi.ViewEdit{Slot: e.Slot, Pod: e.Pod}
		named := e.Pod.UID != "" // a pod without a UID always travels whole
		switch {
		case e.Op == EditRemove && named && c.pods.Carries(e.Pod), e.Op == EditRemoveRestored && named:
			w.Op, w.UID, w.Pod = abi.EditRemove, e.Pod.UID, nil
		case e.Op == EditRemove, e.Op == EditRemoveRestored:
			w.Op = abi.EditRemovePod
		case e.Op == EditRestore && named:
			w.Op, w.UID, w.Pod = abi.EditRestore, e.Pod.UID, nil
		default:
			w.Op = abi.EditAdd
		}
		c.enc.ViewEdit(&w)
	}
	_, err := c.runArg(ctx, abi.FuncEditView, 0, c.enc.B)
	return err
}
