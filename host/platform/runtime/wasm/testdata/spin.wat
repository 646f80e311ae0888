;; Imports a global (so the interrupt global's index is shifted), defines
;; one, and spins in a loop for as many iterations as asked (0 = forever).
(module
  (import "wasi_snapshot_preview1" "sched_yield" (func $yield (result i32)))
  (global $g (mut i32) (i32.const 7))
  (memory (export "memory") 1)
  (func (export "spin") (param $n i32) (result i32)
    (local $i i32)
    (loop $top
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $top (i32.or (i32.eqz (local.get $n)) (i32.lt_u (local.get $i) (local.get $n)))))
    (i32.add (local.get $i) (global.get $g))))
