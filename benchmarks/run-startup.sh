#!/usr/bin/env bash
# Start-up with a big run store (issue 22, Performance: "start-up with 10^6 stored runs <= 1 s to
# SERVING"). Fills DIR/state with N runs the way the daemon writes them (StartupTest's filler: real
# records signed by the node key, stored through RunStore 1000 per transaction, all but the last
# UNSEALED under a sealed checkpoint, as the daemon's background verifier leaves a store), or reuses
# the store already filled there. Then, STARTS times: appends UNSEALED more runs (so that every start
# finds that many after the checkpoint, as after a stop just before the next seal), starts `sandboxd serve` with
# NOTIFY_SOCKET set and takes the ms from spawn to READY=1 (what systemd waits for: the store
# checked, the socket serving), and stops it with SIGTERM. Prints each start, the store's share of
# it (the daemon's own log line), the CPU the daemon used until READY=1, and the medians.
#
#   benchmarks/run-startup.sh [N] [DIR]        # default 1000000 runs in /tmp/sandboxd-startup-N
#   STARTS=5 UNSEALED=1000 benchmarks/run-startup.sh 100000
#   SANDBOXD_JAR=copy.jar benchmarks/run-startup.sh   # another daemon jar on the same store
#   SANDBOXD_JAR=old.jar FILL_JAR=daemon/target/sandboxd.jar benchmarks/run-startup.sh   # filled by this tree
#   JAVA_OPTS='-XX:StartFlightRecording=filename=/tmp/s.jfr' benchmarks/run-startup.sh
#   CONFIG=sandboxd.json benchmarks/run-startup.sh   # the daemon's configuration
#
# With the class-data archive the installed service uses (README, "Start-up cache"): train it on
# the same jar path, then pass it (alternate the two in one session: the machine's load moves):
#   SANDBOXD_LIB=$PWD/daemon/target SANDBOXD_CACHE=/tmp/cds systemd/src/main/dist/bin/build-start-cache
#   JAVA_OPTS='-XX:SharedArchiveFile=/tmp/cds/sandboxd.jsa' benchmarks/run-startup.sh 0
# The start-up check of the UNSEALED runs runs on min(cores, runs) threads; one thread to compare:
#   JAVA_OPTS=-XX:ActiveProcessorCount=1 (which also shrinks the JVM's own GC and JIT threads).
#
# The default configuration sets store.max_bytes to 2^50: the filled runs carry nothing retention
# could prune (a 6-byte log each), so under the 1 GiB default a first start would set about pruning
# every run of a store that size, which a store grown under that bound has long done.
# Filling 10^6 runs takes minutes (three signatures per run, then one full verification to seal);
# the store takes about 4 GB. Build first (the daemon jar and the filler in the test classes):
#   mvn -B -q -pl integration-tests -am verify -Dtest=StartupTest -Dsurefire.failIfNoSpecifiedTests=false
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
runs="${1:-1000000}"
dir="${2:-/tmp/sandboxd-startup-$runs}"
starts="${STARTS:-3}"
unsealed="${UNSEALED:-1000}"
jar="${SANDBOXD_JAR:-$repo/daemon/target/sandboxd.jar}"
classes="${TEST_CLASSES:-$repo/integration-tests/target/test-classes}"
[[ -f "$jar" ]] || { echo "no $jar: build first (see the header of $0)" >&2; exit 1; }
[[ -f "$classes/io/sandboxd/it/StartupTest.class" ]] ||
  { echo "no $classes: build first (see the header of $0)" >&2; exit 1; }
m2="${MAVEN_REPO:-$HOME/.m2/repository}"
# The filler's test classes name JUnit's assertions; the newest versions Maven fetched will do.
newest() { find "$1" -name "$2" -type f | sort -V | tail -1; }
junit="$(newest "$m2/org/junit/jupiter/junit-jupiter-api" 'junit-jupiter-api-*.jar')"
ot4j="$(newest "$m2/org/opentest4j/opentest4j" 'opentest4j-*.jar')"
# FILL_JAR: the jar the filler runs against (default the daemon's): the test classes are built
# against the working tree's API, so an older daemon jar is measured on a store filled by a newer.
fill_cp="$classes:${FILL_JAR:-$jar}:$junit:$ot4j"

mkdir -p "$dir"
state="$dir/state"
config="${CONFIG:-$dir/sandboxd.json}"
[[ -n "${CONFIG:-}" ]] || echo '{"store":{"max_bytes":1125899906842624}}' >"$config"
echo "store $state: $runs runs wanted, $unsealed after the checkpoint at each start; $(nproc) cores," \
  "load $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$jar" "$fill_cp" "$repo" "$state" "$runs" "$unsealed" "$starts" "$config" <<'PY'
import os, re, signal, socket, statistics, subprocess, sys, tempfile, time
jar, fill_cp, repo, state, runs, unsealed, starts, config = sys.argv[1:9]
java_opts = os.environ.get("JAVA_OPTS", "").split()

def fill():
    t = time.monotonic()
    out = subprocess.run(
        ["java", f"-Dsandboxd.root={repo}", "-cp", fill_cp, "io.sandboxd.it.StartupTest",
         "fill", state, runs, unsealed], check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        if line.startswith("filled"):
            print("  " + line, flush=True)
    held = int(re.search(r"^runs (\d+)$", out, re.M).group(1))
    return held, time.monotonic() - t

held, secs = fill()
print(f"store ready: {held} runs ({secs:.1f} s, the last {unsealed} appended now)", flush=True)
times, cpus = [], []
tmp = tempfile.mkdtemp(prefix="sandboxd-startup-")
for i in range(int(starts)):
    if i > 0:
        held, _ = fill()
    notify = os.path.join(tmp, "notify.sock")
    if os.path.exists(notify):
        os.unlink(notify)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(notify)
    s.settimeout(600)
    log = open(os.path.join(tmp, f"daemon-{i}.log"), "w+")
    env = dict(os.environ, NOTIFY_SOCKET=notify)
    t0 = time.monotonic()
    p = subprocess.Popen(
        ["java", *java_opts, "-cp", jar, "io.sandboxd.daemon.SandboxdMain", "serve",
         "--state", state, "--socket", os.path.join(tmp, "sandboxd.sock"), "--config", config],
        stdout=log, stderr=subprocess.STDOUT, env=env)
    ready = None
    try:
        while ready is None:
            msg = s.recv(4096).decode()
            if "READY=1" in msg.split("\n"):
                ready = (time.monotonic() - t0) * 1000
                # CPU the daemon used until then, all threads (JIT included): on a busy machine a
                # steadier figure than the wall time.
                stat = open(f"/proc/{p.pid}/stat").read().rsplit(")", 1)[1].split()
                cpu = (int(stat[11]) + int(stat[12])) * 1000 / os.sysconf("SC_CLK_TCK")
    except socket.timeout:
        pass
    p.send_signal(signal.SIGTERM)
    p.wait(timeout=120)
    s.close()
    log.seek(0)
    text = log.read()
    if ready is None:
        sys.exit(f"start {i + 1}: no READY=1; the daemon said:\n{text}")
    m = re.search(r"the signed head and the (\d+) run\(s\) after the sealed checkpoint at (\d+)"
                  r" verify.*?\((\d+) ms\)", text)
    store = f"{m.group(1)} run(s) after the checkpoint at {m.group(2)} verified in {m.group(3)} ms" \
        if m else "no store verification line"
    times.append(ready)
    cpus.append(cpu)
    print(f"start {i + 1}: {held} runs, {ready:.0f} ms to READY=1, {cpu:.0f} ms CPU ({store})",
          flush=True)
print(f"median {statistics.median(times):.0f} ms to READY=1 over {len(times)} starts"
      f" ({', '.join(f'{t:.0f}' for t in times)}), median {statistics.median(cpus):.0f} ms CPU;"
      f" load now {open('/proc/loadavg').read().split()[0]}")
PY
