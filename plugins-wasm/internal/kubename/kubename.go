// Package kubename holds the few apimachinery name and number rules the
// default plugins depend on: qualified names (label keys, resource names),
// label values and base-10 integers. kube-scheduler applies them when it
// parses selectors and args, and a selector that breaks them matches
// nothing, so the plugins must apply them the same way; this package
// does so without regexp or strconv, keeping modules small.
package kubename

// IsQualifiedName reports whether s is a valid qualified name: an optional
// DNS-1123 subdomain prefix and "/", then a name of 1-63 alphanumerics,
// '-', '_' or '.' that starts and ends alphanumeric. Label keys and
// extended resource names follow this rule.
func IsQualifiedName(s string) bool {
	name := s
	for i := 0; i < len(s); i++ {
		if s[i] == '/' {
			prefix := s[:i]
			name = s[i+1:]
			if prefix == "" || !isDNS1123Subdomain(prefix) {
				return false
			}
			break
		}
	}
	return name != "" && len(name) <= 63 && isNamePart(name)
}

// IsLabelValue reports whether s is a valid label value: empty, or up to
// 63 alphanumerics, '-', '_' or '.' starting and ending alphanumeric.
func IsLabelValue(s string) bool {
	return s == "" || (len(s) <= 63 && isNamePart(s))
}

// isNamePart matches ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9] on a
// non-empty string.
func isNamePart(s string) bool {
	if !isAlnum(s[0]) || !isAlnum(s[len(s)-1]) {
		return false
	}
	for i := 1; i < len(s)-1; i++ {
		c := s[i]
		if !isAlnum(c) && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}

// isDNS1123Subdomain: at most 253 characters of dot-separated labels of
// lowercase alphanumerics and '-', each starting and ending alphanumeric.
func isDNS1123Subdomain(s string) bool {
	if len(s) > 253 {
		return false
	}
	start := 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) && s[i] != '.' {
			c := s[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
			continue
		}
		label := s[start:i]
		if label == "" || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		start = i + 1
	}
	return true
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// ParseInt64 parses a base-10 integer with an optional sign, as
// strconv.ParseInt(s, 10, 64) does; ok is false on syntax errors and
// overflow.
func ParseInt64(s string) (v int64, ok bool) {
	if s == "" {
		return 0, false
	}
	neg := false
	switch s[0] {
	case '+', '-':
		neg = s[0] == '-'
		s = s[1:]
		if s == "" {
			return 0, false
		}
	}
	const cutoff = uint64(1) << 63
	var u uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if u > cutoff/10 {
			return 0, false
		}
		u = u*10 + uint64(c-'0')
		if u > cutoff {
			return 0, false
		}
	}
	if neg {
		return -int64(u), true // -(1<<63) wraps to itself, as intended
	}
	if u == cutoff {
		return 0, false
	}
	return int64(u), true
}
