;; Call graphs the sandbox must see through (the conformance suite, and
;; host/platform/runtime/wasm's instrumentation tests, which read this file too):
;; wasmsched_call(fn, ...) runs
;;   1 a call tree with no loop and no recursion: $t0 calls $t1 twice, ...,
;;     $t39 calls $t40 twice (2^40 calls): only the deadline stops it
;;   2 recursion through a table: $ping calls $pong through call_indirect,
;;     $pong calls $ping directly: only the stack budget stops it
;;   3 a chain of small helpers (the hot path of a real plugin), 1000 times
;;   0 returns at once.
;; The $tN functions were written by a script: keep the pattern if you edit it.
(module
  (memory (export "memory") 1)
  (table 1 funcref)
  (elem (i32.const 0) $pong)
  (type $i32toi32 (func (param i32) (result i32)))
  (func (export "wasmsched_abi_version") (result i32) (i32.const 0x00010001))
  (func (export "wasmsched_input") (param i32) (result i32) (i32.const 1024))
  (func $t0 (param $x i64) (result i64) (i64.add (call $t1 (local.get $x)) (call $t1 (i64.add (local.get $x) (i64.const 1)))))
  (func $t1 (param $x i64) (result i64) (i64.add (call $t2 (local.get $x)) (call $t2 (i64.add (local.get $x) (i64.const 1)))))
  (func $t2 (param $x i64) (result i64) (i64.add (call $t3 (local.get $x)) (call $t3 (i64.add (local.get $x) (i64.const 1)))))
  (func $t3 (param $x i64) (result i64) (i64.add (call $t4 (local.get $x)) (call $t4 (i64.add (local.get $x) (i64.const 1)))))
  (func $t4 (param $x i64) (result i64) (i64.add (call $t5 (local.get $x)) (call $t5 (i64.add (local.get $x) (i64.const 1)))))
  (func $t5 (param $x i64) (result i64) (i64.add (call $t6 (local.get $x)) (call $t6 (i64.add (local.get $x) (i64.const 1)))))
  (func $t6 (param $x i64) (result i64) (i64.add (call $t7 (local.get $x)) (call $t7 (i64.add (local.get $x) (i64.const 1)))))
  (func $t7 (param $x i64) (result i64) (i64.add (call $t8 (local.get $x)) (call $t8 (i64.add (local.get $x) (i64.const 1)))))
  (func $t8 (param $x i64) (result i64) (i64.add (call $t9 (local.get $x)) (call $t9 (i64.add (local.get $x) (i64.const 1)))))
  (func $t9 (param $x i64) (result i64) (i64.add (call $t10 (local.get $x)) (call $t10 (i64.add (local.get $x) (i64.const 1)))))
  (func $t10 (param $x i64) (result i64) (i64.add (call $t11 (local.get $x)) (call $t11 (i64.add (local.get $x) (i64.const 1)))))
  (func $t11 (param $x i64) (result i64) (i64.add (call $t12 (local.get $x)) (call $t12 (i64.add (local.get $x) (i64.const 1)))))
  (func $t12 (param $x i64) (result i64) (i64.add (call $t13 (local.get $x)) (call $t13 (i64.add (local.get $x) (i64.const 1)))))
  (func $t13 (param $x i64) (result i64) (i64.add (call $t14 (local.get $x)) (call $t14 (i64.add (local.get $x) (i64.const 1)))))
  (func $t14 (param $x i64) (result i64) (i64.add (call $t15 (local.get $x)) (call $t15 (i64.add (local.get $x) (i64.const 1)))))
  (func $t15 (param $x i64) (result i64) (i64.add (call $t16 (local.get $x)) (call $t16 (i64.add (local.get $x) (i64.const 1)))))
  (func $t16 (param $x i64) (result i64) (i64.add (call $t17 (local.get $x)) (call $t17 (i64.add (local.get $x) (i64.const 1)))))
  (func $t17 (param $x i64) (result i64) (i64.add (call $t18 (local.get $x)) (call $t18 (i64.add (local.get $x) (i64.const 1)))))
  (func $t18 (param $x i64) (result i64) (i64.add (call $t19 (local.get $x)) (call $t19 (i64.add (local.get $x) (i64.const 1)))))
  (func $t19 (param $x i64) (result i64) (i64.add (call $t20 (local.get $x)) (call $t20 (i64.add (local.get $x) (i64.const 1)))))
  (func $t20 (param $x i64) (result i64) (i64.add (call $t21 (local.get $x)) (call $t21 (i64.add (local.get $x) (i64.const 1)))))
  (func $t21 (param $x i64) (result i64) (i64.add (call $t22 (local.get $x)) (call $t22 (i64.add (local.get $x) (i64.const 1)))))
  (func $t22 (param $x i64) (result i64) (i64.add (call $t23 (local.get $x)) (call $t23 (i64.add (local.get $x) (i64.const 1)))))
  (func $t23 (param $x i64) (result i64) (i64.add (call $t24 (local.get $x)) (call $t24 (i64.add (local.get $x) (i64.const 1)))))
  (func $t24 (param $x i64) (result i64) (i64.add (call $t25 (local.get $x)) (call $t25 (i64.add (local.get $x) (i64.const 1)))))
  (func $t25 (param $x i64) (result i64) (i64.add (call $t26 (local.get $x)) (call $t26 (i64.add (local.get $x) (i64.const 1)))))
  (func $t26 (param $x i64) (result i64) (i64.add (call $t27 (local.get $x)) (call $t27 (i64.add (local.get $x) (i64.const 1)))))
  (func $t27 (param $x i64) (result i64) (i64.add (call $t28 (local.get $x)) (call $t28 (i64.add (local.get $x) (i64.const 1)))))
  (func $t28 (param $x i64) (result i64) (i64.add (call $t29 (local.get $x)) (call $t29 (i64.add (local.get $x) (i64.const 1)))))
  (func $t29 (param $x i64) (result i64) (i64.add (call $t30 (local.get $x)) (call $t30 (i64.add (local.get $x) (i64.const 1)))))
  (func $t30 (param $x i64) (result i64) (i64.add (call $t31 (local.get $x)) (call $t31 (i64.add (local.get $x) (i64.const 1)))))
  (func $t31 (param $x i64) (result i64) (i64.add (call $t32 (local.get $x)) (call $t32 (i64.add (local.get $x) (i64.const 1)))))
  (func $t32 (param $x i64) (result i64) (i64.add (call $t33 (local.get $x)) (call $t33 (i64.add (local.get $x) (i64.const 1)))))
  (func $t33 (param $x i64) (result i64) (i64.add (call $t34 (local.get $x)) (call $t34 (i64.add (local.get $x) (i64.const 1)))))
  (func $t34 (param $x i64) (result i64) (i64.add (call $t35 (local.get $x)) (call $t35 (i64.add (local.get $x) (i64.const 1)))))
  (func $t35 (param $x i64) (result i64) (i64.add (call $t36 (local.get $x)) (call $t36 (i64.add (local.get $x) (i64.const 1)))))
  (func $t36 (param $x i64) (result i64) (i64.add (call $t37 (local.get $x)) (call $t37 (i64.add (local.get $x) (i64.const 1)))))
  (func $t37 (param $x i64) (result i64) (i64.add (call $t38 (local.get $x)) (call $t38 (i64.add (local.get $x) (i64.const 1)))))
  (func $t38 (param $x i64) (result i64) (i64.add (call $t39 (local.get $x)) (call $t39 (i64.add (local.get $x) (i64.const 1)))))
  (func $t39 (param $x i64) (result i64) (i64.add (call $t40 (local.get $x)) (call $t40 (i64.add (local.get $x) (i64.const 1)))))
  (func $t40 (param $x i64) (result i64) (i64.mul (local.get $x) (i64.const 3)))
  (func $ping (param $n i32) (result i32)
    (i32.add (call_indirect (type $i32toi32) (i32.add (local.get $n) (i32.const 1)) (i32.const 0)) (i32.const 1)))
  (func $pong (param $n i32) (result i32) (call $ping (local.get $n)))
  (func $inner (param $x i32) (result i32) (i32.xor (i32.mul (local.get $x) (i32.const 31)) (i32.const 7)))
  (func $middle (param $x i32) (result i32) (call $inner (call $inner (local.get $x))))
  (func $outer (param $x i32) (result i32) (i32.add (call $middle (local.get $x)) (call $inner (local.get $x))))
  (func (export "wasmsched_call") (param $fn i32) (param $arg i32) (param $n i32) (result i64)
    (local $i i32) (local $acc i32)
    (block $done (block $b3 (block $b2 (block $b1
      (br_table $done $b1 $b2 $b3 $done (local.get $fn)))
      ;; 1
      (drop (call $t0 (i64.const 0))) (br $done))
      ;; 2
      (drop (call $ping (i32.const 0))) (br $done))
    ;; 3
    (loop $l
      (local.set $acc (call $outer (i32.add (local.get $acc) (local.get $i))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $l (i32.lt_u (local.get $i) (i32.const 1000))))
    (i32.store (i32.const 0) (local.get $acc)))
    (i64.const 0)))
