;; A first unit: logs a greeting, reads the clock twice (granted or not) and draws a random
;; number if the grant allows it. Build: wat2wasm hello.wat -o hello.wasm
(module
  (import "sandbox" "log" (func $log (param i32 i32) (result i32)))
  (import "sandbox" "clock_now" (func $clock_now (param i32) (result i32)))
  (import "sandbox" "random_u64" (func $random_u64 (param i32) (result i32)))
  (memory (export "memory") 1 2)
  (data (i32.const 0) "hello from a sandboxd unit")
  (data (i32.const 32) "random_u64 was denied, as granted")
  (func (export "run") (result i32)
    (if (i32.ne (call $log (i32.const 0) (i32.const 26)) (i32.const 0))
      (then (return (i32.const 1))))
    (drop (call $clock_now (i32.const 128)))
    (drop (call $clock_now (i32.const 136)))
    (if (i32.ne (call $random_u64 (i32.const 144)) (i32.const 0))
      (then (drop (call $log (i32.const 32) (i32.const 33)))))
    (i32.const 0)))
