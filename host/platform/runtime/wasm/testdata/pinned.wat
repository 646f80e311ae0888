;; The same shape as abi_v2.wat but speaking ABI v1.1: the compile-cache
;; test pins this module and swaps its cached code for abi_v2's.
(module
  (memory (export "memory") 1)
  (func (export "wasmsched_abi_version") (result i32) (i32.const 0x00010001))
  (func (export "wasmsched_input") (param i32) (result i32) (i32.const 1024))
  (func (export "wasmsched_call") (param i32 i32 i32) (result i64) (i64.const 0)))
