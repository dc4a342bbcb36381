#!/usr/bin/env bash
# Issue 22 (stop 59): how much memory a hostile flood of deep units makes the daemon hold. For each
# JAR: a fresh daemon (--dev defaults) takes a unit that recurses until its stack is exhausted (a
# trap, "call stack exhausted": its thread's whole 8 MiB stack touched), from CONNECTIONS
# `sandboxctl bench` processes of CLIENTS clients each (default 2 x 40: one uid's share of the
# handler threads, more than one connection's) for DURATION seconds (default 20). Prints the
# daemon's RSS before, under the flood and after it, its threads, the units/s, and after the flood
# the unit threads' stacks (mappings of 8,160-8,192 KiB: an 8 MiB stack less its guard pages) that
# hold more than 1 MiB resident and their resident MiB. A stack's touched pages stay resident until
# its thread ends, so that is the threads that ran a unit, 8 MiB each.
#
#   benchmarks/run-stack-flood.sh JAR [JAR...]
#   benchmarks/run-stack-flood.sh /tmp/base.jar daemon/target/sandboxd.jar
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=SCRIPTDIR/bench-daemon.sh
source "$root/benchmarks/bench-daemon.sh"
daemon_pid=
work=
scratch_on_exit
(($# >= 1)) || { echo "usage: $0 JAR [JAR...]" >&2; exit 2; }
connections="${CONNECTIONS:-2}"
clients="${CLIENTS:-40}"
seconds="${DURATION:-20}"

# Writes the unit to $1: run() calls down(100,000,000), which calls itself one lower until 0.
deep_unit() {
  python3 - "$1" "$root/benchmarks" <<'PY'
import sys
sys.path.insert(0, sys.argv[2])
from wasm_bytes import name, section, uleb, vec
types = vec([b"\x60" + vec([b"\x7f"]) + vec([b"\x7f"]), b"\x60" + vec([]) + vec([b"\x7f"])])
# down(n): if n == 0 then 0 else down(n - 1)
down = b"\x00\x20\x00\x45\x04\x7f\x41\x00\x05\x20\x00\x41\x01\x6b\x10\x00\x0b\x0b"
# run(): drop(down(100000000)); 0  (100,000,000 as a signed LEB128)
run = b"\x00\x41\x80\xc2\xd7\x2f\x10\x00\x1a\x41\x00\x0b"
code = vec([uleb(len(down)) + down, uleb(len(run)) + run])
exports = vec([name("run") + b"\x00" + uleb(1)])
wasm = b"\x00asm\x01\x00\x00\x00" + section(1, types) + section(3, vec([uleb(0), uleb(1)]))
wasm += section(7, exports) + section(10, code)
open(sys.argv[1], "wb").write(wasm)
PY
}

rss_mib() { awk '/^VmRSS/ {printf "%d", $2 / 1024}' "/proc/$daemon_pid/status"; }
# "N M": the 8 MiB thread stacks with more than 1 MiB resident, and their resident MiB in all.
unit_stacks() {
  python3 - "$daemon_pid" <<'PY'
import sys
size = held = rss = 0
for line in open(f"/proc/{sys.argv[1]}/smaps"):
    f = line.split()
    if f[0] == "Size:":
        size = int(f[1])
    elif f[0] == "Rss:" and 8160 <= size <= 8192 and int(f[1]) > 1024:
        held += 1
        rss += int(f[1])
print(held, rss // 1024)
PY
}
threads() { find "/proc/$daemon_pid/task" -mindepth 1 -maxdepth 1 | wc -l; }

for jar in "$@"; do
  work="$(mktemp -d)"
  mkdir -p "$work/state" "$work/run"
  deep_unit "$work/deep.wasm"
  # hello's grants: the deep unit needs no host call, and its 2 s of CPU is never reached.
  grants="$root/examples/hello.grants.json"
  ctl=(java -XX:TieredStopAtLevel=1 -cp "$jar" io.sandboxd.daemon.cli.Sandboxctl)
  serve_daemon "$work/log" -cp "$jar" io.sandboxd.daemon.SandboxdMain serve --dev \
    --state "$work/state" --socket "$work/run/s.sock"
  address="$("${ctl[@]}" modules put "$work/deep.wasm" --socket "$work/run/s.sock")"
  outcome="$("${ctl[@]}" run "$work/deep.wasm" --grants "$grants" --socket "$work/run/s.sock" 2>&1 \
    | grep -o 'outcome .*' || true)"
  before="$(rss_mib)"
  pids=()
  for k in $(seq 1 "$connections"); do
    "${ctl[@]}" bench "b3:$address" --grants "$grants" --concurrency "$clients" \
      --duration "$seconds" --warmup 0 --socket "$work/run/s.sock" --json >"$work/b$k.json" &
    pids+=($!)
  done
  sleep $((seconds * 2 / 3))
  loaded="$(rss_mib)"
  loaded_threads="$(threads)"
  wait "${pids[@]}"
  after="$(rss_mib)"
  read -r stacks stacks_mib <<<"$(unit_stacks)"
  units="$(python3 -c 'import json, sys
print(round(sum(json.load(open(f))["units_per_s"] for f in sys.argv[1:]), 1))' "$work"/b*.json)"
  stop_daemon
  echo "$(basename "$jar"): ${connections}x${clients} clients ${seconds}s: rss MiB before=$before" \
    "loaded=$loaded after=$after rise=$((after - before)) threads=$loaded_threads units/s=$units;" \
    "unit stacks held: $stacks threads, $stacks_mib MiB (a unit's $outcome)"
  rm -rf "$work"
  work=
done
