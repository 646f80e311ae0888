package endpoints

import (
	"encoding/json"
	"net/http"
	"sync/atomic"

	"github.com/wasmsched/wasmsched/host/config"
)

// ConfigzKey is the name /configz reports the configuration under: the
// one kube-scheduler's configz uses, so a tool that reads kube-scheduler's
// /configz finds wasmsched's in the same place.
const ConfigzKey = "componentconfig"

// Configz is the configuration a scheduler runs, for /configz, which
// answers it as JSON the way component-base's configz does
// ({"componentconfig": {...}}). Set it at start and after every reload
// that went live, so it never shows a configuration that was refused.
// It is its own value rather than component-base's process-wide
// registry, so several schedulers in one process (tests) do not clash.
type Configz struct {
	cfg atomic.Pointer[config.Configuration]
}

// Set records cfg as the running configuration.
func (c *Configz) Set(cfg *config.Configuration) { c.cfg.Store(cfg) }

// Get is the configuration last Set (nil before the first).
func (c *Configz) Get() *config.Configuration { return c.cfg.Load() }

// ServeHTTP answers the running configuration as JSON, or 503 before
// one was set.
func (c *Configz) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	cfg := c.Get()
	if cfg == nil {
		http.Error(w, "no configuration running yet", http.StatusServiceUnavailable)
		return
	}
	b, err := json.Marshal(map[string]*config.Configuration{ConfigzKey: cfg})
	if err != nil {
		http.Error(w, "encode the configuration: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}
