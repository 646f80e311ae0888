;; Well-shaped, but its replies point outside its memory: the host must
;; treat that as a broken instance, not read out of bounds.
(module
  (memory (export "memory") 1)
  (func (export "wasmsched_abi_version") (result i32) (i32.const 0x00010000))
  (func (export "wasmsched_input") (param i32) (result i32) (i32.const 1024))
  (func (export "wasmsched_call") (param i32 i32 i32) (result i64) (i64.const 0x00FFFFFF00000010)))
