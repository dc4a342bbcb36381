#!/usr/bin/env python3
"""Writes a unit whose instantiation costs what a warm pool saves: the measure of issue 22's goal
"a configured pool >= 1.2x the same load without one" for a unit that is not hello.

    benchmarks/warm-unit.py OUT.wasm [DATA_KIB]

The module imports sandbox.log, exports memory (32 pages, 2 MiB, fixed) and run, which logs
"warm unit" and returns 0, as hello does. An active data segment of DATA_KIB (default 1024) bytes
at 128 KiB is copied into memory at every instantiation; a warm instance has done that before it
is claimed. It has no start function: sandboxd does not pool a module that has one (the start would
run outside a metered run). Run it under benchmarks/warm-unit.grants.json (2 MiB of memory):

    benchmarks/warm-unit.py /tmp/warm.wasm
    MODULE=/tmp/warm.wasm GRANTS=benchmarks/warm-unit.grants.json \\
      SCENARIOS="1:nopool 1:pool 16:nopool 16:pool" benchmarks/run-pipeline-compare.sh HEAD HEAD
"""
import sys

# Beside this script, which puts its own folder on the path.
from wasm_bytes import name, section, uleb, vec


def module(data_bytes):
    i32 = b"\x7f"
    types = vec([b"\x60" + vec([i32, i32]) + vec([i32]), b"\x60" + vec([]) + vec([i32])])
    imports = vec([name("sandbox") + name("log") + b"\x00" + uleb(0)])
    funcs = vec([uleb(1)])
    memory = vec([b"\x01" + uleb(32) + uleb(32)])
    exports = vec([name("memory") + b"\x02" + uleb(0), name("run") + b"\x00" + uleb(1)])
    # run: (drop (call $log (i32.const 0) (i32.const 9))) (i32.const 0)
    body = vec([]) + b"\x41\x00\x41\x09\x10\x00\x1a\x41\x00\x0b"
    code = vec([uleb(len(body)) + body])
    greeting = b"warm unit"
    payload = bytes((i * 7 + 3) & 0xFF for i in range(data_bytes))
    data = vec(
        [
            b"\x00\x41\x00\x0b" + uleb(len(greeting)) + greeting,
            # i32.const 131072 as signed LEB128
            b"\x00\x41\x80\x80\x08\x0b" + uleb(len(payload)) + payload,
        ]
    )
    return (
        b"\x00asm\x01\x00\x00\x00"
        + section(1, types)
        + section(2, imports)
        + section(3, funcs)
        + section(5, memory)
        + section(7, exports)
        + section(10, code)
        + section(11, data)
    )


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    kib = int(sys.argv[2]) if len(sys.argv) == 3 else 1024
    if not 0 < kib <= 1792:
        sys.exit("DATA_KIB: 1 to 1792 (the segment must fit in 2 MiB above 128 KiB)")
    with open(sys.argv[1], "wb") as f:
        f.write(module(kib * 1024))


if __name__ == "__main__":
    main()
