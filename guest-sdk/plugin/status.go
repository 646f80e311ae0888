package plugin

import "github.com/wasmsched/wasmsched/abi"

// Status is a plugin's verdict. A nil *Status means Success, as in
// kube-scheduler. Return shared, package-level statuses for fixed reasons:
// the SDK then reports thousands of nodes failing the same way at the cost
// of one.
type Status struct {
	code    abi.Code
	reasons []string
	// narrowed and nodes: a PreFilter's Success limited to some nodes
	// (OnlyNodes).
	narrowed bool
	nodes    []string
}

// OnlyNodes is a PreFilter's Success that also names the only nodes the
// plugin's Filter can pass, kube-scheduler's PreFilterResult (ABI v1.4):
// the host then runs no filter on the other nodes and reports them as
// "node(s) didn't satisfy plugin(s) [Name]"; with several narrowing
// plugins it keeps the nodes all of them name. Names of nodes that do not
// exist are ignored; no names at all makes the pod unschedulable. Use it
// when a plugin can name the candidates cheaply from the pod alone (as
// NodeAffinity does for a metadata.name field selector): the nodes left
// out cost nothing.
func OnlyNodes(names ...string) *Status {
	return &Status{code: abi.Success, narrowed: true, nodes: names}
}

// Narrowed reports whether the status came from OnlyNodes, and the names
// it gave.
func (s *Status) Narrowed() (nodes []string, ok bool) {
	if s == nil || !s.narrowed {
		return nil, false
	}
	return s.nodes, true
}

// NewStatus returns a status with a code and the reasons printed for it
// (e.g. "Insufficient cpu").
func NewStatus(code abi.Code, reasons ...string) *Status {
	return &Status{code: code, reasons: reasons}
}

// AsStatus turns an error into an Error status (nil stays nil).
func AsStatus(err error) *Status {
	if err == nil {
		return nil
	}
	return &Status{code: abi.Error, reasons: []string{err.Error()}}
}

// Code is the status code; Success for nil.
func (s *Status) Code() abi.Code {
	if s == nil {
		return abi.Success
	}
	return s.code
}

// Reasons are the messages of the status.
func (s *Status) Reasons() []string {
	if s == nil {
		return nil
	}
	return s.reasons
}

// IsSuccess reports whether the status is nil or Success.
func (s *Status) IsSuccess() bool { return s == nil || s.code == abi.Success }

// IsSkip reports whether the status is Skip.
func (s *Status) IsSkip() bool { return s != nil && s.code == abi.Skip }

// Message joins the reasons with ", ".
func (s *Status) Message() string {
	if s == nil {
		return ""
	}
	m := ""
	for i, r := range s.reasons {
		if i > 0 {
			m += ", "
		}
		m += r
	}
	return m
}
