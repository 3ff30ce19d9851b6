#!/usr/bin/env bash
# Start the S3-compatible object store the recording-export tests upload to, idempotently:
# SeaweedFS (`weed server`: master, volume, filer and S3 gateway in one process), built once
# per version by build.sh, listening on 127.0.0.1 only, every request signed (SigV4) with a
# key pair made once per state dir, and the test bucket created.
#
#   tests/objectstore/start.sh     # start, or find it running; last stdout line: the env file
#   tests/objectstore/stop.sh      # stop (state kept); --purge also deletes data and keys
#
# The env file (mode 0600) holds PLAYPEN_TEST_S3_ENDPOINT, _BUCKET, _REGION, _ACCESS_KEY_ID and
# _SECRET_ACCESS_KEY; tests read it through PLAYPEN_TEST_OBJECTSTORE=<its path>. Ports and the
# state dir: PLAYPEN_OBJECTSTORE_PORT (18333), PLAYPEN_OBJECTSTORE_DIR (/tmp/playpen-objectstore),
# see lib.sh. Logs go to stderr, weed's own to <state>/weed.log.
set -euo pipefail
exec 3>&1 1>&2
# shellcheck source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

case "${1:-}" in
  "") ;;
  -h | --help) sed -n '2,13s/^# \{0,1\}//p' "$0"; exit 0 ;;
  *) die "unknown argument '$1' (see --help)" ;;
esac
for port in "$OBJECTSTORE_S3_PORT" "$OBJECTSTORE_MASTER_PORT" "$OBJECTSTORE_VOLUME_PORT" "$OBJECTSTORE_FILER_PORT"; do
  if ! [[ "$port" =~ ^[0-9]+$ ]] || ((port == 0 || port >= 55536)); then
    die "port '${port}' is not a port number below 55536 (weed adds 10000 for gRPC)"
  fi
done
ensure_cmds curl:curl

bash "$(dirname "${BASH_SOURCE[0]}")/build.sh" >/dev/null
ENDPOINT="http://127.0.0.1:${OBJECTSTORE_S3_PORT}"
DATA="${OBJECTSTORE_DIR}/data"
IDENTITIES="${OBJECTSTORE_DIR}/identities.json"

# The answer to an unsigned request: 403 once the gateway is up with authentication on.
anonymous_status() { curl --noproxy '*' -s -o /dev/null -m 2 -w '%{http_code}' "${ENDPOINT}/" 2>/dev/null || true; }
key() { cat "${OBJECTSTORE_DIR}/$1"; }

# Signed requests as the test user work, an unsigned one and a wrong secret key are refused
# with the store's own answer: what the tests rely on, checked before they run. Why a check
# failed is kept in $why (said once, when start.sh gives up).
why=""
verify() {
  local code
  code="$(s3_request PUT "/${OBJECTSTORE_BUCKET}/.playpen-probe" "$(key user.key)" "$(key user.secret)" probe)"
  [[ "$code" == 200 ]] || { why="a signed PUT as ${OBJECTSTORE_USER} answered ${code}: $(cat "${OBJECTSTORE_DIR}/last-response.xml" 2>/dev/null)"; return 1; }
  code="$(s3_request GET "/${OBJECTSTORE_BUCKET}/.playpen-probe" "$(key user.key)" "$(key user.secret)")"
  [[ "$code" == 200 && "$(cat "${OBJECTSTORE_DIR}/last-response.xml")" == probe ]] || { why="a signed GET answered ${code}"; return 1; }
  code="$(s3_request DELETE "/${OBJECTSTORE_BUCKET}/.playpen-probe" "$(key user.key)" "$(key user.secret)")"
  [[ "$code" == 204 ]] || { why="a signed DELETE answered ${code}"; return 1; }
  code="$(s3_request GET "/${OBJECTSTORE_BUCKET}/.playpen-probe" "$(key user.key)" "wrong-$(key user.secret)")"
  if [[ "$code" != 403 ]] || ! grep -q SignatureDoesNotMatch "${OBJECTSTORE_DIR}/last-response.xml"; then
    why="a wrong secret key was not refused with SignatureDoesNotMatch (HTTP ${code})"
    return 1
  fi
  code="$(curl --noproxy '*' -s -o /dev/null -m 5 -w '%{http_code}' "${ENDPOINT}/${OBJECTSTORE_BUCKET}/" || true)"
  [[ "$code" == 403 ]] || { why="an unsigned listing answered ${code}, not 403"; return 1; }
}

write_env() {
  (
    umask 077
    cat >"${OBJECTSTORE_ENV}.tmp" <<EOF
# Written by tests/objectstore/start.sh: SeaweedFS ${SEAWEEDFS_VERSION}, pid $(objectstore_pid || echo '?').
PLAYPEN_TEST_S3_ENDPOINT=${ENDPOINT}
PLAYPEN_TEST_S3_BUCKET=${OBJECTSTORE_BUCKET}
PLAYPEN_TEST_S3_REGION=${OBJECTSTORE_REGION}
PLAYPEN_TEST_S3_ACCESS_KEY_ID=$(key user.key)
PLAYPEN_TEST_S3_SECRET_ACCESS_KEY=$(key user.secret)
EOF
    mv -f "${OBJECTSTORE_ENV}.tmp" "$OBJECTSTORE_ENV"
  )
}

# ---- running already? ----------------------------------------------------------------------
if pid="$(objectstore_pid)"; then
  if [[ "$(anonymous_status)" == 403 ]] && grep -qF "\"Read:${OBJECTSTORE_BUCKET}\"" "$IDENTITIES" && verify; then
    write_env
    log "SeaweedFS already running at ${ENDPOINT} (pid ${pid}, bucket ${OBJECTSTORE_BUCKET}, state ${OBJECTSTORE_DIR})"
    echo "$OBJECTSTORE_ENV" >&3
    exit 0
  fi
  log "SeaweedFS pid ${pid} does not answer as expected at ${ENDPOINT} (${why:-no answer}); restarting it"
  bash "$(dirname "${BASH_SOURCE[0]}")/stop.sh"
fi
code="$(anonymous_status)"
[[ "$code" == 000 ]] || die "something else answers at ${ENDPOINT} (HTTP ${code}); set PLAYPEN_OBJECTSTORE_PORT to a free port"

# ---- keys and identities, made once per state dir ------------------------------------------
mkdir -p "$DATA"
chmod 0700 "$OBJECTSTORE_DIR"
random() { head -c 64 /dev/urandom | base64 -w0 | tr -dc 'A-Za-z0-9' | head -c "$1"; }
if [[ ! -s "${OBJECTSTORE_DIR}/user.secret" || ! -s "${OBJECTSTORE_DIR}/admin.secret" ]]; then
  log "making the key pairs of ${OBJECTSTORE_USER} and ${OBJECTSTORE_ADMIN} (mode 0600 in ${OBJECTSTORE_DIR})"
  (
    umask 077
    printf 'PLAYPEN%s' "$(random 13 | tr '[:lower:]' '[:upper:]')" >"${OBJECTSTORE_DIR}/user.key"
    random 40 >"${OBJECTSTORE_DIR}/user.secret"
    printf 'ADMIN%s' "$(random 15 | tr '[:lower:]' '[:upper:]')" >"${OBJECTSTORE_DIR}/admin.key"
    random 40 >"${OBJECTSTORE_DIR}/admin.secret"
  )
fi
(
  umask 077
  objectstore_identities "$OBJECTSTORE_BUCKET" "$(key user.key)" "$(key user.secret)" \
    "$(key admin.key)" "$(key admin.secret)" >"${IDENTITIES}.tmp"
  mv -f "${IDENTITIES}.tmp" "$IDENTITIES"
)

# ---- start ---------------------------------------------------------------------------------
mapfile -t args < <(objectstore_weed_args "$DATA" "$IDENTITIES" 127.0.0.1)
log "starting SeaweedFS ${SEAWEEDFS_VERSION} at ${ENDPOINT} (log: ${OBJECTSTORE_LOG})"
[[ -f "$OBJECTSTORE_LOG" ]] && mv -f "$OBJECTSTORE_LOG" "${OBJECTSTORE_LOG}.1"
(
  # Only stdio: a daemon holding the caller's pipe would keep `$(start.sh | tail -1)` waiting.
  for fd in /proc/self/fd/*; do
    fd="${fd##*/}"
    if [[ "$fd" =~ ^[0-9]+$ ]] && ((fd > 2 && fd != 255)); then eval "exec ${fd}>&-" 2>/dev/null || true; fi
  done
  cd "$OBJECTSTORE_DIR"
  exec setsid "$WEED_BIN" "${args[@]}"
) </dev/null >"$OBJECTSTORE_LOG" 2>&1 &
echo $! >"$OBJECTSTORE_PID"

t0=$SECONDS
# A failed start stops what it started (its log stays for a look).
fail() {
  log "ERROR: $*; last lines of ${OBJECTSTORE_LOG}:"
  tail -n 20 "$OBJECTSTORE_LOG" >&2 || true
  bash "$(dirname "${BASH_SOURCE[0]}")/stop.sh" || true
  exit 1
}
alive() { kill -0 "$(<"$OBJECTSTORE_PID")" 2>/dev/null; }
until [[ "$(anonymous_status)" == 403 ]]; do
  alive || fail "weed exited before its S3 gateway answered"
  ((SECONDS - t0 < 90)) || fail "the S3 gateway did not answer within 90 s"
  sleep 0.5
done
log "S3 gateway answering after $((SECONDS - t0)) s"

# The bucket, as the admin: 200 when made, 409 when an earlier start made it.
until code="$(s3_request PUT "/${OBJECTSTORE_BUCKET}" "$(key admin.key)" "$(key admin.secret)")" && [[ "$code" == 200 || "$code" == 409 ]]; do
  alive || fail "weed exited while the bucket was being created"
  ((SECONDS - t0 < 90)) || fail "creating bucket ${OBJECTSTORE_BUCKET} answered HTTP ${code}: $(cat "${OBJECTSTORE_DIR}/last-response.xml" 2>/dev/null)"
  sleep 1
done
# The first write grows the bucket's volumes: it may take a few tries.
until verify; do
  alive || fail "weed exited during the checks"
  ((SECONDS - t0 < 120)) || fail "the store did not pass its checks within 120 s: ${why}"
  sleep 1
done
write_env
log "SeaweedFS ready in $((SECONDS - t0)) s: ${ENDPOINT}, bucket ${OBJECTSTORE_BUCKET}, SigV4 enforced (env: ${OBJECTSTORE_ENV})"
echo "$OBJECTSTORE_ENV" >&3
