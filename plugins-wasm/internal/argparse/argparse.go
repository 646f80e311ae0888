// Package argparse reads plugin args from an abi.Value tree, the shape the
// host gives a plugin's pluginConfig[].args. It exists so plugins can parse
// their YAML args without encoding/json or reflection, which TinyGo builds
// poorly, and so every error names the offending field the way
// kube-scheduler's field paths do (e.g. "scoringStrategy.resources[1].weight").
package argparse

import "github.com/wasmsched/wasmsched/abi"

// Error is an args error tied to the field that caused it, so operators can
// find the bad line of their scheduler configuration.
type Error struct {
	Field string
	Msg   string
}

// Error prints "field: message", or the message alone for the root.
func (e *Error) Error() string {
	if e.Field == "" {
		return e.Msg
	}
	return e.Field + ": " + e.Msg
}

// Errorf returns an *Error for field; named so call sites read like the
// fmt-based code they replace, although it takes no format verbs.
func Errorf(field, msg string) error { return &Error{Field: field, Msg: msg} }

// Invalid reports a value outside its allowed range in kube's wording
// ("Invalid value: <v>: <detail>"), so messages match upstream's.
func Invalid(field, value, detail string) error {
	return &Error{Field: field, Msg: "Invalid value: " + value + ": " + detail}
}

// Child extends a field path with a map key; the root path is "".
func Child(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// Index extends a field path with a list index.
func Index(path string, i int) string { return path + "[" + Itoa(int64(i)) + "]" }

// Itoa formats an integer without strconv, which would add weight to every
// module for a handful of error messages.
func Itoa(v int64) string { return abi.Itoa(v) }

// Quote wraps s in double quotes for messages, like %q for plain text.
func Quote(s string) string { return "\"" + s + "\"" }

// Map checks that v is an object (null counts as an empty one) whose keys
// are all in allowed: kube-scheduler decodes its configuration strictly, so
// a misspelt field is an error rather than a silently ignored default.
func Map(v *abi.Value, path string, allowed ...string) error {
	if v.IsNull() {
		return nil
	}
	if v.Kind != abi.KindMap {
		return typeError(v, path, "object")
	}
outer:
	for i := range v.Map {
		k := v.Map[i].Key
		for _, a := range allowed {
			if k == a {
				continue outer
			}
		}
		return Errorf(Child(path, k), "unknown field")
	}
	return nil
}

// List returns the items of a list; null or absent is an empty list.
func List(v *abi.Value, path string) ([]abi.Value, error) {
	if v.IsNull() {
		return nil, nil
	}
	if v.Kind != abi.KindList {
		return nil, typeError(v, path, "list")
	}
	return v.List, nil
}

// Int returns an integer field, accepting integral floats as YAML
// decoders produce them; ok is false when the field is absent or null.
func Int(v *abi.Value, path string) (n int64, ok bool, err error) {
	if v.IsNull() {
		return 0, false, nil
	}
	switch v.Kind {
	case abi.KindInt:
		return v.Int, true, nil
	case abi.KindFloat:
		if f := v.Float; f == float64(int64(f)) {
			return int64(f), true, nil
		}
	}
	return 0, false, typeError(v, path, "integer")
}

// Int32 is Int for fields the API types declare as int32, rejecting
// values that would wrap.
func Int32(v *abi.Value, path string) (n int32, ok bool, err error) {
	i, ok, err := Int(v, path)
	if err != nil || !ok {
		return 0, ok, err
	}
	if i < -1<<31 || i > 1<<31-1 {
		return 0, false, Errorf(path, "out of int32 range")
	}
	return int32(i), true, nil
}

// String returns a string field; ok is false when absent or null.
func String(v *abi.Value, path string) (s string, ok bool, err error) {
	if v.IsNull() {
		return "", false, nil
	}
	if v.Kind != abi.KindString {
		return "", false, typeError(v, path, "string")
	}
	return v.Str, true, nil
}

// Strings returns a list of strings; null or absent is nil.
func Strings(v *abi.Value, path string) ([]string, error) {
	items, err := List(v, path)
	if err != nil || len(items) == 0 {
		return nil, err
	}
	out := make([]string, len(items))
	for i := range items {
		s, _, err := String(&items[i], Index(path, i))
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
}

func typeError(v *abi.Value, path, want string) error {
	return Errorf(path, "expected "+want+", got "+v.Kind.String())
}
