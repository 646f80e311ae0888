package snapshot

import (
	"sync"

	"github.com/wasmsched/wasmsched/abi"
)

// Strings is the host's string table (ABI v1.5, see abi.StrID): label
// keys and values, taint keys and values, image names and namespaces, in
// the order first encoded. A live snapshot and the copies made from it
// share one table, so a record encoded from any copy means the same to
// every guest; guests receive the entries they lack with each sync.
//
// The table only grows. A live snapshot starts a new one (and so a full
// resync of every mirror) once it holds 2^18 entries, which bounds
// what strings no longer in use can cost a guest.
type Strings struct {
	mu   sync.Mutex
	ids  map[string]abi.StrID
	list []string
}

// maxStrings is the size at which a live snapshot starts a new table (a
// variable for tests).
var maxStrings = 1 << 18

// NewStrings returns an empty table.
func NewStrings() *Strings { return &Strings{ids: map[string]abi.StrID{}} }

// ID implements abi.Interner.
func (t *Strings) ID(s string) abi.StrID {
	t.mu.Lock()
	defer t.mu.Unlock()
	if id, ok := t.ids[s]; ok {
		return id
	}
	t.list = append(t.list, s)
	id := abi.StrID(len(t.list))
	t.ids[s] = id
	return id
}

// Len is the number of strings numbered so far.
func (t *Strings) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.list)
}

// Since returns the strings numbered after the first n (appended to dst).
func (t *Strings) Since(n int, dst []string) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if n < len(t.list) {
		dst = append(dst, t.list[n:]...)
	}
	return dst
}
