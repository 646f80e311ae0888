package endpoints

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/wasmsched/wasmsched/host/config"
)

// TestConfigzFollowsTheRunningConfiguration: /configz is 503 until a
// configuration is set, then answers the last one set, under
// kube-scheduler's key.
func TestConfigzFollowsTheRunningConfiguration(t *testing.T) {
	var cz Configz
	get := func() (int, map[string]config.Configuration) {
		rec := httptest.NewRecorder()
		cz.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/configz", nil))
		var out map[string]config.Configuration
		if rec.Code == http.StatusOK {
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
				t.Fatalf("%v: %s", err, rec.Body)
			}
		}
		return rec.Code, out
	}
	if code, _ := get(); code != http.StatusServiceUnavailable {
		t.Errorf("before Set: %d, want 503", code)
	}
	cz.Set(config.Default())
	if code, out := get(); code != http.StatusOK || len(out[ConfigzKey].Profiles) != 1 || out[ConfigzKey].Profiles[0].SchedulerName != config.DefaultSchedulerName {
		t.Errorf("after Set(Default) = %d %+v", code, out)
	}
	next := config.Default()
	next.Profiles = append(next.Profiles, config.Profile{SchedulerName: "reloaded"})
	cz.Set(next)
	if code, out := get(); code != http.StatusOK || len(out[ConfigzKey].Profiles) != 2 || out[ConfigzKey].Profiles[1].SchedulerName != "reloaded" {
		t.Errorf("after a reload = %d %+v", code, out)
	}
}
