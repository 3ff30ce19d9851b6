# shellcheck shell=bash
# shellcheck disable=SC2034 # variables are used by the scripts that source this file
# Shared by tests/objectstore/*.sh: the pinned SeaweedFS build, the loopback ports, the state
# dir, and the two pieces a fixture Pod will reuse: the S3 identities file and weed's arguments.
# Source it; do not execute it.

# shellcheck source=../cluster/lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/../cluster" && pwd)/lib.sh"

WEED_BIN="${PLAYPEN_CACHE}/seaweedfs/${SEAWEEDFS_VERSION}/bin/weed"

# State: data, identities, keys, logs, pid. Kept by stop.sh, removed by stop.sh --purge.
OBJECTSTORE_DIR="${PLAYPEN_OBJECTSTORE_DIR:-/tmp/playpen-objectstore}"
[[ "$OBJECTSTORE_DIR" == /* ]] || OBJECTSTORE_DIR="$(pwd)/${OBJECTSTORE_DIR}"
OBJECTSTORE_DIR="${OBJECTSTORE_DIR%/}"
OBJECTSTORE_ENV="${OBJECTSTORE_DIR}/s3.env"
OBJECTSTORE_PID="${OBJECTSTORE_DIR}/weed.pid"
OBJECTSTORE_LOG="${OBJECTSTORE_DIR}/weed.log"

# Ports on 127.0.0.1, away from weed's defaults (8333, 9333, 8080, 8888) and from the cluster
# tiers' (tests/cluster/lib.sh). weed listens for gRPC on each port + 10000 as well.
OBJECTSTORE_S3_PORT="${PLAYPEN_OBJECTSTORE_PORT:-18333}"
OBJECTSTORE_MASTER_PORT="${PLAYPEN_OBJECTSTORE_MASTER_PORT:-18334}"
OBJECTSTORE_VOLUME_PORT="${PLAYPEN_OBJECTSTORE_VOLUME_PORT:-18335}"
OBJECTSTORE_FILER_PORT="${PLAYPEN_OBJECTSTORE_FILER_PORT:-18336}"
OBJECTSTORE_BUCKET="${PLAYPEN_OBJECTSTORE_BUCKET:-playpen-recordings}"
# The region signed into requests; SeaweedFS accepts any, the uploader's default.
OBJECTSTORE_REGION=us-east-1
# The uploader's identity may only read, write and list the bucket; the admin identity
# (start.sh creates the bucket with it) may do anything.
OBJECTSTORE_USER=playpen-recorder
OBJECTSTORE_ADMIN=playpen-admin

# objectstore_identities BUCKET KEY SECRET ADMIN_KEY ADMIN_SECRET — SeaweedFS's S3 identities
# file (-s3.config) on stdout. No anonymous identity: every request must be signed (SigV4).
objectstore_identities() {
  local bucket="$1" key="$2" secret="$3" admin_key="$4" admin_secret="$5"
  cat <<EOF
{
  "identities": [
    {
      "name": "${OBJECTSTORE_USER}",
      "credentials": [{"accessKey": "${key}", "secretKey": "${secret}"}],
      "actions": ["Read:${bucket}", "Write:${bucket}", "List:${bucket}"]
    },
    {
      "name": "${OBJECTSTORE_ADMIN}",
      "credentials": [{"accessKey": "${admin_key}", "secretKey": "${admin_secret}"}],
      "actions": ["Admin", "Read", "Write", "List", "Tagging"]
    }
  ]
}
EOF
}

# objectstore_weed_args DATA_DIR IDENTITIES_FILE BIND_IP — `weed server`'s arguments, one per
# line: master, volume, filer and S3 gateway in one process, on the ports above, nothing
# reaching out (telemetry off) and no listener but those (Iceberg, Lance off).
objectstore_weed_args() {
  local data="$1" identities="$2" ip="$3"
  printf '%s\n' server \
    "-dir=${data}" "-ip=${ip}" "-ip.bind=${ip}" \
    "-master.port=${OBJECTSTORE_MASTER_PORT}" "-master.telemetry=false" "-master.electionTimeout=1s" \
    "-master.volumeSizeLimitMB=256" "-master.defaultReplication=000" \
    "-volume.port=${OBJECTSTORE_VOLUME_PORT}" "-volume.max=16" "-volume.preStopSeconds=0" \
    "-filer" "-filer.port=${OBJECTSTORE_FILER_PORT}" "-filer.localSocket=${data}/filer.sock" \
    "-s3" "-s3.port=${OBJECTSTORE_S3_PORT}" "-s3.config=${identities}" "-s3.localSocket=${data}/s3.sock" \
    "-s3.port.iceberg=0" "-s3.port.lance=0" "-s3.autoCreateBucket=false"
}

# objectstore_pid — the pid of our running weed (pid file + its command line names our state
# dir, so a recycled pid is not mistaken for ours).
objectstore_pid() {
  local pid
  [[ -f "$OBJECTSTORE_PID" ]] || return 1
  pid="$(<"$OBJECTSTORE_PID")"
  [[ "$pid" =~ ^[0-9]+$ && -r "/proc/${pid}/cmdline" ]] || return 1
  tr '\0' ' ' <"/proc/${pid}/cmdline" 2>/dev/null | grep -qF -- "-dir=${OBJECTSTORE_DIR}/data" || return 1
  echo "$pid"
}

# s3_request METHOD PATH KEY SECRET [BODY] — a SigV4-signed request to the S3 gateway (curl's
# own signer); prints the HTTP status, the body goes to ${OBJECTSTORE_DIR}/last-response.xml.
# curl (7.88) signs no payload hash, which S3 requires: it is sent as x-amz-content-sha256.
# The key pair reaches curl on stdin, never its command line (the process list).
s3_request() {
  local method="$1" path="$2" key="$3" secret="$4" body="${5:-}" data=()
  [[ -z "$body" ]] || data=(--data-binary "$body")
  printf 'user = "%s:%s"\n' "$key" "$secret" |
    curl --noproxy '*' -s -m 10 -K - -o "${OBJECTSTORE_DIR}/last-response.xml" -w '%{http_code}' -X "$method" \
      --aws-sigv4 "aws:amz:${OBJECTSTORE_REGION}:s3" "${data[@]}" \
      -H "x-amz-content-sha256: $(printf '%s' "$body" | sha256sum | cut -d' ' -f1)" \
      "http://127.0.0.1:${OBJECTSTORE_S3_PORT}${path}" 2>/dev/null || true
}
