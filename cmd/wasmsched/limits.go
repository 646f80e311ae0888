package main

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/run/clusterread"
)

// byteSize is a flag holding a byte count written as a Kubernetes
// quantity ("128Mi", "2Gi", "1000000"); it must be positive.
type byteSize int64

var _ pflag.Value = (*byteSize)(nil)

func (b *byteSize) String() string {
	return resource.NewQuantity(int64(*b), resource.BinarySI).String()
}
func (b *byteSize) Type() string { return "bytes" }

func (b *byteSize) Set(s string) error {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return fmt.Errorf("want a byte count such as 128Mi or 2Gi: %w", err)
	}
	n, ok := q.AsInt64()
	if !ok || n <= 0 {
		return fmt.Errorf("%s: want a positive byte count that fits in 63 bits", s)
	}
	*b = byteSize(n)
	return nil
}

// optionalInt is an int flag whose unset value, -1, means "the
// configuration's": it prints as empty, so the help shows only the
// default its usage text names, never "(default -1)" beside it.
type optionalInt struct{ n *int }

var _ pflag.Value = optionalInt{}

func (o optionalInt) String() string {
	if o.n == nil || *o.n == -1 {
		return ""
	}
	return strconv.Itoa(*o.n)
}
func (o optionalInt) Type() string { return "int" }

func (o optionalInt) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("want a whole number: %w", err)
	}
	*o.n = n
	return nil
}

// evictionRounds is --eviction-rounds for sim.Options: nil (the
// configuration's) for -1.
func evictionRounds(n int) *int {
	if n < 0 {
		return nil
	}
	return &n
}

// fromClusterFlags are the limits of simulate --from-cluster's read.
type fromClusterFlags struct {
	maxPageBytes, maxBytes  byteSize
	requestTimeout, timeout time.Duration
}

func (f *fromClusterFlags) register(fs *pflag.FlagSet) {
	fs.Var(&f.maxPageBytes, fromClusterLimitFlags[clusterread.LimitPageBytes],
		"with --from-cluster: the most bytes one response (one page of a list) may have")
	fs.Var(&f.maxBytes, fromClusterLimitFlags[clusterread.LimitBytes],
		"with --from-cluster: the most bytes all responses together may have")
	fs.DurationVar(&f.requestTimeout, fromClusterLimitFlags[clusterread.LimitRequestTime], f.requestTimeout,
		"with --from-cluster: the longest one list request may take, to the last byte of its response")
	fs.DurationVar(&f.timeout, fromClusterLimitFlags[clusterread.LimitTime], f.timeout,
		"with --from-cluster: the longest reading the cluster may take")
}

// check refuses a limit flag given without --from-cluster (changed says
// whether a flag was given), and a duration that is not positive.
func (f *fromClusterFlags) check(fromCluster bool, changed func(string) bool) error {
	for _, l := range []clusterread.Limit{clusterread.LimitPageBytes, clusterread.LimitBytes, clusterread.LimitRequestTime, clusterread.LimitTime} {
		if name := fromClusterLimitFlags[l]; changed(name) && !fromCluster {
			return fmt.Errorf("--%s: only with --from-cluster", name)
		}
	}
	for _, d := range []struct {
		l clusterread.Limit
		v time.Duration
	}{{clusterread.LimitRequestTime, f.requestTimeout}, {clusterread.LimitTime, f.timeout}} {
		if d.v <= 0 {
			return fmt.Errorf("--%s: %s is not a positive duration", fromClusterLimitFlags[d.l], d.v)
		}
	}
	return nil
}

// The flags that raise simulate --from-cluster's limits, by the limit
// they raise: a read cut at a limit names its flag.
var fromClusterLimitFlags = map[clusterread.Limit]string{
	clusterread.LimitPageBytes:   "from-cluster-max-page-bytes",
	clusterread.LimitBytes:       "from-cluster-max-bytes",
	clusterread.LimitRequestTime: "from-cluster-request-timeout",
	clusterread.LimitTime:        "from-cluster-timeout",
}

// fromClusterError is a --from-cluster read's error, with the flag that
// raises the limit it was cut at, if it was.
func fromClusterError(err error) error {
	var le *clusterread.LimitError
	if errors.As(err, &le) {
		return fmt.Errorf("--from-cluster: %w; --%s raises the limit", err, fromClusterLimitFlags[le.Limit])
	}
	return fmt.Errorf("--from-cluster: %w", err)
}

// checkEvictionRounds refuses an --eviction-rounds its configuration twin
// (eviction.simulateRounds) could not have: -1, the default, means the
// configuration's.
func checkEvictionRounds(n int) error {
	if n < -1 || n > config.MaxEvictionSimulateRounds {
		return fmt.Errorf("--eviction-rounds: %d is outside 0..%d, eviction.simulateRounds' range (-1, the default: the configuration's)",
			n, config.MaxEvictionSimulateRounds)
	}
	return nil
}
