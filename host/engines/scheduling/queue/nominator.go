package queue

import "github.com/wasmsched/wasmsched/abi"

// nominator remembers which pods preemption has nominated to which node,
// so that the filters of later cycles can keep room for them. It is not
// locked itself: the PriorityQueue's lock guards it, which also lets
// NominatedPodsForNode read the queue's newest version of each pod.
type nominator struct {
	byNode map[string][]*abi.Pod // in nomination order
	byUID  map[string]string
}

func newNominator() nominator {
	return nominator{byNode: map[string][]*abi.Pod{}, byUID: map[string]string{}}
}

// add nominates pod to node, replacing any earlier nomination; an empty
// node or a pod already bound only clears.
func (n *nominator) add(pod *abi.Pod, node string) {
	n.delete(pod.UID)
	if node == "" || pod.NodeName != "" {
		return
	}
	n.byNode[node] = append(n.byNode[node], pod)
	n.byUID[pod.UID] = node
}

func (n *nominator) delete(uid string) {
	node, ok := n.byUID[uid]
	if !ok {
		return
	}
	delete(n.byUID, uid)
	pods := n.byNode[node]
	for i, p := range pods {
		if p.UID == uid {
			pods = append(pods[:i], pods[i+1:]...)
			break
		}
	}
	if len(pods) == 0 {
		delete(n.byNode, node)
	} else {
		n.byNode[node] = pods
	}
}

// update follows a pod update. The API's nominatedNodeName lags behind the
// in-memory nomination (the status patch is asynchronous), so an update
// that neither had nor has one keeps the in-memory node; otherwise the
// pod's own field wins, which also clears or moves the nomination.
func (n *nominator) update(oldPod, newPod *abi.Pod) {
	node := newPod.NominatedNodeName
	if (oldPod == nil || oldPod.NominatedNodeName == "") && node == "" {
		node = n.byUID[newPod.UID]
	}
	n.add(newPod, node)
}
