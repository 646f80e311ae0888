package plugin

import "github.com/wasmsched/wasmsched/abi"

// Status is a plugin's verdict. A nil *Status means Success, as in
// kube-scheduler. Return shared, package-level statuses for fixed reasons:
// the SDK then reports thousands of nodes failing the same way at the cost
// of one.
type Status struct {
	code    abi.Code
	reasons []string
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
