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
  serve_command "$log" java "$@"
}

# serve_command LOG COMMAND...
# As serve_daemon, for any command that execs the daemon (a launcher: its PID stays the JVM's).
serve_command() {
  local log="$1"
  shift
  "$@" >"$log" 2>&1 &
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

# alternate ROUNDS BASE_JAR HEAD_JAR FN
# Calls `FN ROUND SIDE JAR` ROUNDS times for the base jar and then the head's: the same-session
# alternation a compare script makes.
alternate() {
  local r
  for r in $(seq 1 "$1"); do
    "$4" "$r" base "$2"
    "$4" "$r" head "$3"
  done
}

# Stops the daemon serve_daemon started (SIGTERM) and waits for it to end.
stop_daemon() {
  kill "$daemon_pid"
  wait "$daemon_pid" 2>/dev/null || true
  daemon_pid=
}

# For a script that runs one daemon at a time, each on a scratch folder: on exit, kills the daemon
# still running ($daemon_pid) and removes the folder ($work), either of them unset or empty if none.
scratch_on_exit() {
  trap scratch_cleanup EXIT
}

scratch_cleanup() {
  if [[ -n "${daemon_pid:-}" ]]; then kill "$daemon_pid" 2>/dev/null || true; fi
  if [[ -n "${work:-}" ]]; then rm -rf "$work"; fi
}

# pool_config ADDRESS
# A daemon configuration with a pool of the module at ADDRESS (min_idle 4, max_idle 32) and
# adaptive pools off. The module must be in the daemon's store before it starts under it.
pool_config() {
  printf '{"pools":[{"module":"%s","min_idle":4,"max_idle":32,"ttl_ms":300000}],%s}\n' \
    "$1" '"pool_limits":{"adaptive":{"submits":0}}'
}

# jar_for WHAT NAME
# Puts $work/NAME.jar: the jar path WHAT, or the daemon jar of commit WHAT built in a throwaway
# worktree under $work (mvn package, tests skipped). Needs $root and $work; calls die on failure.
# shellcheck disable=SC2154 # root and work are the sourcing script's
jar_for() {
  local what="$1" name="$2"
  if [[ -f "$what" ]]; then
    cp "$what" "$work/$name.jar"
    return
  fi
  local sha
  sha="$(git -C "$root" rev-parse --verify "$what^{commit}")" || die "no such commit: $what"
  echo "building $name ($sha)..." >&2
  git -C "$root" worktree add -q --detach "$work/src-$name" "$sha"
  (cd "$work/src-$name" && mvn -B -q -pl daemon -am package -DskipTests -Dspotless.check.skip=true \
    >"$work/build-$name.log" 2>&1) || { tail -30 "$work/build-$name.log" >&2; die "build of $what failed"; }
  cp "$work/src-$name/daemon/target/sandboxd.jar" "$work/$name.jar"
  git -C "$root" worktree remove --force "$work/src-$name"
}

# compare_setup NAME BASE HEAD
# For a script that compares two daemons: makes $work (removed on exit, after any daemon still
# running is killed: $daemon_pid, or a pid in $work/*.pid), defines die (its messages named NAME),
# and puts $work/base.jar and $work/head.jar (jar_for BASE and HEAD).
compare_setup() {
  compare_name="$1"
  work="$(mktemp -d)"
  trap compare_cleanup EXIT
  jar_for "$2" base
  jar_for "$3" head
}

compare_cleanup() {
  if [[ -n "${daemon_pid:-}" ]]; then kill "$daemon_pid" 2>/dev/null || true; fi
  for p in "$work"/*.pid; do
    if [[ -f "$p" ]]; then kill "$(cat "$p")" 2>/dev/null || true; fi
  done
  git -C "$root" worktree prune >/dev/null 2>&1 || true
  rm -rf "$work"
}

die() { echo "${compare_name:-$(basename "$0")}: $*" >&2; exit 1; }
