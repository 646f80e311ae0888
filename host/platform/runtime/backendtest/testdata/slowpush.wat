;; A guest whose sync costs time in proportion to what the host pushes,
;; for the suite's push cases: a first sync of a big cluster is the
;; host's work and must not be cut by the call timeout, yet a guest that
;; never returns from its sync must still be stopped.
;;
;; wasmsched_call(fn, arg, n):
;;   1 (manifest)  ABI v1.0, one plugin "P" with Filter
;;   3 (sync)      32 rounds of a multiply-add hash over each of the n
;;                 input bytes, the hash stored at 0x200; OK. Once told
;;                 to (below), an endless loop instead.
;;   -1            from now on, sync never returns; OK
;;   anything else a lone OK byte.
;; wasmsched_input(n) returns 0x10000, growing the memory to hold n bytes
;; there.
(module
  (memory (export "memory") 2)
  (global $endless (mut i32) (i32.const 0))
  (data (i32.const 0x100) "\00")
  ;; OK, then the manifest: v1.0, no flags, one plugin "P", points Filter.
  (data (i32.const 0x110) "\00\01\00\00\00\00\01\01P\02")
  (func (export "wasmsched_abi_version") (result i32) (i32.const 0x00010000))
  (func (export "wasmsched_input") (param $n i32) (result i32)
    (local $pages i32)
    (local.set $pages (i32.shr_u (i32.add (local.get $n) (i32.const 0x1FFFF)) (i32.const 16)))
    (if (i32.gt_u (local.get $pages) (memory.size))
      (then (drop (memory.grow (i32.sub (local.get $pages) (memory.size))))))
    (i32.const 0x10000))
  (func $pair (param $ptr i32) (param $len i32) (result i64)
    (i64.or (i64.shl (i64.extend_i32_u (local.get $ptr)) (i64.const 32))
            (i64.extend_i32_u (local.get $len))))
  (func $sync (param $n i32)
    (local $i i32) (local $r i32) (local $h i32)
    (if (global.get $endless) (then (loop $forever (br $forever))))
    (block $done
      (loop $bytes
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $r (i32.const 32))
        (loop $rounds
          (local.set $h (i32.add (i32.mul (local.get $h) (i32.const 31))
                                 (i32.load8_u offset=0x10000 (local.get $i))))
          (local.set $r (i32.sub (local.get $r) (i32.const 1)))
          (br_if $rounds (local.get $r)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $bytes)))
    (i32.store (i32.const 0x200) (local.get $h)))
  (func (export "wasmsched_call") (param $fn i32) (param $arg i32) (param $n i32) (result i64)
    (if (i32.eq (local.get $fn) (i32.const -1))
      (then (global.set $endless (i32.const 1))))
    (if (i32.eq (local.get $fn) (i32.const 1))
      (then (return (call $pair (i32.const 0x110) (i32.const 10)))))
    (if (i32.eq (local.get $fn) (i32.const 3))
      (then (call $sync (local.get $n))))
    (call $pair (i32.const 0x100) (i32.const 1))))
