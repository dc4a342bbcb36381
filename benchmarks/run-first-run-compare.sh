#!/usr/bin/env bash
# A fresh daemon's first runs, base against head, in one session on one machine.
#
#   benchmarks/run-first-run-compare.sh BASE HEAD
#
# BASE and HEAD are commits or paths to sandboxd.jar files (see jar_for in bench-daemon.sh).
# ROUNDS times (default 3), alternating which goes first, each jar serves three fresh daemons
# (--dev defaults, fresh state), each driven by `sandboxctl bench` of examples/hello.wasm by bytes:
#   first-now    from the moment it serves, 1 client for 2 s counted from the first call: its max
#                is the first run, the client racing the daemon's start;
#   first-idle   the same after the daemon has served idle for IDLE seconds (default 3), as a
#                service started before its first client is;
#   cold-1, -16  at once, 5 s at 1 client then 5 s at 16 (bench's default 1 s warm-up), the check
#                of a freshly started daemon.
# The client is a fresh JVM each time, as cold for either jar, and the head's for both: only the
# daemon differs. Since stop 72 bench counts the calls begun in its window, not one begun in the
# warm-up that ends in it (a fresh daemon's first run by bytes, about a second, used to be cold-1's
# max). Prints one line a bench and a table of medians. Run it on a quiet machine.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=SCRIPTDIR/bench-daemon.sh
source "$root/benchmarks/bench-daemon.sh"
[[ $# -eq 2 ]] || { sed -n '2,16p' "$0" >&2; exit 2; }
ROUNDS="${ROUNDS:-3}"
IDLE="${IDLE:-3}"
compare_setup run-first-run-compare "$1" "$2"

# bench NAME SCENARIO CLIENTS SECONDS WARMUP: one bench against the serving daemon, one line out.
bench() {
  local json
  json="$(java -cp "$work/head.jar" io.sandboxd.daemon.cli.Sandboxctl bench \
    "$root/examples/hello.wasm" --grants "$root/examples/hello.grants.json" \
    --concurrency "$3" --duration "$4" --warmup "$5" --socket "$work/d/run/s.sock" --json)"
  echo "$1 $2 $json" | tee -a "$work/results.txt"
}

# fresh NAME: a daemon of NAME's jar on fresh state.
fresh() {
  rm -rf "$work/d"
  mkdir -p "$work/d/state" "$work/d/run"
  serve_daemon "$work/d/log" -cp "$work/$1.jar" io.sandboxd.daemon.SandboxdMain serve --dev \
    --state "$work/d/state" --socket "$work/d/run/s.sock"
}

measure() {
  fresh "$1"
  bench "$1" first-now 1 2 0
  stop_daemon
  fresh "$1"
  sleep "$IDLE"
  bench "$1" first-idle 1 2 0
  stop_daemon
  fresh "$1"
  bench "$1" cold-1 1 5 1
  bench "$1" cold-16 16 5 1
  stop_daemon
}

for r in $(seq "$ROUNDS"); do
  if ((r % 2)); then order="base head"; else order="head base"; fi
  for name in $order; do measure "$name"; done
done

python3 - "$work/results.txt" <<'PY'
import json, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    name, scenario, js = line.split(" ", 2)
    rows.setdefault((scenario, name), []).append(json.loads(js))
med = lambda xs: statistics.median(xs)
print()
print(f"{'scenario':<11} {'figure (median)':<17} {'base':>10} {'head':>10} {'head/base':>10}")
for scenario in ["first-now", "first-idle", "cold-1", "cold-16"]:
    figures = ["max_ms", "p50_ms"] if scenario.startswith("first") else ["units_per_s", "p50_ms", "p99_ms", "max_ms"]
    for f in figures:
        b = med([x[f] for x in rows[(scenario, "base")]])
        h = med([x[f] for x in rows[(scenario, "head")]])
        print(f"{scenario:<11} {f:<17} {b:>10.1f} {h:>10.1f} {h / b if b else float('nan'):>10.2f}")
PY
