;; A module that claims ABI v2.0: the host (v1) must refuse it at load.
(module
  (memory (export "memory") 1)
  (func (export "wasmsched_abi_version") (result i32) (i32.const 0x00020000))
  (func (export "wasmsched_input") (param i32) (result i32) (i32.const 1024))
  (func (export "wasmsched_call") (param i32 i32 i32) (result i64) (i64.const 0)))
