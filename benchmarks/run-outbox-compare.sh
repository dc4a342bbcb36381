#!/usr/bin/env bash
# Issue 22: what the fleet shipper's polls cost a store append, two daemon jars side by side in one
# session. Fills one store of RUNS runs (default 100,000) with every record proven, then each round
# runs FleetOutboxPoll (this tree's benchmarks jar) against a fresh copy of it with the base jar's
# classes, then the head's, first on the class path; prints each run's line. STUCK=1: every record
# but the first proven (one the aggregator never proves).
#
#   benchmarks/run-outbox-compare.sh BASE_SANDBOXD_JAR HEAD_SANDBOXD_JAR [ROUNDS]
#   (mvn -B -q -pl benchmarks -am package -DskipTests first, for benchmarks/target/benchmarks.jar)
set -euo pipefail
(($# >= 2)) || { echo "usage: $0 BASE_JAR HEAD_JAR [ROUNDS]" >&2; exit 2; }
root="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=SCRIPTDIR/bench-daemon.sh
source "$root/benchmarks/bench-daemon.sh"
bench="$root/benchmarks/target/benchmarks.jar"
base="$(realpath "$1")"
head="$(realpath "$2")"
rounds="${3:-3}"
runs="${RUNS:-100000}"
appends="${APPENDS:-400}"
# Under target/ (a real disk, not a tmpfs): every append is fsynced.
work="$(mktemp -d "$root/benchmarks/target/outbox-XXXXXX")"
trap 'rm -rf "$work"' EXIT
java -cp "$base:$bench" io.sandboxd.benchmarks.FleetOutboxPoll make "$work/filled.db" "$runs" \
  ${STUCK:+stuck}
# poll_round ROUND SIDE JAR: FleetOutboxPoll with JAR's daemon classes, on a fresh copy.
poll_round() {
  rm -f "$work"/run.db*
  cp "$work/filled.db" "$work/run.db"
  printf 'round %s %s: ' "$1" "$2"
  java -cp "$3:$bench" io.sandboxd.benchmarks.FleetOutboxPoll run "$work/run.db" "$appends"
}
alternate "$rounds" "$base" "$head" poll_round
