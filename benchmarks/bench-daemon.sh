#!/usr/bin/env bash
# Sourced by the benchmark scripts: a sandboxd daemon started in the background and waited for,
# and the warm pool of a module that they compare against no pool.

# serve_daemon LOG JAVA_ARG...
# Runs `java JAVA_ARG...` (a `sandboxd serve` command line) in the background, its output to LOG;
# sets daemon_pid and returns once the daemon serves. It looks every 50 ms, so a start-up timed
# around it is late by at most that. Exits 1 with the log's tail if the daemon exits first or has
# not served within a minute.
serve_daemon() {
  local log="$1"
  shift
  java "$@" >"$log" 2>&1 &
  daemon_pid=$!
  local _
  for _ in $(seq 1200); do
    grep -q "sandboxd serving on" "$log" && return 0
    kill -0 "$daemon_pid" 2>/dev/null || break
    sleep 0.05
  done
  tail -20 "$log" >&2
  echo "$(basename "$0"): the daemon did not serve (log: $log)" >&2
  exit 1
}

# Stops the daemon serve_daemon started (SIGTERM) and waits for it to end.
stop_daemon() {
  kill "$daemon_pid"
  wait "$daemon_pid" 2>/dev/null || true
  daemon_pid=
}

# pool_config ADDRESS
# A daemon configuration with a pool of the module at ADDRESS (min_idle 4, max_idle 32) and
# adaptive pools off. The module must be in the daemon's store before it starts under it.
pool_config() {
  printf '{"pools":[{"module":"%s","min_idle":4,"max_idle":32,"ttl_ms":300000}],%s}\n' \
    "$1" '"pool_limits":{"adaptive":{"submits":0}}'
}
