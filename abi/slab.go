package abi

// Slab is storage a Decoder can take the lists of a Pod from instead of
// allocating them, and that its owner empties all at once (Reset) when
// nothing decoded into it is used any more. The guest decodes the pods a
// dry run's edits carry with one, reset at every cycle: in TinyGo every
// allocation brings the next collection nearer, and a collection walks
// the whole mirror, so decoding 2000 victims per dry run the plain way
// cost more in collections than in decoding (docs/PERFORMANCE.md,
// "PreemptionAsync").
//
// It covers what every pod carries: its bytes (KeepBytes, for strings
// decoded in place), its labels (and node selectors and selectors'
// labels) and its containers. Other lists (tolerations, owners, affinity
// terms, spread constraints, extended resources, host ports) are still
// allocated: each type a slab serves costs every module some 350 bytes
// of code, and plugins-wasm/examples/sizecheck's budget is nearly spent.
type Slab struct {
	bytes      slabChunks[byte]
	labels     slabChunks[Label]
	containers slabChunks[Container]
}

// slabChunks hands out runs of T from chunks that are kept across
// Resets and reused after them.
type slabChunks[T any] struct {
	chunks [][]T
	cur    int // the chunk being used
	used   int // how much of it
}

// slabChunkLen is the length of a chunk of lists' elements;
// slabByteChunk of a chunk of kept bytes.
const (
	slabChunkLen  = 256
	slabByteChunk = 16 << 10
)

// take returns n consecutive elements (their previous contents left as
// they were), from the current chunk or a later one, making a chunk of
// chunkLen (or n) elements only when every kept one is used.
func (c *slabChunks[T]) take(n, chunkLen int) []T {
	for {
		if c.cur < len(c.chunks) {
			ch := c.chunks[c.cur]
			if len(ch)-c.used >= n {
				s := ch[c.used : c.used+n : c.used+n]
				c.used += n
				return s
			}
			c.cur, c.used = c.cur+1, 0
			continue
		}
		c.chunks = append(c.chunks, make([]T, max(chunkLen, n)))
	}
}

func (c *slabChunks[T]) reset() { c.cur, c.used = 0, 0 }

// Reset empties the slab: everything decoded with it must be dead by
// now, for its storage is handed out again.
func (s *Slab) Reset() {
	s.bytes.reset()
	s.labels.reset()
	s.containers.reset()
}

// KeepBytes copies b into the slab, so that strings decoded in place
// from the copy (an aliasing Decoder) live until the next Reset.
func (s *Slab) KeepBytes(b []byte) []byte {
	kept := s.bytes.take(len(b), slabByteChunk)
	copy(kept, b)
	return kept
}

// UseSlab makes the decoder take lists from s (nil: allocate them).
func (d *Decoder) UseSlab(s *Slab) { d.slab = s }

func (s *Slab) makeLabels(n int) Labels {
	if s == nil {
		return make(Labels, n)
	}
	ls := s.labels.take(n, slabChunkLen)
	clear(ls)
	return ls
}

func (s *Slab) makeContainers(n int) []Container {
	if s == nil {
		return make([]Container, n)
	}
	cs := s.containers.take(n, slabChunkLen)
	clear(cs)
	return cs
}
