// Package framework runs scheduling profiles: for one pod, the extension
// points of kube-scheduler's framework in order — PreFilter, Filter (with
// nominated pods), PostFilter, PreScore, Score with weights and
// normalisation, then Reserve, Permit, PreBind, Bind, PostBind — where the
// filter and score plugins live in Wasm modules (package guest) and the
// rest are host plugins written in Go.
package framework

import (
	"fmt"
	"sort"
	"strings"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/platform/guest"
)

// Status is the outcome of a plugin or of an extension point. A nil
// *Status is Success. Code carries kube-scheduler's meaning (see abi.Code):
// the queue treats Unschedulable pods differently from Error ones.
type Status struct {
	Code    abi.Code
	Reasons []string
	// Plugin that produced the status, for messages and for the queue
	// (which plugins rejected the pod decides which events retry it).
	Plugin string
	Err    error
}

// NewStatus returns a status with a code and reasons.
func NewStatus(code abi.Code, reasons ...string) *Status {
	return &Status{Code: code, Reasons: reasons}
}

// AsStatus wraps an error as an Error status.
func AsStatus(err error) *Status {
	if err == nil {
		return nil
	}
	return &Status{Code: abi.Error, Reasons: []string{err.Error()}, Err: err}
}

// IsSuccess reports whether s is nil or Success.
func (s *Status) IsSuccess() bool { return s == nil || s.Code == abi.Success }

// IsRejected reports whether s says the pod does not fit (as opposed to
// an error).
func (s *Status) IsRejected() bool {
	return s != nil && (s.Code == abi.Unschedulable || s.Code == abi.UnschedulableAndUnresolvable)
}

// Message joins the reasons.
func (s *Status) Message() string {
	if s == nil {
		return ""
	}
	return strings.Join(s.Reasons, ", ")
}

// AsError returns the status as an error (nil for success).
func (s *Status) AsError() error {
	if s.IsSuccess() {
		return nil
	}
	if s.Err != nil {
		return s.Err
	}
	return fmt.Errorf("%s", s.Message())
}

// Diagnosis records why a pod fits nowhere: the status of every node that
// was rejected, the plugins that rejected, and messages of the PreFilter
// and PostFilter points.
type Diagnosis struct {
	NodeToStatus         map[string]*Status
	UnschedulablePlugins map[string]struct{}
	PreFilterMsg         string
	PostFilterMsg        string
	// Absent is the status of every node not in NodeToStatus, when a
	// PreFilter plugin narrowed the nodes (kube-scheduler's
	// AbsentNodesStatus): those nodes were not filtered, and count as
	// UnschedulableAndUnresolvable. nil: absent nodes were not looked at
	// because enough feasible nodes were found first.
	Absent *Status
	// preFilterUnresolvable: PreFilter ended the cycle with an
	// UnschedulableAndUnresolvable verdict, before every PreFilter ran.
	preFilterUnresolvable bool
}

// StatusOf is the status a node got: its own, or Absent's.
func (d *Diagnosis) StatusOf(node string) *Status {
	if st := d.NodeToStatus[node]; st != nil {
		return st
	}
	return d.Absent
}

// AddRejection records that a plugin rejected a node.
func (d *Diagnosis) AddRejection(node string, st *Status) {
	if d.NodeToStatus == nil {
		d.NodeToStatus = map[string]*Status{}
		d.UnschedulablePlugins = map[string]struct{}{}
	}
	d.NodeToStatus[node] = st
	if st.Plugin != "" {
		d.UnschedulablePlugins[st.Plugin] = struct{}{}
	}
}

// FitError is the error of a pod that fits no node.
type FitError struct {
	Pod         *abi.Pod
	NumAllNodes int
	Diagnosis   Diagnosis
}

// NoNodeAvailableMsg opens every FitError message, as kube-scheduler's.
const NoNodeAvailableMsg = "0/%v nodes are available"

// Error renders kube-scheduler's message: "0/N nodes are available:"
// then either the PreFilter message or a histogram of node reasons
// ("2 Insufficient cpu, 1 node(s) had untolerated taint(s)", sorted as
// strings; nodes a PreFilter left out count under Absent's reasons), then
// the PostFilter message as the plugin gave it (the first two end with a
// period; the PostFilter message has whatever ending its plugin gives it:
// "preemption: found a potential placement for pod on node n1,
// preempting 1 victims" has none).
func (f *FitError) Error() string {
	msg := fmt.Sprintf(NoNodeAvailableMsg+":", f.NumAllNodes)
	if f.Diagnosis.PreFilterMsg != "" {
		msg += " " + f.Diagnosis.PreFilterMsg + "."
	} else {
		counts := map[string]int{}
		for _, st := range f.Diagnosis.NodeToStatus {
			for _, r := range st.Reasons {
				counts[r]++
			}
		}
		if absent := f.NumAllNodes - len(f.Diagnosis.NodeToStatus); absent > 0 && f.Diagnosis.Absent != nil {
			for _, r := range f.Diagnosis.Absent.Reasons {
				counts[r] += absent
			}
		}
		hist := make([]string, 0, len(counts))
		for r, n := range counts {
			hist = append(hist, fmt.Sprintf("%d %s", n, r))
		}
		sort.Strings(hist)
		if len(hist) > 0 {
			msg += " " + strings.Join(hist, ", ") + "."
		}
	}
	if m := f.Diagnosis.PostFilterMsg; m != "" {
		msg += " " + m // as it is: kube-scheduler adds no period
	}
	return msg
}

// FailureMessage is the message a pod gets (its Event, its PodScheduled
// condition, simulate's table, the log line) when a cycle fails with
// err: one line, without control characters or escape sequences, and at
// most guest.MaxText bytes, the 1 KiB an Event message may have,
// because it may carry text from a guest (reasons, error replies, a
// panic message).
func FailureMessage(err error) string {
	if err == nil {
		return ""
	}
	return guest.Text(err.Error())
}
