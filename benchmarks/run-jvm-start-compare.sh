#!/usr/bin/env bash
# One jar under two JVMs, each with the start-up cache build-start-cache trains for it (a class
# archive on JDK 17, an AOT cache with method profiles on JDK 25 and later), in one session.
#
#   benchmarks/run-jvm-start-compare.sh BASE_JAVA HEAD_JAVA [JAR]
#
# BASE_JAVA and HEAD_JAVA are java binaries (e.g. java and
# /usr/lib/jvm/temurin-25-jdk-amd64/bin/java); JAR defaults to daemon/target/sandboxd.jar. Each
# gets the jar and the installed launcher staged apart and its cache trained once (the time that
# takes is printed). Then ROUNDS times (default 3), alternating which goes first, each serves a
# fresh daemon through the installed launcher (--dev, fresh state) per scenario, driven by
# `sandboxctl bench` of examples/hello.wasm by bytes from its first second:
#   cold-1, cold-16   COLD seconds (default 20) at 1 and at 16 clients, no warm-up: a fresh
#                     daemon's first seconds, as a check right after a start sees them;
#   warm-16           after 40 s of 16 clients, 20 s more (WARM=0 leaves it out): the steady state.
# Prints one line a bench and a table of medians. Run it on a quiet machine.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
[[ $# -ge 2 && $# -le 3 ]] || { sed -n '2,17p' "$0" >&2; exit 2; }
ROUNDS="${ROUNDS:-3}"
COLD="${COLD:-20}"
WARM="${WARM:-1}"
jar="${3:-$root/daemon/target/sandboxd.jar}"
[[ -f "$jar" ]] || { echo "$0: no jar at $jar" >&2; exit 2; }
# shellcheck source=SCRIPTDIR/bench-daemon.sh
source "$root/benchmarks/bench-daemon.sh"
work="$(mktemp -d)"
daemon_pid=""
trap '[[ -z "$daemon_pid" ]] || kill "$daemon_pid" 2>/dev/null || true; rm -rf "$work"' EXIT
declare -A java_of=([base]="$1" [head]="$2")

for side in base head; do
  mkdir -p "$work/$side/lib/bin"
  cp "$jar" "$work/$side/lib/sandboxd.jar"
  cp "$root"/systemd/src/main/dist/bin/* "$work/$side/lib/bin/"
  t0=$(date +%s%N)
  SANDBOXD_JAVA="${java_of[$side]}" SANDBOXD_LIB="$work/$side/lib" SANDBOXD_CACHE="$work/$side/cache" \
    "$work/$side/lib/bin/build-start-cache" 2>&1 | tail -1
  echo "$side: ${java_of[$side]}, cache trained in $((($(date +%s%N) - t0) / 1000000)) ms"
done

# bench SIDE SCENARIO CLIENTS SECONDS: one bench against the serving daemon, one line out.
bench() {
  local json
  json="$(java -XX:TieredStopAtLevel=1 -cp "$jar" io.sandboxd.daemon.cli.Sandboxctl bench \
    "$root/examples/hello.wasm" --grants "$root/examples/hello.grants.json" \
    --concurrency "$3" --duration "$4" --warmup 0 --socket "$work/d/run/s.sock" --json)"
  echo "$1 $2 $json" | tee -a "$work/results.txt"
}

# fresh SIDE: a daemon through SIDE's installed launcher, on fresh state.
fresh() {
  rm -rf "$work/d"
  mkdir -p "$work/d/state" "$work/d/run"
  serve_command "$work/d/log" env SANDBOXD_JAVA="${java_of[$1]}" SANDBOXD_LIB="$work/$1/lib" \
    SANDBOXD_CACHE="$work/$1/cache" SANDBOXD_JAVA_OPTS="-Djna.tmpdir=$work/d/jna" \
    "$work/$1/lib/bin/sandboxd" serve --dev --state "$work/d/state" --socket "$work/d/run/s.sock"
}

measure() {
  fresh "$1"
  bench "$1" cold-1 1 "$COLD"
  stop_daemon
  fresh "$1"
  bench "$1" cold-16 16 "$COLD"
  stop_daemon
  if [[ "$WARM" != 0 ]]; then
    fresh "$1"
    bench "$1" warm-up 16 40 >/dev/null
    bench "$1" warm-16 16 20
    stop_daemon
  fi
}

for r in $(seq "$ROUNDS"); do
  if ((r % 2)); then order="base head"; else order="head base"; fi
  for side in $order; do measure "$side"; done
done

python3 - "$work/results.txt" "$1" "$2" <<'EOF'
import json, statistics, sys
rows = [l.split(" ", 2) for l in open(sys.argv[1]) if l.strip()]
by = {}
for side, scen, js in rows:
    if scen == "warm-up":
        continue
    by.setdefault((scen, side), []).append(json.loads(js))
print()
print(f"base = {sys.argv[2]}, head = {sys.argv[3]}; medians over rounds")
print(f"{'scenario':<9} {'units/s':>30} {'p50 ms':>26} {'p99 ms':>26}")
for scen in ("cold-1", "cold-16", "warm-16"):
    if (scen, "base") not in by:
        continue
    cells = []
    for k in ("units_per_s", "p50_ms", "p99_ms"):
        b = statistics.median(x[k] for x in by[(scen, "base")])
        h = statistics.median(x[k] for x in by[(scen, "head")])
        cells.append(f"{b:.1f} -> {h:.1f} x{h / b:.2f}")
    print(f"{scen:<9} {cells[0]:>30} {cells[1]:>26} {cells[2]:>26}")
EOF
