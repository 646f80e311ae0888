package nodelabel

import (
	"fmt"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
)

func nodeIn(slot uint32, kv ...string) *plugin.NodeInfo {
	ni := &plugin.NodeInfo{Slot: slot}
	for i := 0; i+1 < len(kv); i += 2 {
		ni.Node.Labels = append(ni.Node.Labels, abi.Label{Key: kv[i], Value: kv[i+1]})
	}
	return ni
}

func TestValueFollowsTheNodeInTheSlot(t *testing.T) {
	var c Cache
	k := c.Key("zone", 0)
	a := nodeIn(3, "zone", "a")
	if v, _, ok := k.Value(a); !ok || v != "a" {
		t.Fatalf("first lookup: %q %v", v, ok)
	}
	// Same NodeInfo: answered from the cache, even though (against the
	// SDK's rule, to prove the hit) its labels changed in place.
	a.Node.Labels[0].Value = "changed-in-place"
	if v, _, _ := k.Value(a); v != "a" {
		t.Errorf("same NodeInfo: %q, want the cached a", v)
	}
	// A new NodeInfo in the slot (a sync replaced the node): looked up.
	b := nodeIn(3, "zone", "b")
	if v, _, ok := k.Value(b); !ok || v != "b" {
		t.Errorf("replaced node: %q %v, want b", v, ok)
	}
	noZone := nodeIn(3, "rack", "r1")
	if k.Has(noZone) {
		t.Error("a node without the key has it")
	}
	// Slots far apart and slot 0 share nothing.
	z := nodeIn(0, "zone", "z")
	if v, _, _ := k.Value(z); v != "z" {
		t.Errorf("slot 0: %q", v)
	}
	if v, _, ok := k.Value(noZone); ok || v != "" {
		t.Errorf("slot 3 after slot 0: %q %v", v, ok)
	}
}

func TestValueComparesNumbersWhenNumbered(t *testing.T) {
	var c Cache
	ni := nodeIn(1, "zone", "a")
	ni.Node.Labels[0].KeyID, ni.Node.Labels[0].ValueID = 7, 9
	// Key numbered 8 this cycle: the node's key (7) is another string,
	// whatever its text says.
	if c.Key("zone", 8).Has(ni) {
		t.Error("matched a key numbered differently")
	}
	other := nodeIn(1, "zone", "a")
	other.Node.Labels[0].KeyID, other.Node.Labels[0].ValueID = 7, 9
	if _, id, ok := c.Key("zone", 7).Value(other); !ok || id != 9 {
		t.Errorf("numbered lookup: id %d ok %v, want 9 true", id, ok)
	}
}

func TestKeysAreBoundedAndRenumberedPerCycle(t *testing.T) {
	var c Cache
	first := c.Key("k0", 1)
	if again := c.Key("k0", 2); again != first || again.id != 2 {
		t.Fatal("the same key must come back with this cycle's number")
	}
	for i := 1; i <= maxKeys; i++ {
		c.Key(fmt.Sprintf("k%d", i), 0)
	}
	if len(c.keys) > maxKeys {
		t.Fatalf("%d keys cached, bound %d", len(c.keys), maxKeys)
	}
	if v, _, ok := c.Key("k3", 0).Value(nodeIn(maxSlot, "k3", "x")); !ok || v != "x" {
		t.Error("a slot past the bound must still be answered (uncached)")
	}
}
