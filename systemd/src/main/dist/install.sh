#!/usr/bin/env bash
# Installs sandboxd: the jar and launchers under /usr/lib/sandboxd, the systemd unit, and the
# sysusers.d and tmpfiles.d entries; on a live install also the start-up cache (build-start-cache:
# the class-data archive in /var/cache/sandboxd). With DESTDIR=DIR it only stages that tree under
# DIR (for a package build, whose postinst runs /usr/lib/sandboxd/bin/build-start-cache on the
# target's JVM) and touches nothing on the running system.
#
# Usage: [DESTDIR=DIR] install.sh [JAR]   (JAR defaults to $SANDBOXD_JAR, else the repository's
#                                          daemon/target/sandboxd.jar)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
jar="${1:-${SANDBOXD_JAR:-$here/../../../../daemon/target/sandboxd.jar}}"
dest="${DESTDIR:-}"

if [[ ! -f "$jar" ]]; then
  echo "install.sh: $jar: no such file; build it first (mvn -B -pl daemon -am package -DskipTests)" >&2
  exit 2
fi

# The unit names /usr/lib/sandboxd/bin/sandboxd; these paths are fixed, not a prefix choice.
lib="$dest/usr/lib"
install -d -m 0755 "$lib/sandboxd/bin" "$lib/systemd/system" "$lib/sysusers.d" "$lib/tmpfiles.d" \
  "$lib/udev/rules.d" "$dest/usr/bin"
install -m 0644 "$jar" "$lib/sandboxd/sandboxd.jar"
install -m 0755 "$here/bin/sandboxd" "$here/bin/sandboxctl" "$here/bin/build-start-cache" \
  "$lib/sandboxd/bin/"
install -m 0644 "$here/sandboxd.service" "$lib/systemd/system/sandboxd.service"
install -m 0644 "$here/sysusers.d/sandboxd.conf" "$lib/sysusers.d/sandboxd.conf"
install -m 0644 "$here/tmpfiles.d/sandboxd.conf" "$lib/tmpfiles.d/sandboxd.conf"
install -m 0644 "$here/udev/60-sandboxd-meters.rules" "$lib/udev/rules.d/60-sandboxd-meters.rules"
ln -sfn ../lib/sandboxd/bin/sandboxctl "$dest/usr/bin/sandboxctl"

if [[ -z "$dest" ]]; then
  # A live install: create the user and directories now; tell a running systemd about the unit.
  systemd-sysusers /usr/lib/sysusers.d/sandboxd.conf
  systemd-tmpfiles --create /usr/lib/tmpfiles.d/sandboxd.conf
  if command -v udevadm >/dev/null && [[ -d /run/udev ]]; then
    # Meter device nodes that exist already get the rule's group now.
    udevadm control --reload || true
    udevadm trigger --subsystem-match=msr --subsystem-match=powercap || true
  fi
  # A few seconds of a dry start on this JVM; without the cache the daemon starts all the same.
  /usr/lib/sandboxd/bin/build-start-cache ||
    echo "install.sh: no start-up cache (see above); sandboxd starts without it, slower" >&2
  if [[ -d /run/systemd/system ]]; then
    systemctl daemon-reload
  fi
  echo "sandboxd installed; start it with: systemctl enable --now sandboxd"
fi
