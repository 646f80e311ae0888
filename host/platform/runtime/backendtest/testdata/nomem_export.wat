;; Has the ABI's functions, but exports its memory as "mem", not "memory":
;; the host must refuse it at load, naming the export it wants.
(module
  (memory (export "mem") 1)
  (func (export "wasmsched_abi_version") (result i32) (i32.const 0x00010001))
  (func (export "wasmsched_input") (param i32) (result i32) (i32.const 1024))
  (func (export "wasmsched_call") (param i32 i32 i32) (result i64) (i64.const 0)))
