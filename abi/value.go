package abi

// Value is a dynamically typed configuration value: what a plugin's args
// (pluginConfig[].args in YAML) look like after the host parsed them. It
// lets guests read their args without encoding/json and reflection, which
// TinyGo builds poorly and slowly.
type Value struct {
	Kind  ValueKind
	Bool  bool
	Int   int64
	Float float64
	Str   string
	List  []Value
	// Map keeps the keys in the order the host sorted them (by key).
	Map []Field
}

// Field is one key of a map Value.
type Field struct {
	Key   string
	Value Value
}

// ValueKind says which field of a Value is meaningful.
type ValueKind uint8

const (
	KindNull   ValueKind = 0
	KindBool   ValueKind = 1
	KindInt    ValueKind = 2
	KindFloat  ValueKind = 3
	KindString ValueKind = 4
	KindList   ValueKind = 5
	KindMap    ValueKind = 6
)

// String names the kind, for error messages.
func (k ValueKind) String() string {
	switch k {
	case KindNull:
		return "null"
	case KindBool:
		return "bool"
	case KindInt:
		return "integer"
	case KindFloat:
		return "number"
	case KindString:
		return "string"
	case KindList:
		return "list"
	case KindMap:
		return "object"
	}
	return "kind(" + Itoa(int64(k)) + ")"
}

// Get returns the value of key in a map, or nil if v is not a map or has
// no such key.
func (v *Value) Get(key string) *Value {
	if v == nil || v.Kind != KindMap {
		return nil
	}
	for i := range v.Map {
		if v.Map[i].Key == key {
			return &v.Map[i].Value
		}
	}
	return nil
}

// IsNull reports whether v is absent or null.
func (v *Value) IsNull() bool { return v == nil || v.Kind == KindNull }

// maxValueDepth bounds nesting so hostile input cannot exhaust the stack.
const maxValueDepth = 32

// Value appends a value.
func (e *Encoder) Value(v *Value) {
	e.U8(uint8(v.Kind))
	switch v.Kind {
	case KindBool:
		e.Bool(v.Bool)
	case KindInt:
		e.Varint(v.Int)
	case KindFloat:
		e.U64(float64bits(v.Float))
	case KindString:
		e.String(v.Str)
	case KindList:
		e.Uvarint(uint64(len(v.List)))
		for i := range v.List {
			e.Value(&v.List[i])
		}
	case KindMap:
		e.Uvarint(uint64(len(v.Map)))
		for i := range v.Map {
			e.String(v.Map[i].Key)
			e.Value(&v.Map[i].Value)
		}
	}
}

// Value reads a value; depth is the current nesting (start at 0).
func (d *Decoder) Value(v *Value, depth int) {
	*v = Value{}
	if depth > maxValueDepth {
		d.failf("value nested too deeply")
		return
	}
	v.Kind = ValueKind(d.enum(uint8(KindMap), "value kind"))
	switch v.Kind {
	case KindBool:
		v.Bool = d.Bool()
	case KindInt:
		v.Int = d.Varint()
	case KindFloat:
		v.Float = float64frombits(d.U64())
	case KindString:
		v.Str = d.String()
	case KindList:
		if n := d.Count(1); n > 0 {
			v.List = make([]Value, n)
			for i := range v.List {
				d.Value(&v.List[i], depth+1)
			}
		}
	case KindMap:
		if n := d.Count(2); n > 0 {
			v.Map = make([]Field, n)
			for i := range v.Map {
				v.Map[i].Key = d.String()
				d.Value(&v.Map[i].Value, depth+1)
			}
		}
	}
}
