package plugintest

import (
	"strings"

	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
)

// NumberGroups numbers the label sets of the nodes' pod groups
// (abi.PodGroup.LabelsID) as a guest's string table does: equal label
// sets, on any node, share a number, distinct ones do not. Tests of
// plugins that remember answers per label set (plugin.LabelMemo) call it
// so that their memos are used as in a module; it returns how many sets
// it numbered.
func NumberGroups(nodes []*plugin.NodeInfo) int {
	ids := map[string]uint32{}
	var key strings.Builder
	for _, ni := range nodes {
		for i := range ni.PodGroups {
			g := &ni.PodGroups[i]
			key.Reset()
			for _, l := range g.Labels {
				key.WriteString(l.Key)
				key.WriteByte(0)
				key.WriteString(l.Value)
				key.WriteByte(0)
			}
			id, ok := ids[key.String()]
			if !ok {
				id = uint32(len(ids) + 1)
				ids[key.String()] = id
			}
			g.LabelsID = id
		}
	}
	return len(ids)
}
