#!/usr/bin/env bash
# Chicory vs V8 on the three C kernels (issue 4): runs SupervisionBench (executor and bare Chicory,
# which also builds target/kernels/*.wasm with clang-16), then times the very same .wasm files in
# Node's V8 and prints Chicory(bare)/V8 per kernel and the geometric mean.
#
#   benchmarks/run-v8-compare.sh                 # JMH run + node, from the repository root or here
#   CHICORY_JSON=path.json benchmarks/run-v8-compare.sh   # reuse an earlier SupervisionBench result
#   JMH_OPTS="-f 1 -wi 2 -i 3" benchmarks/run-v8-compare.sh
#
# Build first: mvn -B -q -pl benchmarks -am package -DskipTests -Dspotless.check.skip=true
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
jar="$here/target/benchmarks.jar"
[[ -f "$jar" ]] || { echo "no $jar: build the benchmarks module first" >&2; exit 1; }
command -v node >/dev/null || { echo "node is not on PATH" >&2; exit 1; }

json="${CHICORY_JSON:-}"
if [[ -z "$json" ]]; then
  json="$here/target/jmh-supervision.json"
  # shellcheck disable=SC2086
  java -jar "$jar" SupervisionBench ${JMH_OPTS:--f 1 -wi 2 -i 3} -rf json -rff "$json"
fi
# The kernels SupervisionBench ran (built on its first run; this builds them if it was skipped).
mapfile -t wasm < <(java -cp "$jar" io.sandboxd.benchmarks.Kernels)
echo
echo "V8 (node $(node --version)): fresh instance per run, ${V8_WARMUP:-3} warm-up runs, median of ${V8_RUNS:-7}"
node "$here/src/main/js/run-kernel.mjs" --warmup "${V8_WARMUP:-3}" --runs "${V8_RUNS:-7}" \
  --chicory "$json" "${wasm[@]}"
