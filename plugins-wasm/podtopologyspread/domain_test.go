package podtopologyspread

import (
	"fmt"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
)

// TestDomainIndexFindsValuesWhateverTheirNumbering adds values numbered
// and not, past the size where maps take over, and finds each by text
// and by number.
func TestDomainIndexFindsValuesWhateverTheirNumbering(t *testing.T) {
	for _, firstNumbered := range []bool{true, false} {
		var x domainIndex
		ids := map[string]abi.StrID{}
		for i := 0; i < 3*smallDomains; i++ {
			v := fmt.Sprintf("v%d", i)
			var id abi.StrID
			// Every seventh value comes with the other kind of numbering.
			if (i%7 != 0) == firstNumbered {
				id = abi.StrID(i + 1)
			}
			ids[v] = id
			if _, ok := x.find(v, id); ok {
				t.Fatalf("%s found before it was added", v)
			}
			if d := x.add(v, id); d != int32(i) {
				t.Fatalf("add(%s) = %d, want %d", v, d, i)
			}
			if d, ok := x.find(v, id); !ok || d != int32(i) {
				t.Fatalf("find(%s, %d) right after add = %d, %v", v, id, d, ok)
			}
		}
		for i := 0; i < 3*smallDomains; i++ {
			v := fmt.Sprintf("v%d", i)
			if d, ok := x.find(v, ids[v]); !ok || d != int32(i) {
				t.Fatalf("first numbered %v: find(%s, %d) = %d, %v", firstNumbered, v, ids[v], d, ok)
			}
			if d, ok := x.find(v, 0); !ok || d != int32(i) {
				t.Fatalf("first numbered %v: find(%s, unnumbered) = %d, %v", firstNumbered, v, d, ok)
			}
		}
		if _, ok := x.find("nope", abi.StrAbsent); ok {
			t.Fatal("an absent value was found")
		}
	}
}
