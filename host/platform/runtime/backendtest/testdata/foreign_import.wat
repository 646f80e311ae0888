;; Imports a function the host does not provide.
(module
  (import "env" "open_socket" (func (param i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "wasmsched_abi_version") (result i32) (i32.const 0x00010000))
  (func (export "wasmsched_input") (param i32) (result i32) (i32.const 1024))
  (func (export "wasmsched_call") (param i32 i32 i32) (result i64) (i64.const 0)))
