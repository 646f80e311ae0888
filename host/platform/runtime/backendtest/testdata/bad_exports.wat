;; wasmsched_call is missing and wasmsched_input has the wrong signature.
(module
  (memory (export "memory") 1)
  (func (export "wasmsched_abi_version") (result i32) (i32.const 0x00010000))
  (func (export "wasmsched_input") (param i64) (result i32) (i32.const 1024)))
