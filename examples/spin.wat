;; A runaway unit: loops forever. Its grant's cpu_time_ms bounds it: Terminated {breach: CpuTime}.
(module
  (func (export "run") (result i32)
    (loop $forever (br $forever))
    (i32.const 0)))
