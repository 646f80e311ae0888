package kubename

import "testing"

func TestParseInt64(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"42", 42, true}, {"-7", -7, true}, {"+7", 7, true},
		{"9223372036854775807", 9223372036854775807, true},
		{"-9223372036854775808", -9223372036854775808, true},
		{"9223372036854775808", 0, false}, {"99999999999999999999", 0, false},
		{"", 0, false}, {"-", 0, false}, {"1.5", 0, false}, {"0x10", 0, false}, {" 1", 0, false},
	}
	for _, tt := range tests {
		got, ok := ParseInt64(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ParseInt64(%q) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestNames(t *testing.T) {
	for s, want := range map[string]bool{
		"zone": true, "topology.kubernetes.io/zone": true, "a_b.c-d": true, "A1": true,
		"": false, "-a": false, "a-": false, "/a": false, "a/": false, "a/b/c": false,
		"Example.com/a": false, "exa_mple.com/a": false, "bad key": false,
		"a123456789012345678901234567890123456789012345678901234567890123": false, // 64 chars
	} {
		if got := IsQualifiedName(s); got != want {
			t.Errorf("IsQualifiedName(%q) = %v, want %v", s, got, want)
		}
	}
	for s, want := range map[string]bool{"": true, "v1.2": true, "-1": false, "a b": false} {
		if got := IsLabelValue(s); got != want {
			t.Errorf("IsLabelValue(%q) = %v, want %v", s, got, want)
		}
	}
}
