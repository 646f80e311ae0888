;; Sets global 0, which this module does not have: after instrumentation
;; it would be the added countdown, so the loop would never reach a safe
;; point. Invalid on its own (assemble with wat2wasm --no-check); the
;; rewriter must refuse it rather than make it valid.
(module
  (memory (export "memory") 1)
  (func (export "spin")
    (loop $top
      (global.set 0 (i32.const 1000))
      (br $top))))
