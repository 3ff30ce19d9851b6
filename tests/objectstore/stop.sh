#!/usr/bin/env bash
# Stop the object store tests/objectstore/start.sh started (SIGTERM, SIGKILL after 20 s);
# idempotent. The state dir (data, keys, env file) is kept for the next start, which reuses
# the keys; --purge deletes it too.
#
#   tests/objectstore/stop.sh [--purge]
set -euo pipefail
# shellcheck source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

purge=0
case "${1:-}" in
  "") ;;
  --purge) purge=1 ;;
  -h | --help) sed -n '2,6s/^# \{0,1\}//p' "$0"; exit 0 ;;
  *) die "unknown argument '$1' (use --purge or nothing)" ;;
esac

if pid="$(objectstore_pid)"; then
  log "stopping SeaweedFS (pid ${pid})"
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 200); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    log "SeaweedFS (pid ${pid}) did not exit within 20 s; sending KILL"
    kill -KILL "$pid" 2>/dev/null || true
  fi
else
  log "SeaweedFS is not running (state: ${OBJECTSTORE_DIR})"
fi
rm -f "$OBJECTSTORE_PID"
if ((purge)); then
  log "deleting ${OBJECTSTORE_DIR}"
  rm -rf "$OBJECTSTORE_DIR"
fi
