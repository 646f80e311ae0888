;; Has a start section: code that would run at instantiation.
(module
  (memory (export "memory") 1)
  (func $s)
  (start $s))
