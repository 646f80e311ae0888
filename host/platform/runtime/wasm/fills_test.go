package wasm

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/wasmsched/wasmsched/host/internal/wasmbin"
)

// fillCase is one exported function of fillModule: body is its code
// (without locals and end), with the destination in local 0.
type fillCase struct {
	name string
	body []byte
	// inlined tells whether the rewriters must have replaced its fill.
	inlined bool
}

// constFill is `local.get 0; i32.const v; i32.const n; memory.fill`.
func constFill(v, n int32) []byte {
	b := []byte{0x20, 0x00, 0x41}
	b = wasmbin.AppendS32(b, v)
	b = append(b, 0x41)
	b = wasmbin.AppendS32(b, n)
	return append(b, 0xFC, 0x0B, 0x00)
}

func fillCases() []fillCase {
	var cs []fillCase
	for _, n := range []int32{1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 36, 40, 44, 63, 100, 127, 128} {
		for _, v := range []int32{0, 0xAB, -1, 0x1234} {
			cs = append(cs, fillCase{fmt.Sprintf("const v=%d n=%d", v, n), constFill(v, n), true})
		}
	}
	// Lengths known only at run time (n+0) go to the fill helper on
	// Instrument's side.
	for _, n := range []int32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 15, 16, 17, 31, 33, 56, 63, 64, 65, 100, 127, 128, 129, 256, 300} {
		for _, v := range []int32{0, 0xAB, -1, 0x1234} {
			b := constFill(v, n)
			b = append(b[:len(b)-3], 0x41, 0x00, 0x6A, 0xFC, 0x0B, 0x00) // i32.const 0; i32.add; memory.fill
			cs = append(cs, fillCase{fmt.Sprintf("dynamic v=%d n=%d", v, n), b, false})
		}
	}
	cs = append(cs,
		fillCase{"zero length", constFill(0, 0), false},
		fillCase{"over the inline bound", constFill(7, MaxInlineFillBytes+1), false},
		// A length computed at run time: i32.const 8; i32.const 8; i32.add.
		fillCase{"computed length", []byte{0x20, 0x00, 0x41, 0x05, 0x41, 0x08, 0x41, 0x08, 0x6A, 0xFC, 0x0B, 0x00}, false},
		// A value from a local: local.get 0; local.get 0; i32.const 12.
		fillCase{"value not constant", []byte{0x20, 0x00, 0x20, 0x00, 0x41, 0x0C, 0xFC, 0x0B, 0x00}, false},
		// Two fills back to back; the second's destination is the first's plus 16.
		fillCase{"two in a row", append(constFill(0x11, 16), append([]byte{0x20, 0x00, 0x41, 0x10, 0x6A, 0x41, 0x22, 0x41, 0x18}, 0xFC, 0x0B, 0x00)...), true},
		// Inside a loop run twice (a tick follows the loop's block type)
		// and inside a block: the operands come right after the block type.
		fillCase{"in a loop and a block", []byte{
			0x03, 0x40, // loop
			0x02, 0x40, // block
			0x20, 0x00, 0x41, 0x3F, 0x41, 0x18, 0xFC, 0x0B, 0x00,
			0x0B,                                     // end block
			0x20, 0x00, 0x41, 0x01, 0x6A, 0x21, 0x00, // dst++
			0x20, 0x00, 0x41, 0x03, 0x71, 0x0D, 0x00, // br_if loop while dst&3 != 0
			0x0B, // end loop
		}, true},
	)
	return cs
}

// fillModule builds a module with one page of memory and, per case, an
// exported function f<i>(dst i32).
func fillModule(cs []fillCase) []byte {
	bin := []byte("\x00asm\x01\x00\x00\x00")
	bin = wasmbin.AppendSection(bin, wasmbin.SecType, []byte{0x01, 0x60, 0x01, 0x7F, 0x00})
	fns := wasmbin.AppendU32(nil, uint32(len(cs)))
	for range cs {
		fns = append(fns, 0x00)
	}
	bin = wasmbin.AppendSection(bin, wasmbin.SecFunction, fns)
	bin = wasmbin.AppendSection(bin, wasmbin.SecMemory, []byte{0x01, 0x00, 0x01})
	exp := wasmbin.AppendU32(nil, uint32(len(cs)+1))
	exp = append(exp, 0x06)
	exp = append(exp, "memory"...)
	exp = append(exp, 0x02, 0x00)
	for i := range cs {
		name := fmt.Sprintf("f%d", i)
		exp = wasmbin.AppendU32(exp, uint32(len(name)))
		exp = append(exp, name...)
		exp = append(exp, 0x00)
		exp = wasmbin.AppendU32(exp, uint32(i))
	}
	bin = wasmbin.AppendSection(bin, wasmbin.SecExport, exp)
	code := wasmbin.AppendU32(nil, uint32(len(cs)))
	for _, c := range cs {
		body := append([]byte{0x00}, c.body...)
		body = append(body, 0x0B)
		code = wasmbin.AppendU32(code, uint32(len(body)))
		code = append(code, body...)
	}
	return wasmbin.AppendSection(bin, wasmbin.SecCode, code)
}

// fillsPerFunction counts the memory.fill instructions of each defined
// function of bin.
func fillsPerFunction(t *testing.T, bin []byte) []int {
	t.Helper()
	secs, err := wasmbin.ReadSections(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secs {
		if s.ID != wasmbin.SecCode {
			continue
		}
		cr := wasmbin.NewReader(s.Payload)
		n := cr.U32()
		counts := make([]int, n)
		for i := range counts {
			body := wasmbin.NewReader(cr.Bytes(int(cr.U32())))
			for g := body.U32(); g > 0; g-- {
				body.U32()
				body.Byte()
			}
			for body.Remaining() > 0 {
				in, err := body.Instr()
				if err != nil {
					t.Fatalf("function %d: %v", i, err)
				}
				if in.Op == 0xFC && in.Sub == 11 {
					counts[i]++
				}
			}
		}
		return counts
	}
	t.Fatal("no code section")
	return nil
}

// TestInlinedFillsWriteAndTrapLikeMemoryFill runs every case's function in
// the original module (wazero's interpreter, which implements memory.fill
// itself) and in both rewrites (the compiler) on the same memory and
// destinations, including unaligned ones and ones running past the end:
// the memory after each call and whether it trapped must agree, and the
// rewrites must have replaced exactly the small constant fills.
func TestInlinedFillsWriteAndTrapLikeMemoryFill(t *testing.T) {
	cs := fillCases()
	src := fillModule(cs)
	inlined, err := InlineFills(src)
	if err != nil {
		t.Fatal(err)
	}
	instrumented, err := Instrument(src)
	if err != nil {
		t.Fatal(err)
	}
	for name, bin := range map[string][]byte{"InlineFills": inlined, "Instrument": instrumented} {
		counts := fillsPerFunction(t, bin)
		if name == "Instrument" {
			// Every fill left calls the helper, the last function, which
			// has the one memory.fill.
			if len(counts) != len(cs)+1 || counts[len(cs)] != 1 {
				t.Fatalf("Instrument: fills per function %v: want the helper last, with one", counts)
			}
		}
		for i, c := range cs {
			orig := bytes.Count(c.body, []byte{0xFC, 0x0B, 0x00})
			want := map[bool]int{true: 0, false: orig}[c.inlined]
			if name == "Instrument" {
				want = 0
			}
			if counts[i] != want {
				t.Errorf("%s: %s: %d memory.fill left, want %d", name, c.name, counts[i], want)
			}
		}
	}

	ctx := context.Background()
	instantiate := func(cfg wazero.RuntimeConfig, bin []byte) api.Module {
		rt := wazero.NewRuntimeWithConfig(ctx, cfg)
		t.Cleanup(func() { rt.Close(ctx) })
		m, err := rt.Instantiate(ctx, bin)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	mods := map[string]api.Module{
		"original":    instantiate(wazero.NewRuntimeConfigInterpreter(), src),
		"InlineFills": instantiate(wazero.NewRuntimeConfigCompiler(), inlined),
		"Instrument":  instantiate(wazero.NewRuntimeConfigCompiler(), instrumented),
	}
	// Memory starts with a pattern a fill of any value changes.
	pattern := make([]byte, 1<<16)
	for i := range pattern {
		pattern[i] = byte(i*7 + 3)
	}
	const end = 1 << 16
	for i, c := range cs {
		for _, dst := range []uint32{0, 1, 3, 8, 1001, end - 200, end - 129, end - 128, end - 257, end - 129, end - 128, end - 127, end - 64, end - 63, end - 40, end - 16, end - 9, end - 8, end - 7, end - 4, end - 3, end - 1, end, end + 8, 1<<32 - 257, 1<<32 - 129, 1<<32 - 128, 1<<32 - 65, 1<<32 - 64, 1<<32 - 8} {
			var want []byte
			var wantErr error
			for _, name := range []string{"original", "InlineFills", "Instrument"} {
				m := mods[name]
				m.Memory().Write(0, pattern)
				_, err := m.ExportedFunction(fmt.Sprintf("f%d", i)).Call(ctx, uint64(dst))
				got, _ := m.Memory().Read(0, end)
				if name == "original" {
					want, wantErr = bytes.Clone(got), err
					continue
				}
				if (err == nil) != (wantErr == nil) {
					t.Fatalf("%s: %s(dst=%d): error %v, original %v", name, c.name, dst, err, wantErr)
				}
				// A trap may leave a prefix written; the instance is discarded then.
				if err == nil && !bytes.Equal(got, want) {
					t.Fatalf("%s: %s(dst=%d): memory differs from the original's", name, c.name, dst)
				}
			}
		}
	}
}

// TestInlineFillsKeepsOtherCodeAndIsDeterministic: a module without fills
// comes out of InlineFills byte for byte, and two rewrites of one module
// agree (compiled-code caches are keyed by the result).
func TestInlineFillsKeepsOtherCodeAndIsDeterministic(t *testing.T) {
	src, err := os.ReadFile("testdata/exits.wasm")
	if err != nil {
		t.Fatal(err)
	}
	out, err := InlineFills(src)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, src) {
		t.Fatal("InlineFills changed a module without memory.fill")
	}
	fills := fillModule(fillCases())
	a, _ := InlineFills(fills)
	b, _ := InlineFills(fills)
	if !bytes.Equal(a, b) {
		t.Fatal("two rewrites of one module differ")
	}
}

// fillLoopModule exports fill(n, iters i32): iters fills of n bytes (a
// length known only at run time) at address 1024 of its one page.
func fillLoopModule() []byte {
	bin := []byte("\x00asm\x01\x00\x00\x00")
	bin = wasmbin.AppendSection(bin, wasmbin.SecType, []byte{0x01, 0x60, 0x02, 0x7F, 0x7F, 0x00})
	bin = wasmbin.AppendSection(bin, wasmbin.SecFunction, []byte{0x01, 0x00})
	bin = wasmbin.AppendSection(bin, wasmbin.SecMemory, []byte{0x01, 0x00, 0x01})
	bin = wasmbin.AppendSection(bin, wasmbin.SecExport, []byte{0x01, 0x04, 'f', 'i', 'l', 'l', 0x00, 0x00})
	body := []byte{0x00,
		0x03, 0x40, // loop
		0x41, 0x80, 0x08, 0x41, 0x00, 0x20, 0x00, 0xFC, 0x0B, 0x00, // memory.fill 1024 0 n
		0x20, 0x01, 0x41, 0x01, 0x6B, 0x22, 0x01, 0x0D, 0x00, // while --iters != 0
		0x0B, 0x0B}
	code := wasmbin.AppendU32([]byte{0x01}, uint32(len(body)))
	return wasmbin.AppendSection(bin, wasmbin.SecCode, append(code, body...))
}

// BenchmarkFill times a memory.fill of a length known only at run time on
// wazero, as compiled from the module as it is and from Instrument's
// rewrite (the fill helper):
//
//	go test -run '^$' -bench Fill -count 5 ./host/platform/runtime/wasm/
func BenchmarkFill(b *testing.B) {
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler())
	defer rt.Close(ctx)
	src := fillLoopModule()
	instrumented, err := Instrument(src)
	if err != nil {
		b.Fatal(err)
	}
	for _, v := range []struct {
		name string
		bin  []byte
	}{{"memory.fill", src}, {"Instrument", instrumented}} {
		m, err := rt.InstantiateWithConfig(ctx, v.bin, wazero.NewModuleConfig().WithName(v.name))
		if err != nil {
			b.Fatal(err)
		}
		fill := m.ExportedFunction("fill")
		for _, n := range []int{8, 24, 64, 128, 1024} {
			b.Run(fmt.Sprintf("%s/n=%d", v.name, n), func(b *testing.B) {
				const iters = 1000
				for i := 0; i < b.N; i++ {
					if _, err := fill.Call(ctx, uint64(n), iters); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*iters), "ns/fill")
			})
		}
	}
}
