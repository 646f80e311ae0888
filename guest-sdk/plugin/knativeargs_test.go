package plugin

import (
	"encoding/json"
	"math/rand"
	"strings"
	"testing"
)

// refArgs is the struct the reference decoding fills: the Knative args
// types (MaxSkew int32, NumPartitions int) and a string field.
type refArgs struct {
	MaxSkew       int32
	NumPartitions int
	Zone          string
}

// reference decodes content as Knative's plugins do.
func reference(content []byte) (refArgs, bool) {
	var a refArgs
	d := json.NewDecoder(strings.NewReader(string(content)))
	d.DisallowUnknownFields()
	err := d.Decode(&a)
	return a, err == nil
}

// ours decodes content with decodeArgsObject.
func ours(content []byte) (refArgs, error) {
	var a refArgs
	var n int64
	err := decodeArgsObject(content, []KnativeArg{Int32Arg("MaxSkew", &a.MaxSkew), IntArg("NumPartitions", &n), StringArg("Zone", &a.Zone)})
	a.NumPartitions = int(n)
	return a, err
}

func checkAgainstReference(t *testing.T, content []byte) {
	t.Helper()
	want, ok := reference(content)
	got, err := ours(content)
	switch {
	case ok && err != nil:
		t.Fatalf("%q: refused (%v), encoding/json accepts it as %+v", content, err, want)
	case !ok && err == nil:
		t.Fatalf("%q: accepted as %+v, encoding/json refuses it", content, got)
	case ok && got != want:
		t.Fatalf("%q: decoded %+v, encoding/json %+v", content, got, want)
	}
}

// TestKnativeArgsMatchEncodingJSON: the cases where encoding/json's
// Decoder has a quirk, each accepted or refused exactly as it does.
func TestKnativeArgsMatchEncodingJSON(t *testing.T) {
	for _, c := range []string{
		`{"MaxSkew": 2}`, `{"maxskew":2}`, `{"MAXSKEW":2}`, "{\"Max\u017fKew\":3}", "{\"MaxS\u212aew\":3}", `{"Max\u0053kew":4}`,
		`{"MaxSkew":2,"MaxSkew":null}`, `{"MaxSkew":2,"MaxSkew":5}`, `null`, ` null `, `null x`, `nullx`, `null}`, `nul`,
		`{"MaxSkew":2} trailing garbage`, `{"MaxSkew":2}}`, `{}`, ` { } `, `{`, `{"MaxSkew"}`, `{"MaxSkew":}`, `{"MaxSkew":2,}`,
		`{"MaxSkew":1.0}`, `{"MaxSkew":1e2}`, `{"MaxSkew":"2"}`, `{"MaxSkew":-0}`, `{"MaxSkew":01}`, `{"MaxSkew":-}`,
		`{"MaxSkew":2147483647}`, `{"MaxSkew":2147483648}`, `{"MaxSkew":-2147483648}`, `{"MaxSkew":-2147483649}`,
		`{"NumPartitions":9223372036854775807}`, `{"NumPartitions":9223372036854775808}`, `{"NumPartitions":-9223372036854775808}`,
		`{"NumPartitions":-9223372036854775809}`, `{"NumPartitions":12345678901234567890123}`, `{"NumPartitions":true}`,
		`{"MaxSkew":[1]}`, `{"MaxSkew":{}}`, `{"Other":1}`, `{"maxSkew ":1}`, `[]`, `2`, `"x"`, `true`, ``, `   `,
		`{"Zone":"a\u00e9\ud83d\ude00"}`, `{"Zone":"\ud800"}`, `{"Zone":"\ud800\u0041"}`, `{"Zone":"\udc00\ud800"}`,
		`{"Zone":"\ud83d\ude0"}`, `{"Zone":"tab	"}`, `{"Zone":"\x"}`, `{"Zone":"\'"}`, `{"Zone":1}`, `{"Zone":null}`,
		"{\"Zone\":\"\xff\xe2\x82\"}", "{\"Zone\":\"\xed\xa0\x80\"}", "\xef\xbb\xbf{}", `{"MaxSkew":2 "x":1}`, `{"MaxSkew":2,"Zone":"z","NumPartitions":3}`,
		`{"MaxSkew":2}{`, `{"MaxSkew" : 2 , "Zone" : "q" }`, "{\"MaxSkew\":\t2\n}",
	} {
		checkAgainstReference(t, []byte(c))
	}
}

// TestKnativeArgsRandomAgainstEncodingJSON compares random inputs built
// from JSON-ish tokens with encoding/json.
func TestKnativeArgsRandomAgainstEncodingJSON(t *testing.T) {
	tokens := []string{`{`, `}`, `"MaxSkew"`, `"maxskew"`, `"NumPartitions"`, `"Zone"`, `"zone"`, `"X"`, `:`, `,`, ` `, `1`, `-3`, `0`,
		`1.5`, `2e1`, `null`, `"s"`, `"\u00e9"`, `"\ud800"`, `[`, `]`, `true`, `99999999999`, `"\n"`, "\t", `x`}
	rng := rand.New(rand.NewSource(1))
	for n := 0; n < 20000; n++ {
		var b strings.Builder
		if rng.Intn(4) > 0 {
			b.WriteString(`{`)
		}
		for k := rng.Intn(8); k > 0; k-- {
			b.WriteString(tokens[rng.Intn(len(tokens))])
		}
		checkAgainstReference(t, []byte(b.String()))
		// A well-formed object with random fields, to reach acceptance.
		b.Reset()
		b.WriteString(`{`)
		for k := rng.Intn(4); k > 0; k-- {
			b.WriteString([]string{`"MaxSkew":`, `"numpartitions":`, `"Zone":`}[rng.Intn(3)])
			b.WriteString([]string{`1`, `-2`, `"z"`, `null`, `2147483648`, `0.5`}[rng.Intn(6)])
			if k > 1 {
				b.WriteString(`,`)
			}
		}
		b.WriteString(`}`)
		checkAgainstReference(t, []byte(b.String()))
	}
}

func FuzzKnativeArgs(f *testing.F) {
	for _, s := range []string{`{"MaxSkew":2}`, `null`, `{"Zone":"\ud83d\ude00"}`, `{"NumPartitions":-1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkAgainstReference(t, b)
		// The outer string: what a JSON string decodes to.
		var want any
		wantErr := json.Unmarshal(b, &want)
		got, end, err := readString(b, 0)
		if len(b) == 0 || b[0] != '"' {
			return
		}
		s, isString := want.(string)
		switch {
		case wantErr == nil && isString && (err != nil || skipSpace(b, end) != len(b) || got != s):
			t.Fatalf("string %q: got %q (end %d of %d, %v), want %q", b, got, end, len(b), err, s)
		case (wantErr != nil) && err == nil && skipSpace(b, end) == len(b):
			t.Fatalf("string %q: accepted as %q, encoding/json refuses it (%v)", b, got, wantErr)
		}
	})
}

// TestDecodeKnativeArgsWantsAString: the args must be a JSON string; its
// content is then decoded.
func TestDecodeKnativeArgsWantsAString(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		ok   bool
		want int32
	}{
		{`"{\"MaxSkew\": 3}"`, true, 3},
		{` "{\"MaxSkew\": 3}" `, true, 3},
		{`"null"`, true, 7},
		{`"{\"Max\\u0053kew\": 4}"`, true, 4},
		{`{"MaxSkew": 3}`, false, 0},
		{`3`, false, 0},
		{`null`, false, 0},
		{``, false, 0},
		{`"{\"MaxSkew\": 3}" x`, false, 0},
		{`"{\"MaxSkew\": 3}`, false, 0},
		{`""`, false, 0},
	} {
		skew := int32(7)
		var raw []byte
		if tc.raw != "" {
			raw = []byte(tc.raw)
		}
		err := DecodeKnativeArgs(raw, Int32Arg("MaxSkew", &skew))
		if (err == nil) != tc.ok || tc.ok && skew != tc.want {
			t.Errorf("%s: err %v, MaxSkew %d; want ok=%v, %d", tc.raw, err, skew, tc.ok, tc.want)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "invalid arguments: ") {
			t.Errorf("%s: error %q does not say invalid arguments", tc.raw, err)
		}
	}
}
