#!/usr/bin/env bash
# Issue 22: does the background verifier keep up with a steady load? For each JAR: a fresh daemon
# (--dev defaults) serves `sandboxctl bench` of examples/hello.wasm by address with CLIENTS clients
# for SECONDS, then stops (SIGTERM); prints the runs stored, the runs its sealed checkpoint covers
# (what the next start-up need not check again), the ms the stop took (with store.seal_on_stop it
# checks and seals the runs since the checkpoint) and the ms from a restart's spawn to
# serving (the daemon's own store-check line beside it). Run it on a quiet machine, alternating the jars.
#
#   benchmarks/run-seal-lag.sh CLIENTS SECONDS JAR [JAR...]
#   benchmarks/run-seal-lag.sh 1 90 /tmp/base.jar daemon/target/sandboxd.jar
#   CONFIG='{"store":{"seal_on_stop":true}}' benchmarks/run-seal-lag.sh 1 60 JAR   # daemon config
#   IDLE=5 benchmarks/run-seal-lag.sh 16 30 JAR   # 5 s without load between the bench and the stop
# With store.seal_on_stop the line ends with the daemon's "sealed N run(s) before stopping (M ms)":
# M / N is what the background seal's check costs a run in the daemon, its JIT warm.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=SCRIPTDIR/bench-daemon.sh
source "$root/benchmarks/bench-daemon.sh"
(($# >= 3)) || { echo "usage: $0 CLIENTS SECONDS JAR [JAR...]" >&2; exit 2; }
clients="$1"
seconds="$2"
shift 2
module="$root/examples/hello.wasm"
grants="$root/examples/hello.grants.json"
daemon_pid=
work=
scratch_on_exit

# Starts the daemon of jar $1 on $work's state, logging to $work/$2; sets daemon_pid; waits to
# serve.
serve() {
  serve_daemon "$work/$2" -cp "$1" io.sandboxd.daemon.SandboxdMain serve --dev \
    --state "$work/state" --socket "$work/run/s.sock" --config "$work/cfg.json"
}

for jar in "$@"; do
  work="$(mktemp -d)"
  mkdir -p "$work/state" "$work/run"
  echo "${CONFIG:-{\}}" >"$work/cfg.json"
  ctl=(java -XX:TieredStopAtLevel=1 -cp "$jar" io.sandboxd.daemon.cli.Sandboxctl)
  address="$("${ctl[@]}" address --raw "$module")"
  serve "$jar" log1
  "${ctl[@]}" modules put "$module" --socket "$work/run/s.sock" >/dev/null
  bench="$("${ctl[@]}" bench "b3:$address" --grants "$grants" --concurrency "$clients" \
    --duration "$seconds" --warmup 0 --socket "$work/run/s.sock" --json)"
  # A lull before the stop: an idle daemon's verifier may take store.verify_idle_cpu_percent.
  sleep "${IDLE:-0}"
  s0="$(date +%s%N)"
  stop_daemon
  s1="$(date +%s%N)"
  counts="$(python3 - "$work/state/runs.db" <<'PY'
import re, sqlite3, sys
c = sqlite3.connect(sys.argv[1])
runs = c.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
row = c.execute("SELECT envelope FROM store_checkpoint").fetchone()
text = row[0] if row and isinstance(row[0], str) else (row[0].decode("latin-1") if row else "")
m = re.search(r'"runs":(\d+)', text)
print(runs, int(m.group(1)) if m else 0)
PY
)"
  read -r runs sealed <<<"$counts"
  t0="$(date +%s%N)"
  serve "$jar" log2
  t1="$(date +%s%N)"
  stop_daemon
  check="$(grep -o 'after the sealed checkpoint at [0-9]* verify[^;]*([0-9]* ms)' "$work/log2" | head -1 || true)"
  # With store.seal_on_stop: the runs the stop sealed and the ms it took (the seal's cost a run).
  at_stop="$(grep -o 'sealed [0-9]* run(s) before stopping[^)]*)' "$work/log1" | head -1 || true)"
  units="$(python3 -c 'import json,sys; print(json.load(sys.stdin)["units_per_s"])' <<<"$bench")"
  echo "$(basename "$jar"): clients=$clients load=${seconds}s idle=${IDLE:-0}s units/s=$units runs=$runs" \
    "sealed=$sealed unsealed=$((runs - sealed)) stop_ms=$(((s1 - s0) / 1000000))" \
    "restart_to_serving_ms=$(((t1 - t0) / 1000000))" \
    "check: $check${at_stop:+ stop: $at_stop}"
  rm -rf "$work"
  work=
done
