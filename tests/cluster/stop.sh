#!/usr/bin/env bash
# Stop the control plane started by start.sh (SIGTERM, wait, then SIGKILL).
#
#   tests/cluster/stop.sh           # stop; keep the state dir (PKI, etcd data, logs) for reuse
#   tests/cluster/stop.sh --purge   # stop and delete the state dir
#
# Idempotent; leaves none of the cluster's processes running.
set -euo pipefail
# shellcheck source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

purge=false
for a in "$@"; do
  case "$a" in
    --purge) purge=true ;;
    -h | --help) sed -n '2,7s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) die "unknown argument: $a" ;;
  esac
done

STOP_TIMEOUT="${PLAYPEN_STOP_TIMEOUT:-20}"

alive() { kill -0 "$1" 2>/dev/null && [[ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != Z ]]; }

# Reverse start order: controller-manager, apiserver, then etcd.
for ((i = ${#COMPONENTS[@]} - 1; i >= 0; i--)); do
  name="${COMPONENTS[i]}"
  pids=()
  if pid="$(pid_of "$name")"; then pids+=("$pid"); fi
  for p in $(stray_pids "$name"); do
    [[ " ${pids[*]} " == *" $p "* ]] || pids+=("$p")
  done
  if ((${#pids[@]})); then
    log "stopping ${name} (pid ${pids[*]})"
    kill -TERM "${pids[@]}" 2>/dev/null || true
    t0=$SECONDS
    for p in "${pids[@]}"; do
      while alive "$p"; do
        if ((SECONDS - t0 >= STOP_TIMEOUT)); then
          log "${name} (pid ${p}) still running after ${STOP_TIMEOUT} s; SIGKILL"
          kill -KILL "$p" 2>/dev/null || true
          sleep 0.2
          continue
        fi
        sleep 0.2
      done
    done
  fi
  rm -f "${RUN}/${name}.pid"
done

if $purge; then
  log "removing ${STATE}"
  rm -rf "$STATE" "${STATE}.lock" "${STATE}.start.lock"
fi
log "stopped"
