;; Well-shaped, but its memory starts at 100 pages (6.25 MiB): under a
;; smaller cap the host must refuse it, at compile time or at load.
(module
  (memory (export "memory") 100)
  (func (export "wasmsched_abi_version") (result i32) (i32.const 0x00010000))
  (func (export "wasmsched_input") (param i32) (result i32) (i32.const 1024))
  (func (export "wasmsched_call") (param i32 i32 i32) (result i64) (i64.const 0)))
