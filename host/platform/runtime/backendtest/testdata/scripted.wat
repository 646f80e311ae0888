;; A guest that says what the test tells it to, for the suite's reply
;; cases: a real instance of the runtime under test returns any bytes, or
;; any (pointer, length) pair, so the host's checks of what comes out of
;; guest memory are tested on every backend.
;;
;; wasmsched_call(-1, op, n) programs it from its n input bytes:
;;   op < 64         function op replies with the input bytes (at most 2040)
;;   64 <= op < 128  function op-64 returns the pair in the input as is:
;;                   u32 pointer (not 0), u32 length
;;   128             wasmsched_abi_version returns the input's u32
;;   129             wasmsched_input returns the input's u32 from now on
;; and returns a lone OK byte. wasmsched_call(fn, ...) returns what is
;; scripted for fn, or a lone OK byte (0) when nothing is.
;;
;; Memory: the input buffer at 0x10000 (64 KiB); the script at 0x20000,
;; 64 slots of 2 KiB: u32 pointer (0: the reply follows), u32 length,
;; then the reply's bytes.
(module
  (memory (export "memory") 4)
  (global $version (mut i32) (i32.const 0x00010000))
  (global $input (mut i32) (i32.const 0x10000))
  (data (i32.const 0x100) "\00")
  (func (export "wasmsched_abi_version") (result i32) (global.get $version))
  (func (export "wasmsched_input") (param i32) (result i32) (global.get $input))
  (func $slot (param $fn i32) (result i32)
    (i32.add (i32.const 0x20000) (i32.shl (local.get $fn) (i32.const 11))))
  (func $pair (param $ptr i32) (param $len i32) (result i64)
    (i64.or (i64.shl (i64.extend_i32_u (local.get $ptr)) (i64.const 32))
            (i64.extend_i32_u (local.get $len))))
  (func (export "wasmsched_call") (param $fn i32) (param $op i32) (param $n i32) (result i64)
    (local $s i32)
    (if (i32.eq (local.get $fn) (i32.const -1))
      (then
        (if (i32.lt_u (local.get $op) (i32.const 64))
          (then
            (local.set $s (call $slot (local.get $op)))
            (i32.store (local.get $s) (i32.const 0))
            (i32.store offset=4 (local.get $s) (local.get $n))
            (memory.copy (i32.add (local.get $s) (i32.const 8)) (global.get $input) (local.get $n))))
        (if (i32.and (i32.ge_u (local.get $op) (i32.const 64)) (i32.lt_u (local.get $op) (i32.const 128)))
          (then
            (local.set $s (call $slot (i32.sub (local.get $op) (i32.const 64))))
            (i32.store (local.get $s) (i32.load (global.get $input)))
            (i32.store offset=4 (local.get $s) (i32.load offset=4 (global.get $input)))))
        (if (i32.eq (local.get $op) (i32.const 128))
          (then (global.set $version (i32.load (global.get $input)))))
        (if (i32.eq (local.get $op) (i32.const 129))
          (then (global.set $input (i32.load (global.get $input)))))
        (return (call $pair (i32.const 0x100) (i32.const 1)))))
    (if (i32.ge_u (local.get $fn) (i32.const 64))
      (then (return (call $pair (i32.const 0x100) (i32.const 1)))))
    (local.set $s (call $slot (local.get $fn)))
    (if (i32.load (local.get $s))
      (then (return (call $pair (i32.load (local.get $s)) (i32.load offset=4 (local.get $s))))))
    (if (i32.load offset=4 (local.get $s))
      (then (return (call $pair (i32.add (local.get $s) (i32.const 8)) (i32.load offset=4 (local.get $s))))))
    (call $pair (i32.const 0x100) (i32.const 1))))
