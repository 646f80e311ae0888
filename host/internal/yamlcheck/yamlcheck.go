// Package yamlcheck checks a YAML document against the Go type it will be
// decoded into (through its json tags, as sigs.k8s.io/yaml decodes it)
// before decoding, so that every unknown field, wrong type, out-of-range
// integer and malformed quantity is reported with its line and its field
// path ("profiles[1].plugins.filter.enable") instead of as a decoder error
// without either. It also records the line of every field it saw, so
// later validation errors, which know only a field path, can name a line.
//
// The check is meant to be at most as strict as the decoder: where it is
// unsure (types with their own UnmarshalJSON it does not know) it accepts,
// and the decoder still runs afterwards.
package yamlcheck

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/api/resource"
	sigsyaml "sigs.k8s.io/yaml"
)

// Problem is one thing wrong at a field.
type Problem struct {
	Line int    // 1-based line in the document, 0 if unknown
	Path string // field path, e.g. spec.containers[0].resources.requests.cpu
	Msg  string
}

func (p Problem) Error() string {
	if p.Path == "" {
		return p.Msg
	}
	return p.Path + ": " + p.Msg
}

// Scalar checks one scalar value written for a type the package does not
// know, returning "" when it is fine or the reason it is not.
type Scalar func(value string) string

// Lines maps a field path to the line it was written on.
type Lines map[string]int

// Find returns the line of path or, when the path was not written (a
// missing field), of its closest written parent; 0 if none was.
func (l Lines) Find(path string) int {
	for path != "" {
		if n, ok := l[path]; ok {
			return n
		}
		path = Parent(path)
	}
	return 0
}

// Parent drops the last element of a field path: "a.b[2]" -> "a.b",
// "a.b" -> "a", "a" -> "".
func Parent(path string) string {
	if strings.HasSuffix(path, "]") {
		if i := strings.LastIndexByte(path, '['); i >= 0 {
			return path[:i]
		}
	}
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		return path[:i]
	}
	return ""
}

// MaxNodes bounds the nodes one check visits, aliases included: an alias
// can make a small document expand exponentially ("billion laughs").
const MaxNodes = 1 << 20

var maxNodes = MaxNodes // lowered by tests

// Check walks the document root (a yaml.v3 document or its content) as it
// would decode into a value of type t, and returns the lines of the fields
// it saw and the problems it found, in document order. scalars adds
// checks for types of the caller's (durations, say); quantities are known.
func Check(root *yaml.Node, t reflect.Type, scalars map[reflect.Type]Scalar) (Lines, []Problem) {
	c := &checker{lines: Lines{}, scalars: scalars, budget: maxNodes}
	if root != nil && root.Kind == yaml.DocumentNode && len(root.Content) > 0 {
		root = root.Content[0]
	}
	if root != nil {
		c.walk(root, t, "")
	}
	if c.dropped > 0 {
		c.problems = append(c.problems, Problem{Msg: fmt.Sprintf("… and %d more problems", c.dropped)})
	}
	return c.lines, c.problems
}

type checker struct {
	lines    Lines
	problems []Problem
	scalars  map[reflect.Type]Scalar
	budget   int
	overrun  bool
	dropped  int // problems past MaxProblems
}

// MaxProblems bounds the problems one check reports: past it the rest
// are counted, not listed.
const MaxProblems = 50

func (c *checker) add(n *yaml.Node, path, format string, args ...any) {
	if c.dropped++; len(c.problems) < MaxProblems {
		c.dropped--
		c.problems = append(c.problems, Problem{Line: n.Line, Path: path, Msg: fmt.Sprintf(format, args...)})
	}
}

var (
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	quantityType    = reflect.TypeFor[resource.Quantity]()
)

func (c *checker) walk(n *yaml.Node, t reflect.Type, path string) {
	for depth := 0; n.Kind == yaml.AliasNode && n.Alias != nil && depth < 100; depth++ {
		n = n.Alias
	}
	if c.budget--; c.budget < 0 {
		if !c.overrun {
			c.overrun = true
			c.add(n, path, "document too complex: more than %d values (aliases expanding?)", maxNodes)
		}
		return
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return // null decodes to the zero value of anything
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == quantityType {
		c.quantity(n, path)
		return
	}
	if f, ok := c.scalars[t]; ok {
		if n.Kind != yaml.ScalarNode {
			c.add(n, path, "want a single value, not %s", describe(n))
		} else if msg := f(n.Value); msg != "" {
			c.add(n, path, "%s", msg)
		}
		return
	}
	if t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType) {
		return // its own decoder decides
	}
	switch t.Kind() {
	case reflect.Struct:
		c.object(n, t, path)
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			c.add(n, path, "want an object, not %s", describe(n))
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Value == "<<" {
				c.walk(v, t, path) // a merge: its entries are this map's
				continue
			}
			p := join(path, k.Value)
			c.lines[p] = k.Line
			c.lines[path+"["+k.Value+"]"] = k.Line // the spelling field.Path.Key uses
			c.walk(v, t.Elem(), p)
		}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 { // []byte: a base64 string
			c.wantScalar(n, path, "a base64 string")
			return
		}
		if n.Kind != yaml.SequenceNode {
			c.add(n, path, "want a list, not %s", describe(n))
			return
		}
		for i, e := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			c.lines[p] = e.Line
			c.walk(e, t.Elem(), p)
		}
	case reflect.String:
		if c.wantScalar(n, path, "a string") {
			c.plainString(n, path)
		}
	case reflect.Bool:
		if c.wantScalar(n, path, "true or false") && !isBool(n.Value) {
			c.add(n, path, "%q is not true or false", n.Value)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if c.wantScalar(n, path, "an integer") {
			c.integer(n, path, t, true)
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if c.wantScalar(n, path, "a non-negative integer") {
			c.integer(n, path, t, false)
		}
	case reflect.Float32, reflect.Float64:
		if c.wantScalar(n, path, "a number") && n.Tag != "!!int" && n.Tag != "!!float" {
			c.add(n, path, "%q is not a number", n.Value)
		}
	}
	// Interfaces, channels and the rest: anything goes.
}

func (c *checker) wantScalar(n *yaml.Node, path, what string) bool {
	if n.Kind != yaml.ScalarNode {
		c.add(n, path, "want %s, not %s", what, describe(n))
		return false
	}
	return true
}

// plainString refuses unquoted text that the decoder (sigs.k8s.io/yaml,
// YAML 1.1) would silently rewrite before it reached a string field: "n",
// "yes" or "off" become "false", "true", "false"; 1.10 becomes "1.1"; an
// all-digit sha256 of zeros becomes "0", one of other digits a float.
func (c *checker) plainString(n *yaml.Node, path string) {
	if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		return
	}
	switch {
	case n.Tag == "!!str" && isBool(n.Value):
		c.add(n, path, "%s reads as a boolean in YAML 1.1 (it would become %q); quote it: %q", n.Value, strconv.FormatBool(isTrue(n.Value)), n.Value)
	case n.Tag == "!!int" || n.Tag == "!!float":
		if got, ok := decodedString(n.Value); ok && got != n.Value {
			c.add(n, path, "%s reads as a number (it would become %q); quote it: %q", n.Value, got, n.Value)
		}
	}
}

// decodedString is what the decoder puts in a string field for the plain
// scalar v (a number to YAML), asked of the decoder itself: its YAML 1.1
// rules (octal 010, sexagesimal 1:30, overflow to float) are its own.
// ok is false when it would refuse v, which it then reports itself.
func decodedString(v string) (got string, ok bool) {
	var out struct {
		V string `json:"v"`
	}
	if err := sigsyaml.Unmarshal([]byte("v: "+v), &out); err != nil {
		return "", false
	}
	return out.V, true
}

func isTrue(s string) bool {
	switch strings.ToLower(s) {
	case "true", "yes", "on", "y":
		return true
	}
	return false
}

func (c *checker) quantity(n *yaml.Node, path string) {
	if n.Kind != yaml.ScalarNode {
		c.add(n, path, "want a quantity (e.g. 64Mi or 500m), not %s", describe(n))
		return
	}
	if _, err := resource.ParseQuantity(strings.TrimSpace(n.Value)); err != nil {
		c.add(n, path, "%q is not a quantity (e.g. 64Mi or 500m)", n.Value)
	}
}

func (c *checker) integer(n *yaml.Node, path string, t reflect.Type, signed bool) {
	s := strings.ReplaceAll(n.Value, "_", "")
	// yaml.v3 tags an integer too long for int64 as a float.
	if n.Tag != "!!int" && !(n.Tag == "!!float" && allDigits(strings.TrimLeft(s, "+-"))) {
		c.add(n, path, "%q is not an integer", n.Value)
		return
	}
	var err error
	if signed {
		_, err = strconv.ParseInt(s, 0, t.Bits())
	} else {
		_, err = strconv.ParseUint(s, 0, t.Bits())
	}
	if err == nil {
		return
	}
	if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
		c.add(n, path, "%s is out of range (it must fit a %d-bit %s)", n.Value, t.Bits(), map[bool]string{true: "integer", false: "unsigned integer"}[signed])
		return
	}
	c.add(n, path, "%q is not an integer", n.Value)
}

func (c *checker) object(n *yaml.Node, t reflect.Type, path string) {
	if n.Kind != yaml.MappingNode {
		c.add(n, path, "want an object, not %s", describe(n))
		return
	}
	fields := fieldsOf(t)
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Value == "<<" && k.Tag == "!!merge" {
			c.walk(v, t, path)
			continue
		}
		p := join(path, k.Value)
		if line, dup := seen[k.Value]; dup {
			c.add(k, p, "duplicate field (also on line %d)", line)
			continue
		}
		seen[k.Value] = k.Line
		ft, ok := fields.byName[k.Value]
		if !ok {
			c.add(k, p, "unknown field%s", suggest(k.Value, fields.names))
			continue
		}
		c.lines[p] = k.Line
		c.walk(v, ft, p)
	}
}

// describe names what a node is, for "want X, not Y".
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "an object"
	case yaml.SequenceNode:
		return "a list"
	}
	v := n.Value
	if len(v) > 40 {
		v = v[:40] + "…"
	}
	return strconv.Quote(v)
}

var simpleKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

func join(path, key string) string {
	if !simpleKey.MatchString(key) {
		return path + "[" + key + "]"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

func allDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

func isBool(s string) bool {
	// YAML 1.1 spellings too: the decoder (sigs.k8s.io/yaml) accepts them.
	switch strings.ToLower(s) {
	case "true", "false", "yes", "no", "on", "off", "y", "n":
		return true
	}
	return false
}

type structFields struct {
	byName map[string]reflect.Type
	names  []string
}

var fieldCache sync.Map // reflect.Type -> *structFields

// fieldsOf lists a struct's JSON field names as encoding/json sees them,
// with the fields of embedded structs promoted (metav1.TypeMeta and
// ObjectMeta are embedded with `json:",inline"`).
func fieldsOf(t reflect.Type) *structFields {
	if f, ok := fieldCache.Load(t); ok {
		return f.(*structFields)
	}
	sf := &structFields{byName: map[string]reflect.Type{}}
	var collect func(t reflect.Type, depth int)
	collect = func(t reflect.Type, depth int) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, _, _ := strings.Cut(tag, ",")
			ft := f.Type
			if f.Anonymous && name == "" {
				et := ft
				if et.Kind() == reflect.Pointer {
					et = et.Elem()
				}
				if et.Kind() == reflect.Struct && depth < 10 {
					collect(et, depth+1)
					continue
				}
			}
			if !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			if _, dup := sf.byName[name]; !dup || depth == 0 {
				sf.byName[name] = ft
			}
		}
	}
	collect(t, 0)
	for n := range sf.byName {
		sf.names = append(sf.names, n)
	}
	fieldCache.Store(t, sf)
	return sf
}

// suggest names the closest known field, for a likely typo.
func suggest(got string, names []string) string {
	best, bestD := "", 3
	for _, n := range names {
		d := distance(strings.ToLower(got), strings.ToLower(n))
		if strings.EqualFold(got, n) {
			d = 0
		}
		if d < bestD || d == bestD && n < best {
			best, bestD = n, d
		}
	}
	if best == "" || bestD > max(1, len(got)/3) {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// distance is the Levenshtein edit distance.
func distance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 64
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
