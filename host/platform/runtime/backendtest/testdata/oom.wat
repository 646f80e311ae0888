;; wat2wasm flags: --debug-names
;; Guests running out of memory the ways allocators do, for the
;; conformance suite. Built with its name section (the flags above) so
;; that traps name their functions as a real build's do.
;; wasmsched_call(fn, ...):
;;   1 memory.grow by one page until refused, then unreachable (an
;;     allocator giving up: Rust's, C's, TinyGo's)
;;   2 unreachable in a function named runtime.alloc, growing nothing
;;     (TinyGo's allocator built with -panic=trap)
;;   3 Go's last words on stderr ("fatal error: out of memory"), then
;;     proc_exit(2), growing nothing
;;   4 Rust's last words on stderr ("memory allocation of … failed"),
;;     then unreachable, growing nothing
;;   0 returns at once.
(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  (memory (export "memory") 1)
  (data (i32.const 64) "runtime: out of memory: cannot allocate 4194304-byte block (67108864 in use)\nfatal error: out of memory\n")
  (data (i32.const 256) "memory allocation of 1048576 bytes failed\n")
  (func (export "wasmsched_abi_version") (result i32) (i32.const 0x00010000))
  (func (export "wasmsched_input") (param i32) (result i32) (i32.const 1024))

  ;; write(fd, ptr, len): one fd_write with one iovec at address 0.
  (func $write (param $fd i32) (param $ptr i32) (param $len i32)
    (i32.store (i32.const 0) (local.get $ptr))
    (i32.store (i32.const 4) (local.get $len))
    (drop (call $fd_write (local.get $fd) (i32.const 0) (i32.const 1) (i32.const 8))))

  ;; An allocator that grows memory a page at a time and gives up when
  ;; memory.grow is refused.
  (func $give_up
    (loop $l (br_if $l (i32.ne (memory.grow (i32.const 1)) (i32.const -1))))
    unreachable)

  (func $runtime.alloc unreachable)

  (func (export "wasmsched_call") (param $fn i32) (param $arg i32) (param $n i32) (result i64)
    (block $done (block $b4 (block $b3 (block $b2 (block $b1
      (br_table $done $b1 $b2 $b3 $b4 $done (local.get $fn)))
      ;; 1
      (call $give_up) (br $done))
      ;; 2
      (call $runtime.alloc) (br $done))
      ;; 3
      (call $write (i32.const 2) (i32.const 64) (i32.const 104))
      (call $proc_exit (i32.const 2)) (br $done))
    ;; 4
    (call $write (i32.const 2) (i32.const 256) (i32.const 42))
    unreachable)
    (i64.const 0)))
