package plugin

import "unicode/utf8"

// Knative args. A Knative scheduler policy gives each predicate and
// priority its args as a JSON string whose content is a JSON object, and
// every plugin decodes that content with encoding/json's Decoder into a
// small struct, unknown fields rejected. DecodeKnativeArgs does the same
// without reflection or encoding/json, which TinyGo builds slowly and
// large, and accepts and refuses exactly what that decoding does:
//
//   - the args must be a JSON string (absent, an object or a number is
//     refused: Knative's plugins assert args.(string));
//   - its content is the first JSON value in it, which must be an object
//     or null (null leaves every field as it was); what follows a
//     complete object is ignored, as Decoder.Decode reads one value;
//   - keys match field names exactly or else case-insensitively (with
//     Unicode simple folding, as encoding/json: "maxskew" is MaxSkew);
//     any other key is an unknown field;
//   - a field that appears twice takes the last value; null leaves it as
//     it was;
//   - integer fields take integer literals only (1.0, 1e2 and "1" are
//     refused) within the field's range; string fields take strings.

// KnativeArg is one field of a Knative args object and where its value
// goes; make it with Int32Arg, IntArg or StringArg.
type KnativeArg struct {
	name string
	kind uint8
	i32  *int32
	i64  *int64
	str  *string
}

const (
	argInt32 = iota + 1
	argInt64
	argString
)

// Int32Arg is an int32 field (Knative's MaxSkew).
func Int32Arg(name string, p *int32) KnativeArg {
	return KnativeArg{name: name, kind: argInt32, i32: p}
}

// IntArg is a Go int field (Knative's NumPartitions), read with the
// range of int on the 64-bit platforms Knative runs on, whatever the
// guest's int size.
func IntArg(name string, p *int64) KnativeArg { return KnativeArg{name: name, kind: argInt64, i64: p} }

// StringArg is a string field.
func StringArg(name string, p *string) KnativeArg {
	return KnativeArg{name: name, kind: argString, str: p}
}

// ArgsError is why DecodeKnativeArgs refused an entry's args.
type ArgsError struct{ Msg string }

func (e *ArgsError) Error() string { return "invalid arguments: " + e.Msg }

func argsErr(msg string) error { return &ArgsError{Msg: msg} }

// DecodeKnativeArgs decodes raw, an entry's args as configured (nil when
// absent), into fields the Knative way (see above). Field names must be
// ASCII. On error the fields may have been partly set.
func DecodeKnativeArgs(raw []byte, fields ...KnativeArg) error {
	i := skipSpace(raw, 0)
	if i == len(raw) {
		return argsErr("no args: want a JSON string holding the args object, such as \"{\\\"MaxSkew\\\": 1}\"")
	}
	if raw[i] != '"' {
		return argsErr("args must be a JSON string holding the args object (Knative's format), not " + jsonKind(raw[i]))
	}
	content, end, err := readString(raw, i)
	if err != nil {
		return err
	}
	if skipSpace(raw, end) != len(raw) {
		return argsErr("trailing data after the args string")
	}
	return decodeArgsObject([]byte(content), fields)
}

// decodeArgsObject decodes the first JSON value of b into fields.
func decodeArgsObject(b []byte, fields []KnativeArg) error {
	i := skipSpace(b, 0)
	if i == len(b) {
		return argsErr("the args string is empty: want a JSON object")
	}
	switch b[i] {
	case 'n':
		// Decode reads one value: whatever follows a complete literal
		// is left unread.
		_, err := readNull(b, i)
		return err
	case '{':
	default:
		return argsErr("the args string must hold a JSON object, not " + jsonKind(b[i]))
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return argsErr("want a field name in double quotes")
		}
		key, j, err := readString(b, i)
		if err != nil {
			return err
		}
		i = skipSpace(b, j)
		if i >= len(b) || b[i] != ':' {
			return argsErr("want ':' after field name " + quote(key))
		}
		i = skipSpace(b, i+1)
		f := matchArg(fields, key)
		if f == nil {
			return argsErr("unknown field " + quote(key))
		}
		if i, err = f.read(b, i); err != nil {
			return err
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return argsErr("unexpected end of the args object")
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return nil // what follows the object is not read
		default:
			return argsErr("want ',' or '}' after the value of " + f.name)
		}
	}
}

// read decodes the value at b[i] into the field and returns the index
// after it.
func (f *KnativeArg) read(b []byte, i int) (int, error) {
	if i >= len(b) {
		return i, argsErr("unexpected end of the args object")
	}
	c := b[i]
	switch {
	case c == 'n':
		return readNull(b, i) // null leaves the field as it was
	case c == '"':
		s, j, err := readString(b, i)
		if err != nil {
			return j, err
		}
		if f.kind != argString {
			return j, argsErr(f.name + ": want an integer, not a string")
		}
		*f.str = s
		return j, nil
	case c == '-' || c >= '0' && c <= '9':
		j, isInt, err := scanNumber(b, i)
		if err != nil {
			return j, err
		}
		if f.kind == argString {
			return j, argsErr(f.name + ": want a string, not a number")
		}
		if !isInt {
			return j, argsErr(f.name + ": want an integer, not " + string(b[i:j]))
		}
		n, ok := parseInt64(b[i:j])
		switch {
		case !ok:
			return j, argsErr(f.name + ": " + string(b[i:j]) + " is out of range")
		case f.kind == argInt32:
			if n < -1<<31 || n > 1<<31-1 {
				return j, argsErr(f.name + ": " + string(b[i:j]) + " is out of the int32 range")
			}
			*f.i32 = int32(n)
		default:
			*f.i64 = n
		}
		return j, nil
	}
	want := "an integer"
	if f.kind == argString {
		want = "a string"
	}
	return i, argsErr(f.name + ": want " + want + ", not " + jsonKind(c))
}

// matchArg finds the field a key sets: an exact match first, then a
// case-insensitive one, as encoding/json.
func matchArg(fields []KnativeArg, key string) *KnativeArg {
	for i := range fields {
		if fields[i].name == key {
			return &fields[i]
		}
	}
	for i := range fields {
		if foldEqual(key, fields[i].name) {
			return &fields[i]
		}
	}
	return nil
}

// foldEqual compares a key with an ASCII field name under Unicode simple
// case folding, which for ASCII targets means ASCII case plus the two
// non-ASCII runes whose fold orbit holds an ASCII letter: KELVIN SIGN
// (k) and LATIN SMALL LETTER LONG S (s).
func foldEqual(key, name string) bool {
	j := 0
	for _, r := range key {
		if j >= len(name) {
			return false
		}
		if foldRune(r) != foldRune(rune(name[j])) {
			return false
		}
		j++
	}
	return j == len(name)
}

func foldRune(r rune) rune {
	switch {
	case r >= 'A' && r <= 'Z':
		return r + 'a' - 'A'
	case r == 0x212A:
		return 'k'
	case r == 0x17F:
		return 's'
	}
	return r
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// readNull reads the literal null at b[i].
func readNull(b []byte, i int) (int, error) {
	if len(b)-i < 4 || string(b[i:i+4]) != "null" {
		return i, argsErr("invalid literal (want null)")
	}
	return i + 4, nil
}

// scanNumber checks the JSON number at b[i] and returns the index after
// it and whether it is an integer literal (no fraction, no exponent).
func scanNumber(b []byte, i int) (end int, isInt bool, err error) {
	j := i
	if b[j] == '-' {
		j++
	}
	switch {
	case j < len(b) && b[j] == '0':
		j++
	case j < len(b) && b[j] >= '1' && b[j] <= '9':
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
	default:
		return j, false, argsErr("invalid number")
	}
	isInt = true
	if j < len(b) && b[j] == '.' {
		isInt = false
		j++
		if j >= len(b) || b[j] < '0' || b[j] > '9' {
			return j, false, argsErr("invalid number: want a digit after '.'")
		}
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
	}
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		isInt = false
		j++
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		if j >= len(b) || b[j] < '0' || b[j] > '9' {
			return j, false, argsErr("invalid number: want a digit in the exponent")
		}
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
	}
	return j, isInt, nil
}

// parseInt64 parses a JSON integer literal as strconv.ParseInt(s, 10, 64).
// JSON has no leading zeros, so more than 19 digits is out of range.
func parseInt64(s []byte) (int64, bool) {
	neg := s[0] == '-'
	if neg {
		s = s[1:]
	}
	if len(s) > 19 {
		return 0, false
	}
	var u uint64 // below 10^19: no overflow
	for _, c := range s {
		u = u*10 + uint64(c-'0')
	}
	switch {
	case neg && u <= 1<<63:
		return int64(-u), true
	case !neg && u < 1<<63:
		return int64(u), true
	}
	return 0, false
}

// readString reads the JSON string starting at b[i] (a '"') as
// encoding/json does: escapes decoded, a lone or broken surrogate escape
// and every byte of invalid UTF-8 replaced by U+FFFD, control characters
// refused. It returns the string and the index after the closing quote.
func readString(b []byte, i int) (string, int, error) {
	i++
	var out []byte
	plain := true // out is b[start:i] so far
	start := i
	for i < len(b) {
		c := b[i]
		switch {
		case c == '"':
			if plain {
				return string(b[start:i]), i + 1, nil
			}
			return string(out), i + 1, nil
		case c < 0x20:
			return "", i, argsErr("control character in a string")
		case c == '\\':
			if plain {
				out = append(out[:0], b[start:i]...)
				plain = false
			}
			if i+1 >= len(b) {
				return "", i, argsErr("unterminated string")
			}
			switch e := b[i+1]; e {
			case '"', '\\', '/':
				out = append(out, e)
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r := hex4(b, i+2)
				if r < 0 {
					return "", i, argsErr("invalid \\u escape in a string")
				}
				i += 6
				if r >= 0xD800 && r < 0xE000 {
					// A surrogate: valid only as a high half followed by
					// a \u escape of a low half.
					if r < 0xDC00 && i+1 < len(b) && b[i] == '\\' && b[i+1] == 'u' {
						if r2 := hex4(b, i+2); r2 >= 0xDC00 && r2 < 0xE000 {
							out = utf8.AppendRune(out, (r-0xD800)<<10|(r2-0xDC00)+0x10000)
							i += 6
							continue
						}
					}
					r = utf8.RuneError
				}
				out = utf8.AppendRune(out, r)
				continue
			default:
				return "", i, argsErr("invalid escape in a string")
			}
			i += 2
		case c < utf8.RuneSelf:
			if !plain {
				out = append(out, c)
			}
			i++
		default:
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 {
				if plain {
					out = append(out[:0], b[start:i]...)
					plain = false
				}
				out = utf8.AppendRune(out, utf8.RuneError)
			} else if !plain {
				out = append(out, b[i:i+size]...)
			}
			i += size
		}
	}
	return "", i, argsErr("unterminated string")
}

// hex4 reads the four hex digits at b[i:i+4], or returns -1.
func hex4(b []byte, i int) rune {
	if len(b)-i < 4 {
		return -1
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}

// jsonKind names the JSON value starting with c, for messages.
func jsonKind(c byte) string {
	switch {
	case c == '{':
		return "an object"
	case c == '[':
		return "an array"
	case c == '"':
		return "a string"
	case c == 't' || c == 'f':
		return "a boolean"
	case c == 'n':
		return "null"
	case c == '-' || c >= '0' && c <= '9':
		return "a number"
	}
	return "invalid JSON"
}

// quote wraps s in double quotes for messages.
func quote(s string) string { return "\"" + s + "\"" }
