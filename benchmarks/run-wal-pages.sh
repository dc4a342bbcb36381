#!/usr/bin/env bash
# Issue 22: which b-trees of the run store a hello run's commit writes, under load. Starts a fresh
# daemon (--dev defaults) from JAR, serves `sandboxctl bench` of examples/hello.wasm by address with
# CLIENTS clients (default 1) for WARMUP + SECONDS + 5 seconds, and after WARMUP (default 15)
# counts the WAL frames of SECONDS (default 5) by the b-tree they belong to (wal_pages.py). Set
# beside sqlite-write-floor.py, it shows what the store writes a run above the floor of any
# layout. Run it on a quiet machine.
#
#   benchmarks/run-wal-pages.sh [JAR] [CLIENTS]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=SCRIPTDIR/bench-daemon.sh
source "$root/benchmarks/bench-daemon.sh"
daemon_pid=
work="$(mktemp -d)"
scratch_on_exit
jar="${1:-$root/daemon/target/sandboxd.jar}"
warmup="${WARMUP:-15}"
window="${SECONDS_COUNTED:-5}"
ctl=(java -XX:TieredStopAtLevel=1 -cp "$jar" io.sandboxd.daemon.cli.Sandboxctl)
module="$root/examples/hello.wasm"
address="$("${ctl[@]}" address --raw "$module")"
serve_daemon "$work/log" -cp "$jar" io.sandboxd.daemon.SandboxdMain serve --dev \
  --state "$work/state" --socket "$work/s.sock"
"${ctl[@]}" modules put "$module" --socket "$work/s.sock" >/dev/null
"${ctl[@]}" bench "b3:$address" --grants "$root/examples/hello.grants.json" \
  --concurrency "${2:-1}" --duration $((warmup + window + 5)) --warmup 0 \
  --socket "$work/s.sock" --json >"$work/bench.json" &
bench=$!
sleep "$warmup"
python3 "$root/benchmarks/wal_pages.py" "$work/state" "$daemon_pid" "$window"
wait "$bench"
echo "bench: $(cat "$work/bench.json")"
stop_daemon
