;; Plain misbehaviours for the conformance suite. wasmsched_call(fn, ...):
;;   1 unreachable                     2 a load past the end of memory
;;   3 1 divided by arg (0: a trap)    4 an endless loop
;;   5 memory.grow by one page until it fails; replies the u32 page count
;;   6 memory.grow by 65535 pages at once; replies the i32 it returned
;;   7 a line with terminal escapes and a NUL on stdout, then returns
;;   0 returns at once (an empty reply).
(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 64) "evil \1b[2J\1b]0;title\07 line\00 end\n")
  (func (export "wasmsched_abi_version") (result i32) (i32.const 0x00010000))
  (func (export "wasmsched_input") (param i32) (result i32) (i32.const 1024))
  (func (export "wasmsched_call") (param $fn i32) (param $arg i32) (param $n i32) (result i64)
    (block $done (block $b7 (block $b6 (block $b5 (block $b4 (block $b3 (block $b2 (block $b1
      (br_table $done $b1 $b2 $b3 $b4 $b5 $b6 $b7 $done (local.get $fn)))
      ;; 1
      unreachable)
      ;; 2
      (drop (i32.load (i32.const 0xFFFFFFF0))) (br $done))
      ;; 3
      (drop (i32.div_s (i32.const 1) (local.get $arg))) (br $done))
      ;; 4
      (loop $l (br $l)))
      ;; 5
      (loop $l (br_if $l (i32.ne (memory.grow (i32.const 1)) (i32.const -1))))
      (i32.store (i32.const 0) (memory.size))
      (return (i64.const 4)))
      ;; 6
      (i32.store (i32.const 0) (memory.grow (i32.const 65535)))
      (return (i64.const 4)))
    ;; 7: one iovec at 16 for the 30 bytes at 64
    (i32.store (i32.const 16) (i32.const 64))
    (i32.store (i32.const 20) (i32.const 30))
    (drop (call $fd_write (i32.const 1) (i32.const 16) (i32.const 1) (i32.const 32))))
    (i64.const 0)))
