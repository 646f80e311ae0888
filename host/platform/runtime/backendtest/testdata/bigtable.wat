;; Well-shaped, but it declares a table of 2^20 elements, more than the
;; host allows (wasm.MaxTableElements): the host must refuse it, at
;; compile time or at load, rather than allocate it.
(module
  (memory (export "memory") 1)
  (table 1048576 funcref)
  (func (export "wasmsched_abi_version") (result i32) (i32.const 0x00010000))
  (func (export "wasmsched_input") (param i32) (result i32) (i32.const 1024))
  (func (export "wasmsched_call") (param i32 i32 i32) (result i64) (i64.const 0)))
