#!/bin/sh
# Issue 26: `sandboxctl report` render time and page size at 10^3, 10^4, 10^5 runs (or the sizes
# given), from seeded signed records (ReportBench). Compiles the one class against the packaged
# daemon, so it needs daemon/target/sandboxd.jar (mvn -pl daemon -am package -DskipTests).
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
JAR="$ROOT/daemon/target/sandboxd.jar"
[ -f "$JAR" ] || { echo "run-report-bench: $JAR missing: mvn -pl daemon -am package -DskipTests" >&2; exit 2; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
javac -d "$WORK" -cp "$JAR" "$ROOT/benchmarks/src/main/java/io/sandboxd/benchmarks/ReportBench.java"
if [ "$#" -eq 0 ]; then set -- 1000 10000 100000; fi
java -Xmx"${REPORT_BENCH_HEAP:-3g}" -cp "$WORK:$JAR" io.sandboxd.benchmarks.ReportBench "$@"
