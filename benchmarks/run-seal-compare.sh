#!/usr/bin/env bash
# Issue 22: what the background verifier's seal costs a run, two benchmark jars side by side in one
# session. Each round runs StoreSealBench (2,048 hello-sized runs stored, then one sealBeforeStop
# over them) from the base jar, then from the head jar, 25 single-shot iterations each with a GC
# before every one, and prints the median and the best. The seal ends with its own commit and
# fsync, whose tail on a virtual disk lands in the mean: the best is the steadiest figure of the
# check's CPU. A jar built from a commit before StoreSealBench needs its two files
# (StoreSealBench.java, SignedRun.java) copied into that tree first.
#
#   benchmarks/run-seal-compare.sh BASE_BENCHMARKS_JAR HEAD_BENCHMARKS_JAR [ROUNDS]
#   benchmarks/run-seal-compare.sh /tmp/base/benchmarks/target/benchmarks.jar \
#     benchmarks/target/benchmarks.jar 2
set -euo pipefail
(($# >= 2)) || { echo "usage: $0 BASE_JAR HEAD_JAR [ROUNDS]" >&2; exit 2; }
base="$(realpath "$1")"
head="$(realpath "$2")"
rounds="${3:-2}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
for r in $(seq 1 "$rounds"); do
  for side in base head; do
    jar="$base"
    [[ "$side" == head ]] && jar="$head"
    # The bench keeps its store under target/ beside the jar (a real disk, not a tmpfs).
    (cd "$(dirname "$jar")/.." && java -jar "$jar" StoreSealBench -f 1 -wi 5 -i 25 -gc true \
      -rf json -rff "$out/$side.json" >"$out/$side.log" 2>&1) \
      || { tail -20 "$out/$side.log" >&2; exit 1; }
    python3 - "$out/$side.json" "$side" "$r" <<'PY'
import json, statistics, sys
data = json.load(open(sys.argv[1]))[0]["primaryMetric"]["rawData"]
xs = sorted(x for fork in data for x in fork)
runs = 2048
print(f"round {sys.argv[3]} {sys.argv[2]}: median {statistics.median(xs):.1f} ms, best {xs[0]:.1f} ms"
      f" ({xs[0] * 1000 / runs:.0f} us a run), n={len(xs)}")
PY
  done
done
