#!/usr/bin/env bash
# Issue 22: where the daemon's CPU goes under `sandboxctl bench` load, by what it is doing.
#
#   benchmarks/run-profile-shares.sh [JAR] [CLIENTS]
#
# Starts a fresh daemon from JAR (default: daemon/target/sandboxd.jar) with frame pointers kept,
# serves `sandboxctl bench` of examples/hello.wasm by address with CLIENTS clients (default 1),
# warms up for WARMUP seconds (default 45: on 2 cores the JIT compiles for 40 s of load), then
# samples every daemon thread with `perf record -g` for SAMPLE_SECONDS (default 8; not SECONDS,
# which is bash's own clock: read as a setting it gave 0, so no sample) and prints the shares:
# guest execution, gRPC/Netty, signing, the store, the JIT, and the rest. Needs perf (Debian:
# linux-perf) and permission to use it (root, or kernel.perf_event_paranoid <= 1). Run it on a
# quiet machine. MODE=pool configures a pool of hello (min_idle 4, max_idle 32) instead of none;
# KEEP=DIR keeps the perf samples (DIR/stacks.txt) for a closer look; STACKS=DIR/stacks.txt prints
# the shares of samples kept so, without a run.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=SCRIPTDIR/bench-daemon.sh
source "$root/benchmarks/bench-daemon.sh"
jar="${1:-$root/daemon/target/sandboxd.jar}"
clients="${2:-1}"
WARMUP="${WARMUP:-45}"
SECONDS_SAMPLED="${SAMPLE_SECONDS:-8}"
# Prints the shares of the perf samples in FILE (perf script -F comm,tid,ip,sym,dso).
shares() {
  python3 - "$1" <<'PY'
import collections, re, sys
samples, cur = [], None
for line in open(sys.argv[1]):
    if not line.strip():
        if cur:
            samples.append(cur)
        cur = None
    elif not line.startswith((" ", "\t")):
        cur = [line.split()[0], []]
    elif cur:
        cur[1].append(line.strip())
if cur:
    samples.append(cur)

# First match wins: a thread's name first, then what its stack is doing.
BY_THREAD = [
    (("GC", "G1"), "GC"),
    ("sandboxd-store", "store: background verifier"),
    ("warmpool", "warm pool refill"),
    ("unit-", "guest execution (unit threads)"),
    ("multiThreadIo", "gRPC/Netty: event loop"),
]
BY_STACK = [
    # A handler runs its call's unit in place (a unit thread of its own): the guest's frames.
    (r"Executor\$GuestTask\.call", "guest execution (unit threads)"),
    (r"Envelope\.sign|SigningKey\.sign", "signing"),
    (r"Envelope\.verify|PublicKey\.verify", "verifying signatures"),
    (r"sqlite|GroupCommit|RunStore|store\.RunTable|NodeLog|StoreLedger",
     "store: commit (SQLite, WAL, fsync)"),
    (r"Executor\.execute\(|chicory", "executor on the call thread (bind, meter, storage root)"),
    (r"CanonicalJson|jackson", "canonical JSON, record building"),
    (r"Admission|UnitCompiler", "admission"),
]

def kind(comm, stack):
    s = " | ".join(stack)
    if comm.startswith(("C1", "C2")) or "CompileBroker" in s:
        return "JIT compiler"
    for prefix, name in BY_THREAD:
        if comm.startswith(prefix):
            return name
    for pattern, name in BY_STACK:
        if re.search(pattern, s):
            return name
    if comm.startswith("sandboxd-call"):
        # Every handler stack has gRPC at its root: it is gRPC's own work only when no daemon
        # frame (past the transport glue) stands between gRPC and the leaf.
        ours = [f for f in stack if "io.sandboxd" in f and not re.search(glue, f)]
        if ours:
            return "handler: other daemon code (records, metrics, logging)"
        if re.search(r"io\.grpc|protobuf|io\.netty", s):
            return "gRPC/Netty: handler side (marshalling, framing)"
        return native(stack)
    return "other threads"

# A handler sample whose stack stops in native code (zlib, SQLite and libc keep no frame pointers,
# so perf cannot walk back to the Java caller): named by the library, or the system call, it is in.
NATIVE = [
    (r"libz\.so", "store: record encoding (zlib deflate)"),
    (r"libsodium\.so", "signing"),
    (r"sqlite", "store: SQLite (native)"),
]
SYSCALLS = [
    (r"__x64_sys_(fsync|fdatasync)\b", "store: fsync (kernel)"),
    (r"__x64_sys_(pwrite64|pread64|fcntl|ftruncate|write|read|openat|close)\b",
     "store: file writes, reads and locks (kernel)"),
    (r"__x64_sys_futex\b", "handler: thread hand-offs (futex)"),
    (r"__x64_sys_(statx|newfstatat|readlink)\b", "handler: file metadata (stat, readlink)"),
]

def native(stack):
    leaf = stack[0] if stack else ""
    for pattern, name in NATIVE:
        if re.search(pattern, leaf):
            return name
    s = " | ".join(stack)
    for pattern, name in SYSCALLS:
        if re.search(pattern, s):
            return name
    return "handler: other native or unknown frames"

glue = r"FairCalls|RequestDecoder|RpcAuthorization|SandboxdGrpc|Answer\.reply"

counts = collections.Counter(kind(c, st) for c, st in samples)
total = max(1, len(samples))
for k, n in counts.most_common():
    print(f"{100 * n / total:5.1f}%  {k}")
print(f"({len(samples)} samples)")
PY
}
if [[ -n "${STACKS:-}" ]]; then
  shares "$STACKS"
  exit 0
fi
command -v perf >/dev/null || { echo "run-profile-shares: perf is not installed" >&2; exit 1; }
work="$(mktemp -d)"
daemon_pid=
cleanup() {
  if [[ -n "$daemon_pid" ]]; then kill "$daemon_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/run"
address="$(java -cp "$jar" io.sandboxd.daemon.cli.Sandboxctl address --raw "$root/examples/hello.wasm")"
ctl=(java -XX:TieredStopAtLevel=1 -cp "$jar" io.sandboxd.daemon.cli.Sandboxctl)
# Starts a daemon (JVM options: the arguments) on $work's state and config; sets daemon_pid and
# waits (up to a minute) for it to serve.
serve() {
  serve_daemon "$work/log" "$@" -cp "$jar" io.sandboxd.daemon.SandboxdMain serve --dev \
    --state "$work/state" --socket "$work/run/s.sock" --config "$work/cfg.json"
}
if [[ "${MODE:-nopool}" == pool ]]; then
  # A pool names a module the store holds: a first daemon puts it there.
  echo '{}' >"$work/cfg.json"
  serve
  "${ctl[@]}" modules put "$root/examples/hello.wasm" --socket "$work/run/s.sock" >/dev/null
  stop_daemon
  pool_config "$address" >"$work/cfg.json"
else
  echo '{"pool_limits":{"adaptive":{"submits":0}}}' >"$work/cfg.json"
fi
serve -XX:+PreserveFramePointer
"${ctl[@]}" modules put "$root/examples/hello.wasm" --socket "$work/run/s.sock" >/dev/null
"${ctl[@]}" bench "b3:$address" --grants "$root/examples/hello.grants.json" --concurrency "$clients" \
  --duration $((WARMUP + SECONDS_SAMPLED + 2)) --warmup 0 --socket "$work/run/s.sock" --json \
  >"$work/bench.json" &
bench=$!
sleep "$WARMUP"
perf record -q -g -F 499 -p "$daemon_pid" -o "$work/perf.data" -- sleep "$SECONDS_SAMPLED" \
  >"$work/perf.log" 2>&1 || { cat "$work/perf.log" >&2; exit 1; }
# Names for the JIT's code, written where perf looks for them (/tmp/perf-PID.map).
jcmd "$daemon_pid" Compiler.perfmap >/dev/null
wait "$bench"
perf script -i "$work/perf.data" -F comm,tid,ip,sym,dso 2>/dev/null >"$work/stacks.txt"
rm -f "/tmp/perf-$daemon_pid.map"
if [[ -n "${KEEP:-}" ]]; then mkdir -p "$KEEP" && cp "$work/stacks.txt" "$KEEP/"; fi
echo "bench during the window: $(cat "$work/bench.json")"
[[ -s "$work/stacks.txt" ]] || { echo "run-profile-shares: perf took no sample of the daemon" >&2; exit 1; }
shares "$work/stacks.txt"
