;; A reactor whose _initialize never returns: instantiation runs it under
;; the call deadline, so the host must give up on the instance in time.
(module
  (memory (export "memory") 1)
  (func (export "_initialize") (loop $l (br $l)))
  (func (export "wasmsched_abi_version") (result i32) (i32.const 0x00010000))
  (func (export "wasmsched_input") (param i32) (result i32) (i32.const 1024))
  (func (export "wasmsched_call") (param i32 i32 i32) (result i64) (i64.const 0)))
