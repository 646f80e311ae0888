// Package wasmtime runs policy modules on Wasmtime (Cranelift-compiled
// native code, through github.com/bytecodealliance/wasmtime-go), the
// second runtime next to package wasm's wazero. Its API mirrors package
// wasm's — NewRuntime, Runtime.Compile, a Backend implementing
// guest.Backend, the same wasm.Limits — so either can run a module.
//
// It needs cgo (wasmtime-go links libwasmtime.a) and is built only with
// the wasmtime build tag: `go build -tags wasmtime` (CGO_ENABLED=1 and a
// C compiler). Without the tag this package is empty, and the default
// binary stays a static CGO_ENABLED=0 build.
//
// Sandbox, the same as on wazero (docs/ARCHITECTURE.md, "Sandbox
// guarantees" and "Runtimes"): the host implements the WASI imports
// itself — no filesystem, network, environment or arguments, a fake clock
// and a deterministic random source as wazero's defaults, stdout and
// stderr into the bounded, tagged guest output of package guestout, every
// other WASI function a stub returning EBADF or ENOSYS, proc_exit a trap
// — plus wasmsched.log. Modules are refused for the same shapes (package
// modshape) and the same bounds (wasm.Instrument run as a validator:
// tables, locals, start sections, unknown instructions). Each instance has
// its own store with its memory capped (wasm.Limits.MemoryBytes), tables
// capped at wasm.MaxTableElements elements, and a bounded Wasm stack
// (MaxWasmStack). Each call, _initialize included, runs under a deadline
// (the call timeout, plus an allowance in proportion to its size for a
// push of the host's state: guest.Pushable); host imports check it too.
// A trap, deadline or cap reached fails the call in one line (quoting a
// guest's panic message) and marks it with guest.Fault, so the pool
// discards the instance.
//
// Deadlines: epoch interruption — one ticker per Runtime advances the
// engine's epoch every EpochTick (10 ms), Cranelift's code checks it at
// loop headers and function entries, and a call may run
// ceil(CallTimeout/EpochTick)+1 epochs, so it stops between its deadline
// and two ticks after. Fuel (Options.Interrupt = InterruptFuel) adds a
// deterministic budget of CallTimeout × FuelPerSecond instructions per
// call; the epoch deadline stays armed under it, since fuel counts a
// bulk memory instruction as one. Epochs are the default because they are
// the cheaper: the default bundle's TinyGo build over 5000 nodes ran at
// 459 ns/node with epochs against 554 with fuel (wazero: 638), medians of
// 15 alternating runs, fuel/epoch 1.15 by the median of per-round ratios
// (BenchmarkInterrupt, -benchtime 60x -count 15, 2-core machine).
//
// Calls: the ABI's exports are called through Wasmtime's unchecked call
// API (wasmtime_func_call_unchecked), arming the deadline, calling and
// reading the memory's bounds in one cgo crossing (call.go); their
// signatures are checked once at compile time. wasmtime-go's Func.Call,
// which introspects the function's type and allocates on every call,
// cost 1457 ns per call of an empty export against 67 ns this way
// (BenchmarkRawCall, medians of 5).
package wasmtime
