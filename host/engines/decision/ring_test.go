package decision

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

func rec(key string, n int) *Record {
	return &Record{Kind: KindScheduling, Key: key, Scheduling: &Scheduling{Pod: key, Node: fmt.Sprint("n", n)}}
}

// The ring keeps the latest records, answers a pod's newest first, and
// counts what it let go; Add and Lookup may race.
func TestRingKeepsTheLatest(t *testing.T) {
	r := NewRing(3)
	for i := 0; i < 5; i++ {
		r.Add(rec("default/p", i))
	}
	r.Add(rec("default/q", 9))
	got := r.Lookup("default/p")
	if len(got) != 2 || got[0].Scheduling.Node != "n4" || got[1].Scheduling.Node != "n3" {
		t.Errorf("lookup: %v", got)
	}
	if size, held, added, evicted := r.Stats(); size != 3 || held != 3 || added != 6 || evicted != 3 {
		t.Errorf("stats %d %d %d %d", size, held, added, evicted)
	}
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				r.Add(rec("default/p", i))
				_ = r.Lookup("default/p")
			}
		}()
	}
	wg.Wait()
}

func TestRingMatch(t *testing.T) {
	r := NewRing(10)
	r.Match = func(kind, key string) bool { return key == "a/b" }
	if !r.Want(KindScheduling, "a/b") || r.Want(KindScheduling, "a/c") {
		t.Error("Match not applied")
	}
	var none *Ring
	if none.Want(KindScheduling, "a/b") {
		t.Error("a nil ring wants records")
	}
}

func TestExplainHandler(t *testing.T) {
	r := NewRing(5)
	r.Add(rec("default/web", 1))
	get := func(q string) (int, string) {
		w := httptest.NewRecorder()
		r.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/debug/explain"+q, nil))
		return w.Code, w.Body.String()
	}
	for _, q := range []string{"?pod=default/web", "?pod=web"} {
		code, body := get(q)
		var resp ExplainResponse
		if code != http.StatusOK || json.Unmarshal([]byte(body), &resp) != nil || resp.Pod != "default/web" || len(resp.Records) != 1 {
			t.Errorf("%s: %d %s", q, code, body)
		}
	}
	if code, body := get("?pod=default/other"); code != http.StatusNotFound || !strings.Contains(body, "no decision recorded for pod default/other") ||
		!strings.Contains(body, "latest 5 decisions") {
		t.Errorf("unknown pod: %d %s", code, body)
	}
	if code, body := get(""); code != http.StatusBadRequest || !strings.Contains(body, "?pod=") {
		t.Errorf("no pod: %d %s", code, body)
	}
}
