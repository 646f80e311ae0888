package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"

	"github.com/wasmsched/wasmsched/abi"
)

// ArgsValue converts a plugin's args (JSON from the YAML) into the ABI's
// dynamic Value, the form guests read. Map keys are sorted so the same
// args always encode the same way; integral numbers become integers.
func ArgsValue(raw json.RawMessage) (abi.Value, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return abi.Value{}, nil
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return abi.Value{}, fmt.Errorf("args: %w", err)
	}
	return toValue(v)
}

func toValue(v any) (abi.Value, error) {
	switch x := v.(type) {
	case nil:
		return abi.Value{}, nil
	case bool:
		return abi.Value{Kind: abi.KindBool, Bool: x}, nil
	case string:
		return abi.Value{Kind: abi.KindString, Str: x}, nil
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return abi.Value{Kind: abi.KindInt, Int: i}, nil
		}
		f, err := x.Float64()
		if err != nil || math.IsInf(f, 0) {
			return abi.Value{}, fmt.Errorf("number %s out of range", x)
		}
		return abi.Value{Kind: abi.KindFloat, Float: f}, nil
	case []any:
		out := abi.Value{Kind: abi.KindList, List: make([]abi.Value, len(x))}
		for i, e := range x {
			ev, err := toValue(e)
			if err != nil {
				return abi.Value{}, fmt.Errorf("[%d]: %w", i, err)
			}
			out.List[i] = ev
		}
		return out, nil
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := abi.Value{Kind: abi.KindMap, Map: make([]abi.Field, len(keys))}
		for i, k := range keys {
			ev, err := toValue(x[k])
			if err != nil {
				return abi.Value{}, fmt.Errorf("%s: %w", k, err)
			}
			out.Map[i] = abi.Field{Key: k, Value: ev}
		}
		return out, nil
	}
	return abi.Value{}, fmt.Errorf("unsupported value %T", v)
}
