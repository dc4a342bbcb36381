#!/usr/bin/env bash
# The SQLite shell (bin/sqlite-wasm) through the running daemon vs Node's node:wasi on the same
# .wasm (issue 16, Performance). Starts a daemon on a temporary state directory, submits the module
# once (compiling it), then alternates N runs of each:
#   daemon: `sandboxctl run SQLITE.wasm --grants G --json [-- :memory: 'select 6*7']`: the CLI
#           process's wall time, and the run's wall_ms and cpu_time_ms from its signed receipt;
#   node:   `node src/main/js/run-wasi.mjs SQLITE.wasm [:memory: 'select 6*7']`: the process's wall
#           time and the in-process compile + instantiate + run time it prints.
# Prints medians and the daemon/node ratios. Without argument support in `sandboxctl run` (issue 16
# item 1) both sides run the shell with no arguments (it reads its empty stdin and exits).
#
#   benchmarks/run-sqlite-compare.sh [RUNS]        # from the repository root or here
#   SANDBOXD_JAR=copy.jar benchmarks/run-sqlite-compare.sh   # a copy, while a build rewrites target/
#
# Build first: mvn -B -q -pl daemon -am package -DskipTests -Dspotless.check.skip=true
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
# shellcheck source=SCRIPTDIR/bench-daemon.sh
source "$here/bench-daemon.sh"
runs="${1:-10}"
jar="${SANDBOXD_JAR:-$repo/daemon/target/sandboxd.jar}"
[[ -f "$jar" ]] || { echo "no $jar: build the daemon module first" >&2; exit 1; }
command -v node >/dev/null || { echo "node is not on PATH" >&2; exit 1; }
wasm="$("$repo/bin/sqlite-wasm")"

tmp="$(mktemp -d)"
daemon_pid=
cleanup() {
  [[ -n "$daemon_pid" ]] && kill "$daemon_pid" 2>/dev/null && wait "$daemon_pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
sock="$tmp/run/sandboxd.sock"
serve_daemon "$tmp/daemon.log" -cp "$jar" io.sandboxd.daemon.SandboxdMain serve \
  --state "$tmp/state" --socket "$sock"
cat >"$tmp/grants.json" <<'JSON'
{"compute":{"devices":[],"energy_budget_uj":1000000000000,"cpu_time_ms":60000,"memory_bytes":268435456},
 "storage":{"read":[],"write":[],"delete":[]},"network":{"outbound":[],"inbound":false},
 "kv":{"read":false,"write":false,"prefixes":[]},
 "host":{"logging":true,"clock":false,"random":false,"inference":false}}
JSON
ctl=(java -cp "$jar" io.sandboxd.daemon.cli.Sandboxctl)
args=()
if "${ctl[@]}" run --help 2>&1 | grep -q -- '--stdin'; then
  args=(-- :memory: 'select 6*7')
fi
what="${args[*]:-(no arguments: a near-empty run)}"
echo "SQLite shell $(wc -c <"$wasm") bytes; $runs runs each, alternating; query: $what"

now() { date +%s%N; }
"${ctl[@]}" run "$wasm" --grants "$tmp/grants.json" --socket "$sock" --entry _start --json \
  "${args[@]}" >"$tmp/first.json" || true # compiles it
: >"$tmp/daemon.tsv"
: >"$tmp/node.tsv"
for _ in $(seq "$runs"); do
  t0=$(now)
  "${ctl[@]}" run "$wasm" --grants "$tmp/grants.json" --socket "$sock" --entry _start --json \
    "${args[@]}" >"$tmp/out.json" || true
  t1=$(now)
  python3 - "$tmp/out.json" "$(( (t1 - t0) / 1000 ))" >>"$tmp/daemon.tsv" <<'PY'
import json, sys
o = json.load(open(sys.argv[1]))
r = o["receipt"]["core"]
print(int(sys.argv[2]) / 1000, r["wall_ms"], r["cpu_time_ms"], sep="\t")
PY
  t0=$(now)
  node --no-warnings "$here/src/main/js/run-wasi.mjs" "$wasm" "${args[@]:1}" \
    >"$tmp/node.out" 2>"$tmp/node.err" || true
  t1=$(now)
  printf '%s\t%s\n' "$(( (t1 - t0) / 1000 ))" \
    "$(sed -n 's/^node-wasi-ms //p' "$tmp/node.err")" | awk '{print $1/1000 "\t" $2}' >>"$tmp/node.tsv"
done
python3 - "$tmp/daemon.tsv" "$tmp/node.tsv" "$tmp/out.json" "$tmp/node.out" <<'PY'
import json, statistics as st, sys
d = [list(map(float, l.split())) for l in open(sys.argv[1])]
n = [list(map(float, l.split())) for l in open(sys.argv[2])]
med = lambda rows, k: st.median(r[k] for r in rows)
print("daemon stdout/log:", repr(json.load(open(sys.argv[3])).get("log", "")[:80]))
print("node stdout:      ", repr(open(sys.argv[4]).read()[:80]))
print(f"sandboxctl run, process wall:      {med(d,0):8.1f} ms")
print(f"  receipt wall_ms / cpu_time_ms:   {med(d,1):8.1f} / {med(d,2):.1f} ms")
print(f"node run-wasi.mjs, process wall:   {med(n,0):8.1f} ms")
print(f"  compile+instantiate+run:         {med(n,1):8.1f} ms")
print(f"ratio process wall (daemon CLI / node):            {med(d,0)/med(n,0):5.2f}x")
print(f"ratio run (receipt wall / node compile+inst+run):  {med(d,1)/med(n,1):5.2f}x")
PY
