#!/usr/bin/env bash
# Prepares what the image builder's real-part tests need, idempotently:
#   1. Docker Engine (Debian's docker.io), installed only when dockerd is missing
#      (apt-get update once, only then);
#   2. dockerd running in the background (log: ${PLAYPEN_DOCKERD_LOG:-/var/log/playpen-dockerd.log}),
#      waited for until /var/run/docker.sock answers;
#   3. the base image playpen/base:bookworm, made with debootstrap (minbase) and
#      `docker import`, only when `docker image inspect` says it is missing (no
#      registry can be pulled from on this machine);
#   4. containerd and ctr (Debian's containerd), only when missing: the OCI layout
#      test runs a throwaway containerd of its own to write a `docker save` archive
#      in the layout Docker Engine writes from 25 on (`ctr images export`).
# The last line on stdout is the base image reference; logs go to stderr.
set -euo pipefail
exec 3>&1 1>&2
log() { printf '[%s imagebuild/setup.sh] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

BASE_IMAGE="${PLAYPEN_BASE_IMAGE:-playpen/base:bookworm}"
SOCK=/var/run/docker.sock
DOCKERD_LOG="${PLAYPEN_DOCKERD_LOG:-/var/log/playpen-dockerd.log}"
MIRROR="${PLAYPEN_DEBIAN_MIRROR:-http://deb.debian.org/debian}"

apt_updated=0
apt_install() {
  if [[ $apt_updated == 0 ]]; then
    log "apt-get update"
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 update -qq
    apt_updated=1
  fi
  log "apt-get install $*"
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "$@" >/dev/null
}

if ! command -v dockerd >/dev/null; then
  apt_install docker.io
fi
if ! command -v debootstrap >/dev/null; then
  apt_install debootstrap
fi
# docker.io depends on containerd, and tests/cluster/start-node.sh installs it for
# the node; checked here too so the image builder's tests need neither.
if ! command -v containerd >/dev/null || ! command -v ctr >/dev/null; then
  apt_install containerd
fi

engine_up() { docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }
if ! engine_up; then
  if [[ -S $SOCK ]] && pgrep -x dockerd >/dev/null; then
    log "dockerd is starting; waiting"
  else
    log "starting dockerd (log: $DOCKERD_LOG)"
    nohup dockerd >>"$DOCKERD_LOG" 2>&1 </dev/null &
    disown || true
  fi
  for _ in $(seq 1 60); do
    engine_up && break
    sleep 1
  done
  engine_up || { log "ERROR: dockerd did not answer on $SOCK within 60 s; see $DOCKERD_LOG"; exit 1; }
fi
log "Docker Engine $(docker version --format '{{.Server.Version}} (API {{.Server.APIVersion}})')"
# dockerd turns IP forwarding on when it starts, but something may have turned
# it off since (an older cluster stop script restored a saved 0): without it,
# builds hang on apt's retries instead of reaching the mirror.
if [[ "$(sysctl -n net.ipv4.ip_forward 2>/dev/null)" != 1 ]]; then
  log "net.ipv4.ip_forward is off; Docker Engine's bridge needs it: sysctl -w net.ipv4.ip_forward=1"
  sysctl -qw net.ipv4.ip_forward=1
fi

if ! docker image inspect "$BASE_IMAGE" >/dev/null 2>&1; then
  root="$(mktemp -d /var/tmp/playpen-debootstrap.XXXXXX)"
  trap 'rm -rf "$root"' EXIT
  log "debootstrap --variant=minbase bookworm (about 30 s)"
  debootstrap --variant=minbase bookworm "$root" "$MIRROR" >"$root.log" 2>&1 ||
    { log "ERROR: debootstrap failed; see $root.log"; exit 1; }
  rm -f "$root.log"
  tar -C "$root" --numeric-owner -c . | docker import - "$BASE_IMAGE" >/dev/null
  log "imported $BASE_IMAGE"
fi
echo "$BASE_IMAGE" >&3
