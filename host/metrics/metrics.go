// Package metrics is wasmsched's Prometheus instrumentation and its HTTP
// endpoints (/metrics, /healthz, /readyz, optional /debug/pprof).
//
// Scheduling metrics keep kube-scheduler's names (subsystem "scheduler")
// so existing dashboards and alerts work unchanged; what only a Wasm host
// has (module loads, guest traps and deadlines, live instances) uses the
// subsystem "wasmsched".
//
// There is no package-level state: New registers a fresh set of metrics
// with the Registerer it is given, and the result is injected into the
// parts that record (modules.Options, scheduler.Options via
// AssembleOptions, guest.PoolConfig). Tests therefore never share counters,
// and a nil *Metrics is a valid value whose every method does nothing, so
// code that does not care about metrics passes nothing.
//
// The hot path stays cheap: label children are resolved once (per profile,
// per plugin and extension point) when a scheduler is assembled, and
// plugin timings are taken in a sample of cycles only (see
// DefaultPluginSamplePercent).
package metrics

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/wasmsched/wasmsched/abi"
)

// Subsystems: kube-scheduler's for the metrics it also has, ours for the
// Wasm-specific ones.
const (
	SchedulerSubsystem = "scheduler"
	WasmSubsystem      = "wasmsched"
)

// DefaultPluginSamplePercent is the share of scheduling cycles whose
// plugin calls are timed, kube-scheduler's pluginMetricsSamplePercent.
// Timing every call would add two clock reads per plugin per extension
// point to every cycle; a 10% sample gives the same distribution.
const DefaultPluginSamplePercent = 10

// Values of the result label of schedule_attempts_total and
// scheduling_attempt_duration_seconds, as kube-scheduler spells them.
const (
	ResultScheduled     = "scheduled"
	ResultUnschedulable = "unschedulable"
	ResultError         = "error"
)

// Result is the outcome of one scheduling attempt.
type Result int

// The outcomes of a scheduling attempt: the pod was bound; no node fits
// it; something failed (a plugin error, a failed binding).
const (
	Scheduled Result = iota
	Unschedulable
	Error
	numResults
)

var resultLabels = [numResults]string{ResultScheduled, ResultUnschedulable, ResultError}

// String is the result's label value.
func (r Result) String() string {
	if r >= 0 && r < numResults {
		return resultLabels[r]
	}
	return fmt.Sprintf("Result(%d)", int(r))
}

// Extension point label values of plugin_execution_duration_seconds, as
// kube-scheduler names them.
const (
	PreFilter = "PreFilter"
	Filter    = "Filter"
	PreScore  = "PreScore"
	Score     = "Score"
)

// Values of the result label of wasmsched_module_loads_total. A module
// load is compiling and validating one configured module.
const (
	LoadSuccess = "success"
	LoadError   = "error"
)

// Values of the queue label of pending_pods.
const (
	QueueActive        = "active"
	QueueBackoff       = "backoff"
	QueueUnschedulable = "unschedulable"
	QueueGated         = "gated"
)

// Metrics is one set of registered metrics. Create it with New and hand it
// to the parts that record; a nil *Metrics records nothing.
type Metrics struct {
	attempts        *prometheus.CounterVec
	attemptDuration *prometheus.HistogramVec
	pluginDuration  *prometheus.HistogramVec
	pending         *pendingCollector

	moduleLoads *prometheus.CounterVec
	traps       *prometheus.CounterVec
	deadlines   *prometheus.CounterVec
	instances   *prometheus.GaugeVec
	memory      *prometheus.GaugeVec
	recycled    *prometheus.CounterVec
	ignored     *prometheus.CounterVec

	preemption *PreemptionMetrics
	reload     *reloadMetrics
	eviction   *Eviction
	vpod       *VPod
	fetch      *fetchMetrics
	apiBlocked *prometheus.CounterVec
	// shadowSource feeds /debug/shadow (SetShadowSource).
	shadowSource atomic.Pointer[func() any]

	samplePercent int
}

// Option adjusts New.
type Option func(*Metrics)

// WithPluginSamplePercent sets the share of cycles whose plugin calls are
// timed (0 never, 100 always); tests use 100 to make timings certain.
func WithPluginSamplePercent(percent int) Option {
	return func(m *Metrics) { m.samplePercent = min(max(percent, 0), 100) }
}

// New creates the metrics and registers them with reg (nil: create them
// unregistered, which is only useful to tests of callers). It fails if reg
// already holds metrics of the same names, e.g. a second New on one
// registry.
func New(reg prometheus.Registerer, opts ...Option) (*Metrics, error) {
	m := &Metrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: SchedulerSubsystem,
			Name:      "schedule_attempts_total",
			Help: "Number of attempts to schedule pods, by the result: 'unschedulable' means no node fits the pod, " +
				"'error' means a plugin or the binding failed.",
		}, []string{"result", "profile"}),
		attemptDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: SchedulerSubsystem,
			Name:      "scheduling_attempt_duration_seconds",
			Help:      "Scheduling attempt latency in seconds (scheduling cycle and, for scheduled pods, binding).",
			Buckets:   prometheus.ExponentialBuckets(0.001, 2, 15),
		}, []string{"result", "profile"}),
		pluginDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: SchedulerSubsystem,
			Name:      "plugin_execution_duration_seconds",
			Help: "Duration for running a plugin at a specific extension point, in a sample of the cycles. " +
				"A Wasm plugin's Filter and Score run over a batch of nodes per call: one observation per call.",
			Buckets: prometheus.ExponentialBuckets(0.00001, 1.5, 20),
		}, []string{"plugin", "extension_point", "status"}),
		pending: &pendingCollector{desc: prometheus.NewDesc(
			prometheus.BuildFQName("", SchedulerSubsystem, "pending_pods"),
			"Number of pending pods, by the queue: 'active' pods wait in activeQ, 'backoff' in backoffQ, "+
				"'unschedulable' were tried and wait for a cluster event, 'gated' are held back by a PreEnqueue plugin.",
			[]string{"queue"}, nil)},
		moduleLoads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: WasmSubsystem,
			Name:      "module_loads_total",
			Help:      "Number of policy module loads (compile, validate, probe), by module and result.",
		}, []string{"module", "result"}),
		traps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: WasmSubsystem,
			Name:      "guest_traps_total",
			Help: "Number of guest calls that trapped (panic, out of memory, invalid access); the instance is replaced. " +
				"plugin is empty for module-wide calls (init, sync, cycle start).",
		}, []string{"module", "plugin"}),
		deadlines: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: WasmSubsystem,
			Name:      "guest_deadline_exceeded_total",
			Help: "Number of guest calls stopped at the module's call timeout; the instance is replaced. " +
				"plugin is empty for module-wide calls.",
		}, []string{"module", "plugin"}),
		instances: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: WasmSubsystem,
			Name:      "module_instances",
			Help:      "Number of live instances of a policy module (idle or in use), over all profiles' pools.",
		}, []string{"module"}),
		memory: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: WasmSubsystem,
			Name:      "module_memory_bytes",
			Help: "Linear memory of a policy module's live instances, summed over all profiles' pools, as of each instance's " +
				"last return to its pool (a call in flight may have grown it since). Native twins count 0.",
		}, []string{"module"}),
		recycled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: WasmSubsystem,
			Name:      "instances_recycled_total",
			Help: "Number of instances replaced between calls because their memory had grown past their mirror " +
				"(a guest without a garbage collector); the next one starts with a full sync.",
		}, []string{"module"}),
		ignored: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: WasmSubsystem,
			Name:      "plugin_ignored_failures_total",
			Help: "Number of plugin failures (trap, deadline, Error status, invalid reply) that failurePolicy Ignore let the cycle " +
				"go on without. extension_point is PreFilter, Filter, PreScore or Score, or the module-wide call that failed " +
				"(instance, sync, cycle, push_state, add_pod, ...), which counts once per Ignore plugin of the module.",
		}, []string{"profile", "plugin", "extension_point"}),
		preemption:    newPreemptionMetrics(),
		reload:        newReloadMetrics(),
		eviction:      newEvictionMetrics(),
		vpod:          newVPodMetrics(),
		apiBlocked:    newEvictionAPIBlocked(),
		fetch:         newFetchMetrics(),
		samplePercent: DefaultPluginSamplePercent,
	}
	m.wireEvictionAPIBlocked()
	for _, o := range opts {
		o(m)
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range append([]prometheus.Collector{m.attempts, m.attemptDuration, m.pluginDuration, m.pending,
		m.moduleLoads, m.traps, m.deadlines, m.instances, m.memory, m.recycled, m.ignored, m.apiBlocked, m.fetch.failures, m.fetch.unavailable}, append(append(append(m.preemption.collectors(), m.reload.collectors()...), m.eviction.collectors()...), m.vpod.collectors()...)...) {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register scheduler metrics: %w", err)
		}
	}
	return m, nil
}

// NewRegistry returns a registry holding the Go runtime and process
// collectors, which a Prometheus target is expected to expose next to its
// own metrics; pass it to New and to NewServeMux.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// ProfileMetrics are one profile's attempt metrics, resolved once so that
// recording an attempt is two atomic adds.
type ProfileMetrics struct {
	attempts [numResults]prometheus.Counter
	duration [numResults]prometheus.Observer
}

// Profile resolves the attempt metrics of a profile (its scheduler name).
// Every result's series exists from then on, at zero until it happens.
func (m *Metrics) Profile(name string) *ProfileMetrics {
	if m == nil {
		return nil
	}
	p := &ProfileMetrics{}
	for r := Result(0); r < numResults; r++ {
		p.attempts[r] = m.attempts.WithLabelValues(resultLabels[r], name)
		p.duration[r] = m.attemptDuration.WithLabelValues(resultLabels[r], name)
	}
	return p
}

// Attempt records one scheduling attempt that ended with r after d.
func (p *ProfileMetrics) Attempt(r Result, d time.Duration) {
	if p == nil || r < 0 || r >= numResults {
		return
	}
	p.attempts[r].Inc()
	p.duration[r].Observe(d.Seconds())
}

// SamplePluginMetrics decides whether this cycle's plugin calls are
// timed: true in the configured share of calls, never for a nil Metrics.
// It uses the process-wide random source, not the scheduler's seeded one,
// so sampling never changes a simulation's tie-breaks.
func (m *Metrics) SamplePluginMetrics() bool {
	if m == nil || m.samplePercent <= 0 {
		return false
	}
	return m.samplePercent >= 100 || rand.IntN(100) < m.samplePercent
}

// PluginTimer records the durations of one plugin at one extension point.
// The Success series is resolved when the timer is made; the others on
// their first use and kept, so observing costs no label lookup.
type PluginTimer struct {
	vec           *prometheus.HistogramVec
	plugin, point string
	byCode        [numCodes]atomic.Pointer[observer]
}

// numCodes covers abi.Code values 0..Skip; others are looked up each time.
const numCodes = int(abi.Skip) + 1

type observer struct{ prometheus.Observer }

// PluginTimer makes the timer of plugin at extensionPoint (PreFilter,
// Filter, PreScore, Score).
func (m *Metrics) PluginTimer(plugin, extensionPoint string) *PluginTimer {
	if m == nil {
		return nil
	}
	t := &PluginTimer{vec: m.pluginDuration, plugin: plugin, point: extensionPoint}
	t.observer(abi.Success)
	return t
}

// Observe records one call that took d and ended with code: for a batched
// Filter call, the most severe verdict it gave any node (Success when all
// passed); Error when the call itself failed.
func (t *PluginTimer) Observe(code abi.Code, d time.Duration) {
	if t == nil {
		return
	}
	t.observer(code).Observe(d.Seconds())
}

func (t *PluginTimer) observer(code abi.Code) prometheus.Observer {
	i := int(code)
	if i >= numCodes {
		return t.vec.WithLabelValues(t.plugin, t.point, code.String())
	}
	if o := t.byCode[i].Load(); o != nil {
		return o.Observer
	}
	o := &observer{t.vec.WithLabelValues(t.plugin, t.point, code.String())}
	t.byCode[i].Store(o) // a racing store holds the same child
	return o.Observer
}

// PendingPods are the scheduling queue's sizes by sub-queue.
type PendingPods struct {
	Active, Backoff, Unschedulable, Gated int
}

// SetPendingPodsSource makes pending_pods read the queue through f at
// every scrape (one consistent read for all four series), so the queue
// needs no bookkeeping of its own. Until it is set the metric is absent.
// f must be safe to call from any goroutine.
func (m *Metrics) SetPendingPodsSource(f func() PendingPods) {
	if m == nil {
		return
	}
	m.pending.source.Store(&f)
}

type pendingCollector struct {
	desc   *prometheus.Desc
	source atomic.Pointer[func() PendingPods]
}

func (c *pendingCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *pendingCollector) Collect(ch chan<- prometheus.Metric) {
	f := c.source.Load()
	if f == nil {
		return
	}
	p := (*f)()
	for _, q := range []struct {
		name string
		n    int
	}{{QueueActive, p.Active}, {QueueBackoff, p.Backoff}, {QueueUnschedulable, p.Unschedulable}, {QueueGated, p.Gated}} {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(q.n), q.name)
	}
}

// ModuleLoaded records the outcome of loading a configured module.
func (m *Metrics) ModuleLoaded(module string, err error) {
	if m == nil {
		return
	}
	result := LoadSuccess
	if err != nil {
		result = LoadError
	}
	m.moduleLoads.WithLabelValues(module, result).Inc()
}

// ModuleMetrics are one module's guest health metrics.
type ModuleMetrics struct {
	m         *Metrics
	module    string
	instances prometheus.Gauge
	memory    prometheus.Gauge
}

// Module resolves the metrics of a module (its configured name). Several
// pools of one module (one per profile) share the series.
func (m *Metrics) Module(name string) *ModuleMetrics {
	if m == nil {
		return nil
	}
	return &ModuleMetrics{m: m, module: name, instances: m.instances.WithLabelValues(name), memory: m.memory.WithLabelValues(name)}
}

// Trap counts a guest call that trapped (a panic, memory exhausted, an
// invalid access). plugin is empty for module-wide calls.
func (mm *ModuleMetrics) Trap(plugin string) {
	if mm != nil {
		mm.m.traps.WithLabelValues(mm.module, plugin).Inc()
	}
}

// DeadlineExceeded counts a guest call stopped at its deadline. plugin is
// empty for module-wide calls.
func (mm *ModuleMetrics) DeadlineExceeded(plugin string) {
	if mm != nil {
		mm.m.deadlines.WithLabelValues(mm.module, plugin).Inc()
	}
}

// InstanceOpened counts a new live instance.
func (mm *ModuleMetrics) InstanceOpened() {
	if mm != nil {
		mm.instances.Inc()
	}
}

// MemoryChanged adds delta bytes to the module's linear memory: an
// instance opened or closed, or found grown when returned to its pool.
// The pools report changes rather than the gauge reading instances,
// because an instance in use may be growing its memory on another
// goroutine.
func (mm *ModuleMetrics) MemoryChanged(delta int64) {
	if mm != nil && delta != 0 {
		mm.memory.Add(float64(delta))
	}
}

// InstanceRecycled counts an instance replaced because its memory had
// grown past its mirror.
func (mm *ModuleMetrics) InstanceRecycled() {
	if mm != nil {
		mm.m.recycled.WithLabelValues(mm.module).Inc()
	}
}

// InstanceClosed counts an instance closed (discarded or released).
func (mm *ModuleMetrics) InstanceClosed() {
	if mm != nil {
		mm.instances.Dec()
	}
}

// IgnoredFailure counts one failure of a plugin under failurePolicy
// Ignore: the cycle went on as if the plugin had nothing to say. point is
// the extension point, or the module-wide call that failed. Failures are
// rare, so the label lookup happens here rather than in advance.
func (m *Metrics) IgnoredFailure(profile, plugin, point string) {
	if m != nil {
		m.ignored.WithLabelValues(profile, plugin, point).Inc()
	}
}
