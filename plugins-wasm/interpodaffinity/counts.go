package interpodaffinity

// topoCounts counts matches per topology pair (key, value), kept as one
// map of values per key so a node's pair is looked up with the node's own
// label strings, without building a key. Pairs whose count drops to zero
// are deleted, as upstream, so Len is the number of pairs with matches.
type topoCounts struct {
	keys []string
	vals []map[string]int64
}

// keyIndex returns the index of key k, adding it if new.
func (c *topoCounts) keyIndex(k string) int {
	for i := range c.keys {
		if c.keys[i] == k {
			return i
		}
	}
	c.keys = append(c.keys, k)
	c.vals = append(c.vals, map[string]int64{})
	return len(c.keys) - 1
}

// add adds d to pair (keys[ki], v).
func (c *topoCounts) add(ki int, v string, d int64) {
	m := c.vals[ki]
	n := m[v] + d
	if n == 0 {
		delete(m, v)
	} else {
		m[v] = n
	}
}

// get returns the count of pair (keys[ki], v).
func (c *topoCounts) get(ki int, v string) int64 { return c.vals[ki][v] }

// Len is the number of pairs with a non-zero count.
func (c *topoCounts) Len() int {
	n := 0
	for _, m := range c.vals {
		n += len(m)
	}
	return n
}

// clone deep-copies the counts.
func (c *topoCounts) clone() topoCounts {
	out := topoCounts{keys: append([]string(nil), c.keys...), vals: make([]map[string]int64, len(c.vals))}
	for i, m := range c.vals {
		n := make(map[string]int64, len(m))
		for k, v := range m {
			n[k] = v
		}
		out.vals[i] = n
	}
	return out
}
