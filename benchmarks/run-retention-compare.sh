#!/usr/bin/env bash
# Issue 22: a daemon whose store is past store.max_bytes prunes every run it stores; whether it
# slows as the pruned runs pile up. For each of two daemon jars (base first, then head, ROUNDS
# times), a fresh --dev daemon with store.max_bytes MAX_BYTES (default 4,000,000: a few thousand
# hello runs' signed records) takes BENCHES (default 6) `sandboxctl bench` runs of hello by bytes
# at CLIENTS (default 16) for SECONDS (default 10) each, in a row; prints each bench's units/s,
# p50 and p99 with the runs stored and pruned so far (sqlite3 on the store, read-only).
#
# Then RetentionCheck (this tree's benchmarks jar, with each daemon jar's classes first) on a copy
# of one store of CHECK_RUNS runs (default 100,000): what pruning half of it by age, then to a
# quarter by count, takes, and what a check with nothing more due costs after each. Then 20 rounds of
# 64 runs, each followed by a check that prunes every run but the newest (a store whose records
# alone pass max_bytes). CHECK_KIND=io: each run a WASI command's that printed the same greeting
# (its stdout and empty stderr named by every run); CHECK_KIND=units: runs of two modules in turn.
# BENCHES=0 skips the daemon benches.
#
#   benchmarks/run-retention-compare.sh BASE_SANDBOXD_JAR HEAD_SANDBOXD_JAR [ROUNDS]
#   (mvn -B -q -pl benchmarks -am package -DskipTests first, for benchmarks/target/benchmarks.jar)
set -euo pipefail
(($# >= 2)) || { echo "usage: $0 BASE_JAR HEAD_JAR [ROUNDS]" >&2; exit 2; }
root="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=SCRIPTDIR/bench-daemon.sh
source "$root/benchmarks/bench-daemon.sh"
base="$(realpath "$1")"
head="$(realpath "$2")"
rounds="${3:-1}"
max_bytes="${MAX_BYTES:-4000000}"
benches="${BENCHES:-6}"
clients="${CLIENTS:-16}"
seconds="${SECONDS_EACH:-10}"
work="$(mktemp -d)"
trap 'stop_daemon 2>/dev/null || true; rm -rf "$work"' EXIT
# bench_round ROUND SIDE JAR: a fresh daemon of JAR past its bound, BENCHES benches in a row.
bench_round() {
  local d="$work/$2-$1" i out counts
  mkdir -p "$d/state" "$d/run"
  printf '{"store":{"max_bytes":%s}}\n' "$max_bytes" >"$d/cfg.json"
  serve_daemon "$d/log" -cp "$3" io.sandboxd.daemon.SandboxdMain serve --dev \
    --state "$d/state" --socket "$d/run/s.sock" --config "$d/cfg.json"
  for i in $(seq 1 "$benches"); do
    out=$(java -cp "$3" io.sandboxd.daemon.cli.Sandboxctl bench "$root/examples/hello.wasm" \
      --grants "$root/examples/hello.grants.json" --concurrency "$clients" \
      --duration "$seconds" --socket "$d/run/s.sock" --json)
    counts=$(sqlite3 "file:$d/state/runs.db?mode=ro" \
      "SELECT (SELECT count(*) FROM runs) || ' runs, ' || (SELECT count(*) FROM pruned) || ' pruned'")
    printf 'round %s %s bench %s: %s | %s\n' "$1" "$2" "$i" \
      "$(python3 -c 'import json,sys; j=json.load(sys.stdin); print("%.1f units/s, p50 %.1f ms, p99 %.1f ms" % (j["units_per_s"], j["p50_ms"], j["p99_ms"]))' <<<"$out")" \
      "$counts"
  done
  stop_daemon
}
if ((benches > 0)); then
  alternate "$rounds" "$base" "$head" bench_round
fi
bench="$root/benchmarks/target/benchmarks.jar"
java -cp "$base:$bench" io.sandboxd.benchmarks.RetentionCheck make "$work/filled.db" \
  "${CHECK_RUNS:-100000}" ${CHECK_KIND:+"$CHECK_KIND"}
# check_round ROUND SIDE JAR: RetentionCheck with JAR's daemon classes, on a fresh copy.
check_round() {
  rm -f "$work"/check.db*
  cp "$work/filled.db" "$work/check.db"
  printf 'round %s %s: ' "$1" "$2"
  java -cp "$3:$bench" io.sandboxd.benchmarks.RetentionCheck run "$work/check.db" \
    ${CHECK_KIND:+"$CHECK_KIND"}
}
alternate "$rounds" "$base" "$head" check_round
