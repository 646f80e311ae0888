package main

import (
	"github.com/go-logr/logr"
	"github.com/hashicorp/go-hclog"
	"k8s.io/klog/v2"
)

// klogTo sends what the Kubernetes libraries log through klog (client-go,
// and k8s.io/apiserver's secure serving: certificates generated, the
// client CA reloaded, requests that failed to authenticate) to log, so
// serve's output is one structured stream that follows --log-level.
// klog's own verbosity still gates its V(n) lines first (only V(0) by
// default).
func klogTo(log hclog.Logger) {
	klog.SetLogger(logr.New(&hclogSink{log: log}))
}

// hclogSink is a logr.LogSink writing to an hclog.Logger: V(0) at info,
// V(1) to V(4) at debug, deeper at trace, errors at error.
type hclogSink struct {
	log hclog.Logger
}

func (s *hclogSink) Init(logr.RuntimeInfo) {}

func (s *hclogSink) level(v int) hclog.Level {
	switch {
	case v <= 0:
		return hclog.Info
	case v <= 4:
		return hclog.Debug
	}
	return hclog.Trace
}

func (s *hclogSink) Enabled(v int) bool {
	l := s.log.GetLevel()
	return l != hclog.Off && s.level(v) >= l
}

func (s *hclogSink) Info(v int, msg string, kv ...any) {
	s.log.Log(s.level(v), msg, kv...)
}

func (s *hclogSink) Error(err error, msg string, kv ...any) {
	if err != nil { // as text: an aggregate error would print as a list
		kv = append([]any{"error", err.Error()}, kv...)
	}
	s.log.Error(msg, kv...)
}

func (s *hclogSink) WithValues(kv ...any) logr.LogSink {
	return &hclogSink{log: s.log.With(kv...)}
}

func (s *hclogSink) WithName(name string) logr.LogSink {
	return &hclogSink{log: s.log.Named(name)}
}
