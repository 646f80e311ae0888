package guest

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxText bounds one piece of text from a guest (a reason, an error
// message, a log line) once it is in the host, in bytes: the 1 KiB
// Kubernetes Events allow for a message, so a pod's message, its Event
// and its log line carry the same text.
const MaxText = 1024

// Text makes text that came from a guest safe to print on a
// terminal, in a table, in a log line or an Event: terminal escape
// sequences (CSI, OSC and other ESC sequences, and their C1 forms) are
// removed, line and tab characters become a single space (so a message
// stays on one line and cannot forge table rows), other control and
// invisible format characters (bidi overrides, zero-width characters)
// are dropped, invalid UTF-8 becomes U+FFFD, and the result is cut to
// MaxText bytes on a character boundary, ending in "…" when cut.
//
// Text that is already safe (printable ASCII within the bound, the usual
// case for kube-scheduler reasons) is returned as is, without allocating.
func Text(s string) string {
	return cleanText(s, MaxText)
}

// cleanText is Text with a bound of limit bytes.
func cleanText(s string, limit int) string {
	if isPlainASCII(s) && len(s) <= limit {
		return s
	}
	var b strings.Builder
	b.Grow(min(len(s), limit))
	space := false // the last byte written is a space from a line break
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == 0x1b: // ESC: skip the whole sequence
			i += escapeLen(s[i:])
			continue
		case r == 0x9b: // C1 CSI
			i += size + csiLen(s[i+size:])
			continue
		case r == 0x9d: // C1 OSC
			i += size + oscLen(s[i+size:])
			continue
		case r == '\n' || r == '\r' || r == '\t' || r == '\v' || r == '\f' || r == 0x85 || r == 0x2028 || r == 0x2029:
			if !space && b.Len() > 0 {
				if b.Len()+1 > limit {
					return cut(&b, limit)
				}
				b.WriteByte(' ')
				space = true
			}
			i += size
			continue
		case r == utf8.RuneError && size == 1:
			r = unicode.ReplacementChar
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r):
			i += size
			continue
		}
		if b.Len()+utf8.RuneLen(r) > limit {
			return cut(&b, limit)
		}
		b.WriteRune(r)
		space = false
		i += size
	}
	return strings.TrimRight(b.String(), " ")
}

// ellipsis ends text that was cut.
const ellipsis = "…"

// cut ends b, which is full, with an ellipsis within limit bytes.
func cut(b *strings.Builder, limit int) string {
	s := b.String()
	end := max(limit-len(ellipsis), 0)
	if end >= len(s) {
		end = len(s)
	} else {
		for end > 0 && !utf8.RuneStart(s[end]) {
			end--
		}
	}
	return strings.TrimRight(s[:end], " ") + ellipsis
}

func isPlainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}

// escapeLen is the length of the escape sequence at the start of s (which
// begins with ESC): ESC [ … final (CSI), ESC ] … BEL or ESC \ (OSC, and
// the string sequences P, X, ^, _ likewise), or ESC and one more byte.
func escapeLen(s string) int {
	if len(s) < 2 {
		return len(s)
	}
	switch s[1] {
	case '[':
		return 2 + csiLen(s[2:])
	case ']', 'P', 'X', '^', '_':
		return 2 + oscLen(s[2:])
	}
	_, size := utf8.DecodeRuneInString(s[1:])
	return 1 + size
}

// csiLen is the length of a CSI sequence's body: parameter and
// intermediate bytes, then one final byte (0x40–0x7E).
func csiLen(s string) int {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x40 && c <= 0x7e {
			return i + 1
		}
		if c < 0x20 || c > 0x3f {
			return i // malformed: stop before the stray byte
		}
	}
	return len(s)
}

// oscLen is the length of a string sequence's body, up to and including
// its terminator (BEL, ESC \ or the C1 ST); unterminated, all of s.
func oscLen(s string) int {
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == 0x07:
			return i + 1
		case s[i] == 0x1b:
			if i+1 < len(s) && s[i+1] == '\\' {
				return i + 2
			}
			return i + 1
		case strings.HasPrefix(s[i:], "\u009c"):
			return i + len("\u009c")
		}
	}
	return len(s)
}

// Placeholders for guest text that carries a decision but has nothing
// printable in it (see decisionText).
const (
	// noRefusalText: a refusal, as of a vpod policy entry's args.
	noRefusalText = "(refusal with no printable text)"
	// noReasonText: a reason of a status or of an eviction.
	noReasonText = "(reason with no printable text)"
	// noErrorText: an error reply or a score error's message.
	noErrorText = "(error with no printable text)"
)

// decisionText is Text for text whose presence is, or is part of, a
// decision: a refusal (non-empty means refused), a reason, an error
// message. Cleaning removes control characters, so text made only of
// them would come out empty and read as no refusal, no reason, no
// message: the decision is the raw text's, so a non-empty s that cleans
// to nothing becomes placeholder. An empty s stays empty.
func decisionText(s, placeholder string) string {
	if s == "" {
		return ""
	}
	if t := Text(s); t != "" {
		return t
	}
	return placeholder
}

// guestTexts applies decisionText to each string of ss in place.
func guestTexts(ss []string, placeholder string) {
	for i, s := range ss {
		ss[i] = decisionText(s, placeholder)
	}
}
