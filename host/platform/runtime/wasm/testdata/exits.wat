;; Every way out of a function that calls others: a br_if and a br_table
;; to the body's label, a return, the end of the body, and a function with
;; two results. run(n) calls them n times and sums what they return; the
;; rewriter must keep the results, and give back the stack budget on each
;; way out (n far above the budget's frame count shows a leak).
(module
  (memory (export "memory") 1)
  (func $id (param i32) (result i32) (local.get 0))
  (func $exits (param $x i32) (result i32)
    (drop (call $id (i32.const 0)))
    (drop (br_if 0 (i32.const 10) (i32.eqz (local.get $x))))
    (if (i32.eq (local.get $x) (i32.const 1)) (then (return (i32.const 11))))
    (drop (block (result i32)
      (br_table 0 1 (i32.const 13) (i32.sub (local.get $x) (i32.const 2)))))
    (i32.const 12))
  (func $pair (param i32) (result i32 i32) (call $id (local.get 0)) (i32.const 7))
  (func (export "run") (param $n i32) (result i32)
    (local $i i32) (local $acc i32)
    (loop $l
      (local.set $acc (i32.add (local.get $acc)
        (call $exits (i32.rem_u (local.get $i) (i32.const 4)))))
      (local.set $acc (i32.add (local.get $acc) (i32.add (call $pair (local.get $i)))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $l (i32.lt_u (local.get $i) (local.get $n))))
    (local.get $acc)))
