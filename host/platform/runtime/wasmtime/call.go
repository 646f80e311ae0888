//go:build wasmtime

package wasmtime

/*
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

// What this file needs of Wasmtime's C API (v44: wasmtime/extern.h,
// func.h, memory.h, store.h, trap.h, error.h; wasm.h), declared here
// because wasmtime-go's headers are not on our include path. The symbols
// come from the libwasmtime.a that wasmtime-go links; checkLayout checks
// the one layout we rely on against wasmtime-go's own.
typedef struct wasmtime_context wasmtime_context_t;
typedef struct wasm_trap_t wasm_trap_t;
typedef struct wasmtime_error wasmtime_error_t;

typedef struct { uint64_t store_id; void *private_; } ws_func_t;                      // wasmtime_func_t
typedef struct {                                                                        // wasmtime_memory_t
	struct { uint64_t store_id; uint32_t private1; };
	uint32_t private2;
} ws_memory_t;
typedef struct {                                                                        // wasmtime_extern_t
	uint8_t kind;
	union { ws_func_t func; ws_memory_t memory; uint8_t other[24]; } of;
} ws_extern_t;
typedef struct { size_t size; char *data; } ws_byte_vec_t;                             // wasm_byte_vec_t

enum { WS_EXTERN_FUNC = 0, WS_EXTERN_MEMORY = 3 };

wasmtime_error_t *wasmtime_func_call_unchecked(wasmtime_context_t *store, const ws_func_t *func,
	void *args_and_results, size_t args_and_results_len, wasm_trap_t **trap);
uint8_t *wasmtime_memory_data(const wasmtime_context_t *store, const ws_memory_t *memory);
size_t wasmtime_memory_data_size(const wasmtime_context_t *store, const ws_memory_t *memory);
void wasmtime_context_set_epoch_deadline(wasmtime_context_t *context, uint64_t ticks_beyond_current);
wasmtime_error_t *wasmtime_context_set_fuel(wasmtime_context_t *store, uint64_t fuel);
bool wasmtime_trap_code(const wasm_trap_t *, uint8_t *code);
void wasm_trap_message(const wasm_trap_t *, ws_byte_vec_t *out);
void wasm_trap_delete(wasm_trap_t *);
void wasmtime_error_message(const wasmtime_error_t *error, ws_byte_vec_t *message);
void wasmtime_error_delete(wasmtime_error_t *error);
void wasm_byte_vec_delete(ws_byte_vec_t *);

// ws_call_t is an instance's call block, allocated in C so that passing
// it costs no cgo pointer checks. args holds three wasmtime_val_raw_t
// (16 bytes each): the parameters in, the results out.
typedef struct {
	wasmtime_context_t *ctx;
	ws_func_t fns[4];
	ws_memory_t mem;
	uint64_t epochs; // epoch deadline of each call, in epochs past the current one
	uint64_t fuel;   // fuel of each call; 0 when fuel is not consumed
	uint64_t args[6];
	uint8_t *base;   // linear memory after the call
	size_t size;
	wasm_trap_t *trap;
	wasmtime_error_t *err;
} ws_call_t;

static ws_call_t *ws_new(void) { return calloc(1, sizeof(ws_call_t)); }

static bool ws_set_func(ws_call_t *c, int i, const void *ext) {
	const ws_extern_t *e = ext;
	if (e->kind != WS_EXTERN_FUNC) return false;
	c->fns[i] = e->of.func;
	return true;
}

static bool ws_set_memory(ws_call_t *c, const void *ext) {
	const ws_extern_t *e = ext;
	if (e->kind != WS_EXTERN_MEMORY) return false;
	c->mem = e->of.memory;
	return true;
}

static size_t ws_memory_size(ws_call_t *c) { return wasmtime_memory_data_size(c->ctx, &c->mem); }

// ws_call runs export fn with its deadline armed; it returns nonzero when
// the call trapped or failed (c->trap or c->err is set).
static int ws_call(ws_call_t *c, int fn) {
	c->trap = NULL;
	c->err = NULL;
	if (c->fuel) {
		c->err = wasmtime_context_set_fuel(c->ctx, c->fuel);
		if (c->err) return 1;
	}
	wasmtime_context_set_epoch_deadline(c->ctx, c->epochs);
	c->err = wasmtime_func_call_unchecked(c->ctx, &c->fns[fn], c->args, 3, &c->trap);
	c->base = wasmtime_memory_data(c->ctx, &c->mem);
	c->size = wasmtime_memory_data_size(c->ctx, &c->mem);
	return c->err != NULL || c->trap != NULL;
}

// ws_failure takes the failed call's trap or error: its trap code (-1 for
// none) and message (malloc'd, the caller frees it).
static char *ws_failure(ws_call_t *c, int *code, size_t *len) {
	ws_byte_vec_t msg = {0, NULL};
	*code = -1;
	if (c->trap) {
		uint8_t tc;
		if (wasmtime_trap_code(c->trap, &tc)) *code = tc;
		wasm_trap_message(c->trap, &msg);
		wasm_trap_delete(c->trap);
		c->trap = NULL;
	}
	if (c->err) {
		if (msg.data == NULL) wasmtime_error_message(c->err, &msg);
		wasmtime_error_delete(c->err);
		c->err = NULL;
	}
	*len = 0;
	if (msg.data == NULL) return NULL;
	char *out = malloc(msg.size + 1);
	if (out) {
		memcpy(out, msg.data, msg.size);
		*len = msg.size;
	}
	wasm_byte_vec_delete(&msg);
	return out;
}
*/
import "C"

import (
	"fmt"
	"strings"
	"unsafe"

	wt "github.com/bytecodealliance/wasmtime-go/v44"
)

// The ABI exports, by their index in a call block.
const (
	fnVersion = iota
	fnInput
	fnCall
	fnInitialize // when the module has one
)

// checkLayout checks that wasmtime-go's wasmtime_extern_t is the size our
// declaration says and that its memory is where we read it, so that a
// different Wasmtime is refused instead of misread.
func checkLayout() error {
	var f wt.Func
	ext := f.AsExtern()
	if got, want := unsafe.Sizeof(ext), uintptr(C.sizeof_ws_extern_t); got != want {
		return fmt.Errorf("wasmtime: wasmtime_extern_t is %d bytes, this package was written for %d (wasmtime-go v44)", got, want)
	}
	if got := C.sizeof_ws_memory_t; got != 24 {
		return fmt.Errorf("wasmtime: wasmtime_memory_t is %d bytes here, want 24 (wasmtime-go v44)", got)
	}
	return nil
}

// callBlock is an instance's ws_call_t: the fast path into its exports.
type callBlock struct{ c *C.ws_call_t }

func newCallBlock() callBlock { return callBlock{C.ws_new()} }

// bind fills the block with the store's context, the ABI exports (and
// _initialize, if not nil) and the memory. The caller has checked their
// types (checkShape): an unchecked call trusts them.
func (b callBlock) bind(store *wt.Store, fns [4]*wt.Func, mem *wt.Memory) error {
	b.c.ctx = (*C.wasmtime_context_t)(unsafe.Pointer(store.Context()))
	for i, f := range fns {
		if f == nil {
			continue
		}
		ext := f.AsExtern()
		if !C.ws_set_func(b.c, C.int(i), unsafe.Pointer(&ext)) {
			return fmt.Errorf("export %d is not a function", i)
		}
	}
	ext := mem.AsExtern()
	if !C.ws_set_memory(b.c, unsafe.Pointer(&ext)) {
		return fmt.Errorf("memory export is not a memory")
	}
	// The memory as we read it must be the memory wasmtime-go sees.
	if got, want := uintptr(C.ws_memory_size(b.c)), mem.DataSize(store); got != want {
		return fmt.Errorf("wasmtime: memory read as %d bytes, wasmtime-go says %d: layout mismatch", got, want)
	}
	return nil
}

// arm sets how each call is bounded: epochs past the current one, and
// fuel under InterruptFuel.
func (b callBlock) arm(mode Interrupt, epochs, fuel uint64) {
	b.c.epochs = C.uint64_t(epochs)
	b.c.fuel = 0
	if mode == InterruptFuel {
		b.c.fuel = C.uint64_t(fuel)
	}
}

// setArg sets parameter i (an i32).
func (b callBlock) setArg(i int, v uint32) { b.c.args[2*i] = C.uint64_t(v) }

// result0 is the first result's low 64 bits (an i32 in the low half).
func (b callBlock) result0() uint64 { return uint64(b.c.args[0]) }

// call runs export fn; false when it trapped or failed (see failure).
func (b callBlock) call(fn int) bool { return C.ws_call(b.c, C.int(fn)) == 0 }

// memory is the instance's linear memory as of the end of the last call;
// valid until the next call.
func (b callBlock) memory() []byte {
	if b.c.base == nil {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(b.c.base)), int(b.c.size))
}

// trapCode values (wasmtime/trap.h) this package tells apart.
const (
	trapStackOverflow   = 0
	trapMemoryOOB       = 1
	trapHeapMisaligned  = 2
	trapTableOOB        = 3
	trapIndirectNull    = 4
	trapBadSignature    = 5
	trapIntegerOverflow = 6
	trapDivideByZero    = 7
	trapBadConversion   = 8
	trapUnreachable     = 9
	trapInterrupt       = 10
	trapOutOfFuel       = 11
	trapNullReference   = 13
)

// failure takes the last call's trap or error: its trap code (-1 when it
// has none, as for a trap a host import raised) and message.
func (b callBlock) failure() (code int, msg string) {
	var c C.int
	var n C.size_t
	p := C.ws_failure(b.c, &c, &n)
	if p != nil {
		msg = C.GoStringN(p, C.int(n))
		C.free(unsafe.Pointer(p))
	}
	return int(c), strings.TrimRight(msg, "\x00")
}

// free releases the block (not the store).
func (b callBlock) free() {
	if b.c.trap != nil || b.c.err != nil {
		b.failure()
	}
	C.free(unsafe.Pointer(b.c))
}
