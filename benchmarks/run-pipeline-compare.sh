#!/usr/bin/env bash
# Issue 22: the run pipeline, base commit against head, in one session on one machine.
#
#   benchmarks/run-pipeline-compare.sh [BASE [HEAD]]
#
# BASE and HEAD are commits (default: dc07c39, the commit issue 22 measured, and the working tree's
# HEAD), or paths to prebuilt sandboxd.jar files. Each commit is built once in a temporary worktree
# (mvn package, tests skipped). Then, for each scenario, ROUNDS times, alternating base and head,
# a fresh daemon (--dev defaults, fresh state) serves `sandboxctl bench` of examples/hello.wasm by
# address for DURATION seconds after WARMUP; the daemon's CPU and the store verifier thread's CPU
# are read from /proc over the measured window, and the store's size and bytes written (WAL
# included, from /proc/PID/io) per run. Prints one line per run and a side-by-side table of medians.
#
# WARMUP (default 40 s) is load before the measured window. On 2 cores the JIT is still compiling
# (and deoptimizing) 15 s into a load, taking about half a core from the daemon; it settles after
# 30-45 s. A window that starts earlier measures the warm-up: the same jar then reads 1,300 or
# 1,900 units/s at 16 clients from one daemon to the next, against about 3,200 settled.
#
# The measured client is a fresh JVM too: its first second runs cold, and counted in the window it
# put a 200-340 ms max and about 4 ms on the p99 at 16 clients. So it loads the daemon for
# CLIENT_WARMUP seconds (default 3) before it starts counting; CPU and bytes are read from half a
# second after its first run is stored (not while its JVM starts and the daemon is idle) to its
# end (the same load), bytes per run over the runs the store gained meanwhile.
#
# Scenarios CLIENTS:MODE: MODE `default` is --dev as shipped (adaptive pools on), `nopool` turns
# adaptive pools off, `pool` configures a pool of hello (min_idle 4, max_idle 32) with adaptive
# pools off. MODULE and GRANTS name another unit and its grants (default: examples/hello.*): a
# pool pays off where instantiating the unit costs more than a warm claim (benchmarks/warm-unit.py
# writes one). Run it on a quiet machine: nothing else building or testing. BASE_JAVA_OPTS and
# HEAD_JAVA_OPTS (space-separated, default none) are JVM options for that side's daemon: the same
# jar under two JVM settings.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=SCRIPTDIR/bench-daemon.sh
source "$root/benchmarks/bench-daemon.sh"
base="${1:-dc07c39}"
head="${2:-HEAD}"
ROUNDS="${ROUNDS:-2}"
DURATION="${DURATION:-20}"
WARMUP="${WARMUP:-40}"
CLIENT_WARMUP="${CLIENT_WARMUP:-3}"
SCENARIOS="${SCENARIOS:-1:default 16:default 1:nopool 1:pool 16:nopool 16:pool}"
compare_setup run-pipeline-compare "$base" "$head"
module="${MODULE:-$root/examples/hello.wasm}"
grants="${GRANTS:-$root/examples/hello.grants.json}"
address="$(java -cp "$work/head.jar" io.sandboxd.daemon.cli.Sandboxctl address --raw "$module")"
[[ "$address" =~ ^[0-9a-f]{64}$ ]] || die "cannot compute the module's address: $address"

# Clock ticks (utime+stime) of all of a process's threads and of those whose name starts with $2,
# read in one quick pass: the two must be read at the same moment (while a slow read walks the
# threads, an idle daemon's verifier may take a core, store.verify_idle_cpu_percent).
thread_ticks() {
  python3 - "$1" "$2" <<'PY'
import os, sys
pid, prefix = sys.argv[1], sys.argv[2]
total = named = 0
for t in os.listdir(f"/proc/{pid}/task"):
    try:
        stat = open(f"/proc/{pid}/task/{t}/stat").read()
    except OSError:
        continue  # a thread may end between the listing and the read
    # comm may hold spaces inside its parentheses: count fields from the closing one.
    name = stat[stat.index("(") + 1 : stat.rindex(")")]
    f = stat[stat.rindex(")") + 2 :].split()
    ticks = int(f[11]) + int(f[12])
    total += ticks
    if name.startswith(prefix):
        named += ticks
print(total, named)
PY
}

write_bytes() { awk '/^write_bytes/ {print $2}' "/proc/$1/io"; }

# Runs in the store at $1 (read-only, beside the serving daemon).
stored_runs() {
  python3 -c 'import sqlite3, sys
c = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True, timeout=30)
print(c.execute("SELECT COUNT(*) FROM runs").fetchone()[0])' "$1"
}

# Starts a daemon on $2's state with config $3; sets daemon_pid.
start_daemon() {
  local name="$1" d="$2"
  echo "$3" >"$d/cfg-now.json"
  local opts=()
  if [[ "$name" == base ]]; then
    read -r -a opts <<<"${BASE_JAVA_OPTS:-}"
  else
    read -r -a opts <<<"${HEAD_JAVA_OPTS:-}"
  fi
  serve_daemon "$d/log" "${opts[@]}" -cp "$work/$name.jar" io.sandboxd.daemon.SandboxdMain serve \
    --dev --state "$d/state" --socket "$d/run/s.sock" --config "$d/cfg-now.json"
  # run_one runs in a pipeline's subshell: cleanup finds the daemon by this file.
  echo "$daemon_pid" >"$work/daemon.pid"
}

run_one() {
  local name="$1" conc="$2" pool="$3" round="$4"
  local d="$work/$name-$conc-$pool-$round"
  mkdir -p "$d/state" "$d/run"
  case "$pool" in
    default) echo '{}' >"$d/cfg.json" ;;
    nopool) echo '{"pool_limits":{"adaptive":{"submits":0}}}' >"$d/cfg.json" ;;
    pool) pool_config "$address" >"$d/cfg.json" ;;
    *) die "unknown mode $pool" ;;
  esac
  # One load generator for both sides, the head's: only the daemon differs between them.
  local ctl=(java -XX:TieredStopAtLevel=1 -cp "$work/head.jar" io.sandboxd.daemon.cli.Sandboxctl)
  # The module goes into the state's module store first, so that a configured pool can name it.
  start_daemon "$name" "$d" '{}'
  "${ctl[@]}" modules put "$module" --socket "$d/run/s.sock" >/dev/null
  stop_daemon
  start_daemon "$name" "$d" "$(cat "$d/cfg.json")"
  # Warm-up outside the window: JIT, the pool filled.
  "${ctl[@]}" bench "b3:$address" --grants "$grants" --concurrency "$conc" --duration "$WARMUP" \
    --warmup 0 --socket "$d/run/s.sock" --json >/dev/null
  local before
  before="$(stored_runs "$d/state/runs.db")"
  "${ctl[@]}" bench "b3:$address" --grants "$grants" --concurrency "$conc" \
    --duration "$DURATION" --warmup "$CLIENT_WARMUP" --socket "$d/run/s.sock" --json \
    >"$d/bench.json" &
  local client=$!
  # The counters start once the client loads the daemon, half a second after its first stored run
  # (inside its warm-up): while its JVM starts the daemon is idle, and an idle daemon's verifier
  # may take more than its share under load (store.verify_idle_cpu_percent), which is not what
  # this window measures.
  until (($(stored_runs "$d/state/runs.db") > before)); do
    kill -0 "$client" 2>/dev/null || break
    sleep 0.05
  done
  sleep 0.5
  local cpu0 ver0 wr0 t0
  read -r cpu0 ver0 < <(thread_ticks "$daemon_pid" "sandboxd-store-")
  wr0="$(write_bytes "$daemon_pid")"
  t0="$(date +%s%N)"
  local runs0 runs1
  runs0="$(stored_runs "$d/state/runs.db")"
  wait "$client" || die "the bench client failed: $(cat "$d/bench.json")"
  local out
  out="$(cat "$d/bench.json")"
  local t1 cpu1 ver1 wr1
  t1="$(date +%s%N)"
  read -r cpu1 ver1 < <(thread_ticks "$daemon_pid" "sandboxd-store-")
  wr1="$(write_bytes "$daemon_pid")"
  runs1="$(stored_runs "$d/state/runs.db")"
  stop_daemon
  # Bytes of used pages once the WAL is checkpointed, over the runs the store holds.
  local stored nruns
  read -r stored nruns < <(python3 - "$d/state/runs.db" <<'EOF'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
q = lambda s: c.execute(s).fetchone()[0]
print((q("PRAGMA page_count") - q("PRAGMA freelist_count")) * q("PRAGMA page_size"), q("SELECT COUNT(*) FROM runs"))
EOF
  )
  python3 - "$name" "$conc" "$pool" "$round" "$out" "$cpu0" "$cpu1" "$ver0" "$ver1" "$wr0" "$wr1" \
    "$t0" "$t1" "$stored" "$nruns" "$(getconf CLK_TCK)" "$runs0" "$runs1" <<'EOF'
import json, sys
(name, conc, pool, rnd, out, cpu0, cpu1, ver0, ver1, wr0, wr1, t0, t1, stored, nruns, hz, runs0,
 runs1) = sys.argv[1:]
b = json.loads(out)
wall = (int(t1) - int(t0)) / 1e9
hz = int(hz)
cpu = (int(cpu1) - int(cpu0)) / hz
ver = (int(ver1) - int(ver0)) / hz
# Bytes were counted from inside the client's warm-up to its end: divide by the runs stored then.
measured = max(1, int(runs1) - int(runs0))
nruns = max(1, int(nruns))
row = {
    "jar": name, "clients": int(conc), "pool": pool, "round": int(rnd),
    "units_per_s": b["units_per_s"], "p50_ms": b["p50_ms"], "p99_ms": b["p99_ms"],
    "errors": b["errors"], "daemon_cores": round(cpu / wall, 3),
    "verifier_share": round(ver / cpu, 4) if cpu else 0,
    "written_per_run_b": int((int(wr1) - int(wr0)) / measured),
    "stored_per_run_b": int(int(stored) / nruns),
}
print(json.dumps(row))
EOF
  # The next daemon must not pay for this one's writes: its store (over a GB at 16 clients) would
  # still be written back during the next window. With this the second run of a pair still read
  # 7-10% slower at 16 clients, whichever jar (stop 59), so only the order by round evens it out.
  rm -rf "$d/state"
  sync
}

results="$work/results.jsonl"
for s in $SCENARIOS; do
  conc="${s%%:*}"
  pool="${s##*:}"
  for r in $(seq 1 "$ROUNDS"); do
    # Base first in odd rounds, head first in even ones: what one run leaves the next (the page
    # cache, the disk's writeback, the JIT's files) falls on both sides alike.
    order=(base head)
    if ((r % 2 == 0)); then
      order=(head base)
    fi
    for name in "${order[@]}"; do
      run_one "$name" "$conc" "$pool" "$r" | tee -a "$results"
    done
  done
done

python3 - "$results" "$base" "$head" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
keys = sorted({(r["clients"], r["pool"]) for r in rows}, key=lambda k: (k[1], k[0]))
cols = ["units_per_s", "p50_ms", "p99_ms", "daemon_cores", "verifier_share", "written_per_run_b", "stored_per_run_b"]
print()
print(f"base = {sys.argv[2]}, head = {sys.argv[3]}; medians over rounds")
print(f"{'scenario':<12}" + "".join(f" {c:>28}" for c in cols))
for k in keys:
    line = f"{str(k[0]) + ' ' + k[1]:<12}"
    for c in cols:
        b = statistics.median(r[c] for r in rows if (r["clients"], r["pool"]) == k and r["jar"] == "base")
        h = statistics.median(r[c] for r in rows if (r["clients"], r["pool"]) == k and r["jar"] == "head")
        ratio = f"x{h / b:.2f}" if b else "-"
        line += f" {f'{b:g} -> {h:g} {ratio}':>28}"
    print(line)
EOF
