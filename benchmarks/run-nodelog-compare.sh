#!/bin/sh
# Issue 14: `sandboxctl bench` units/s through a daemon with the node log on and off
# ("fleet": {"log": false}), alternating ROUNDS times in one run, fresh state each time.
# Needs daemon/target/sandboxd.jar (mvn -pl daemon -am package -DskipTests).
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
JAR="$ROOT/daemon/target/sandboxd.jar"
ROUNDS=${ROUNDS:-2}
DURATION=${DURATION:-10}
CONC=${CONC:-4}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
for r in $(seq 1 "$ROUNDS"); do
  for log in true false; do
    d="$WORK/$log-$r"
    mkdir -p "$d/state" "$d/run"
    printf '{"fleet":{"log":%s}}\n' "$log" >"$d/cfg.json"
    java -cp "$JAR" io.sandboxd.daemon.SandboxdMain serve --state "$d/state" \
      --socket "$d/run/s.sock" --config "$d/cfg.json" >"$d/log" 2>&1 &
    pid=$!
    i=0
    until grep -q "sandboxd serving on" "$d/log"; do
      i=$((i + 1)); [ "$i" -lt 600 ] || { cat "$d/log"; exit 1; }; sleep 0.1
    done
    out=$(java -cp "$JAR" io.sandboxd.daemon.cli.Sandboxctl bench "$ROOT/examples/hello.wasm" \
      --grants "$ROOT/examples/hello.grants.json" --concurrency "$CONC" \
      --duration "$DURATION" --warmup 3 --socket "$d/run/s.sock" --json)
    echo "round $r log=$log $out"
    kill "$pid"; wait "$pid" || true
  done
done
