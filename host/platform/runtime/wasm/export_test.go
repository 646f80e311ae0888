package wasm

// SetFillHelper turns the fill helper (fills.go) on or off for the
// modules compiled afterwards, so a test can compare both.
func SetFillHelper(on bool) { fillHelper = on }
