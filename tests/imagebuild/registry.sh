#!/usr/bin/env bash
# A real OCI registry on loopback for the image builder's push test, idempotently:
#   1. the CNCF distribution registry (github.com/distribution/distribution/v3/cmd/registry
#      @${PLAYPEN_REGISTRY_VERSION:-v3.1.2}) built from the Go module proxy once, cached with a
#      small bcrypt htpasswd writer (golang.org/x/crypto at the version distribution's go.mod pins)
#      in ${PLAYPEN_CACHE:-$HOME/.cache/playpen}/registry/<version>/bin;
#   2. a test user (`playpen-test`) with a random password made once, kept with mode 0600 in the
#      state dir ${PLAYPEN_TEST_REGISTRY_DIR:-/tmp/playpen-registry} as `username` and `password`,
#      and htpasswd (bcrypt) auth on every /v2/ route;
#   3. the registry listening on 127.0.0.1:${PLAYPEN_REGISTRY_PORT:-15000} in the background (log:
#      <state>/registry.log, storage: <state>/data), waited for until /v2/ answers 401.
# Docker Engine allows plain HTTP to registries in 127.0.0.0/8 by default; this script checks that
# `docker info` lists it under Insecure Registries (when the engine is up) so a push can reach it.
#
#   tests/imagebuild/registry.sh          # start, or find it running; last stdout line: 127.0.0.1:<port>
#   tests/imagebuild/registry.sh --stop   # stop it (the state dir, its data and credentials are kept)
#
# Logs go to stderr.
set -euo pipefail
exec 3>&1 1>&2
log() { printf '[%s imagebuild/registry.sh] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

VERSION="${PLAYPEN_REGISTRY_VERSION:-v3.1.2}"
PORT="${PLAYPEN_REGISTRY_PORT:-15000}"
ADDR="127.0.0.1:${PORT}"
PLAYPEN_CACHE="${PLAYPEN_CACHE:-${HOME}/.cache/playpen}"
CACHE="${PLAYPEN_CACHE}/registry/${VERSION}"
BIN="${CACHE}/bin"
STATE="${PLAYPEN_TEST_REGISTRY_DIR:-/tmp/playpen-registry}"
[[ "$STATE" == /* ]] || STATE="$(pwd)/${STATE}"
STATE="${STATE%/}"
CONFIG="${STATE}/config.yml"
PIDFILE="${STATE}/registry.pid"
USERNAME=playpen-test
# Bump when the way the binaries are built changes: forces a rebuild of the cached version.
BUILD_RECIPE=1
STAMP="${CACHE}/.built-r${BUILD_RECIPE}"

usage() { sed -n '2,17s/^# \{0,1\}//p' "$0"; }

# Our registry's pid: the pid file's process, whose command line names our config.
our_pid() {
  local pid
  [[ -f "$PIDFILE" ]] || return 1
  pid="$(<"$PIDFILE")"
  [[ "$pid" =~ ^[0-9]+$ && -r "/proc/${pid}/cmdline" ]] || return 1
  tr '\0' ' ' <"/proc/${pid}/cmdline" 2>/dev/null | grep -qF -- "$CONFIG" || return 1
  echo "$pid"
}

# /v2/ status code (401 when the registry is up with auth on).
v2_status() { curl --noproxy '*' -s -o /dev/null -m 2 -w '%{http_code}' "http://${ADDR}/v2/" 2>/dev/null || true; }

stop() {
  local pid
  if ! pid="$(our_pid)"; then
    log "not running (state: ${STATE})"
    rm -f "$PIDFILE"
    return 0
  fi
  log "stopping registry (pid ${pid})"
  kill "$pid"
  for _ in $(seq 1 50); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    log "registry (pid ${pid}) did not exit within 5 s; sending KILL"
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$PIDFILE"
}

case "${1:-}" in
  "") ;;
  --stop) stop; exit 0 ;;
  -h | --help) usage; exit 0 ;;
  *) usage; die "unknown argument '$1'" ;;
esac
[[ "$PORT" =~ ^[0-9]+$ ]] || die "PLAYPEN_REGISTRY_PORT must be a port number, not '${PORT}'"

# ---- 1. the binaries, built once per version ------------------------------------------
build() {
  mkdir -p "$CACHE"
  exec 9>"${CACHE}/.build.lock"
  if ! flock -n 9; then
    log "another registry.sh holds ${CACHE}/.build.lock; waiting"
    flock 9
  fi
  [[ -f "$STAMP" && -x "${BIN}/registry" && -x "${BIN}/htpasswd" ]] && return 0
  command -v go >/dev/null 2>&1 || PATH="${PATH}:/usr/local/go/bin"
  command -v go >/dev/null 2>&1 || die "go not found (expected on PATH or at /usr/local/go/bin/go)"
  log "building distribution registry ${VERSION} from the Go module proxy with $(go version | cut -d' ' -f3) (about 2-3 min the first time)"
  local t0=$SECONDS
  mkdir -p "$BIN"
  GOBIN="$BIN" CGO_ENABLED=0 GOFLAGS=-buildvcs=false \
    go install "github.com/distribution/distribution/v3/cmd/registry@${VERSION}" >"${CACHE}/build.log" 2>&1 ||
    die "go install of the registry failed; see ${CACHE}/build.log"

  # The htpasswd writer: bcrypt from the same module graph as the registry that checks it.
  local src="${CACHE}/src"
  rm -rf "$src"
  mkdir -p "${src}/htpasswd"
  cat >"${src}/htpasswd/main.go" <<'EOF'
// Writes one htpasswd line, "<user>:<bcrypt hash>", for the password read from stdin
// (never from argv, so it does not show in the process list).
package main

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"golang.org/x/crypto/bcrypt"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: htpasswd USER < password")
		os.Exit(2)
	}
	pw, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	hash, err := bcrypt.GenerateFromPassword(bytes.TrimRight(pw, "\r\n"), bcrypt.DefaultCost)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("%s:%s\n", os.Args[1], hash)
}
EOF
  (
    cd "$src"
    go mod init playpen.local/registry-htpasswd >/dev/null 2>&1
    go mod edit -require="github.com/distribution/distribution/v3@${VERSION}"
    CGO_ENABLED=0 GOFLAGS="-mod=mod -buildvcs=false" go build -o "${BIN}/htpasswd" ./htpasswd
  ) >>"${CACHE}/build.log" 2>&1 || die "building the htpasswd writer failed; see ${CACHE}/build.log"
  touch "$STAMP"
  log "built ${BIN}/registry and ${BIN}/htpasswd in $((SECONDS - t0)) s"
}
if [[ -f "$STAMP" && -x "${BIN}/registry" && -x "${BIN}/htpasswd" ]]; then
  log "cached: ${BIN}/registry (${VERSION})"
else
  build
fi

# ---- 2. Docker Engine allows plain HTTP to it ------------------------------------------------
if command -v docker >/dev/null 2>&1 && docker version --format '{{.Server.Version}}' >/dev/null 2>&1; then
  insecure="$(docker info --format '{{range .RegistryConfig.IndexConfigs}}{{if not .Secure}}{{.Name}} {{end}}{{end}} {{range .RegistryConfig.InsecureRegistryCIDRs}}{{.}} {{end}}')"
  [[ " $insecure " == *" 127.0.0.0/8 "* || " $insecure " == *" ${ADDR} "* ]] ||
    die "Docker Engine does not allow plain HTTP to ${ADDR} (insecure registries: ${insecure:-none}); add \"insecure-registries\": [\"${ADDR}\"] to /etc/docker/daemon.json"
else
  log "Docker Engine is not up; not checking its insecure registries (tests/imagebuild/setup.sh starts it)"
fi

# ---- 3. running already? ---------------------------------------------------------------------
if pid="$(our_pid)"; then
  if [[ "$(v2_status)" == 401 ]] && grep -qF "addr: ${ADDR}" "$CONFIG"; then
    log "registry already running on ${ADDR} (pid ${pid}; state: ${STATE})"
    echo "$ADDR" >&3
    exit 0
  fi
  log "registry pid ${pid} does not answer as expected on ${ADDR}; restarting it"
  stop
fi
code="$(v2_status)"
[[ "$code" == 000 ]] || die "something else answers on ${ADDR} (HTTP ${code}); set PLAYPEN_REGISTRY_PORT to a free port"

# ---- 4. credentials, config, start -----------------------------------------------------------
mkdir -p "${STATE}/data"
chmod 0700 "$STATE"
if [[ ! -s "${STATE}/password" || ! -s "${STATE}/htpasswd" ]]; then
  log "making the test user ${USERNAME} with a random password (${STATE}/password, mode 0600)"
  (umask 077 && head -c 24 /dev/urandom | base64 | tr -d '/+=\n' >"${STATE}/password")
  (umask 077 && printf '%s' "$USERNAME" >"${STATE}/username")
  (umask 077 && "${BIN}/htpasswd" "$USERNAME" <"${STATE}/password" >"${STATE}/htpasswd")
fi
(umask 077 && cat >"$CONFIG" <<EOF
version: 0.1
log:
  level: info
  formatter: text
storage:
  filesystem:
    rootdirectory: ${STATE}/data
  delete:
    enabled: true
http:
  addr: ${ADDR}
  secret: $(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
auth:
  htpasswd:
    realm: playpen-test
    path: ${STATE}/htpasswd
EOF
)

log "starting registry ${VERSION} on ${ADDR} (log: ${STATE}/registry.log)"
# No OpenTelemetry exporter: nothing listens for it here. fd 3 (our stdout) and 9 (the build lock)
# are closed so that a caller reading our stdout through a pipe is not held open by the registry.
OTEL_TRACES_EXPORTER=none OTEL_METRICS_EXPORTER=none OTEL_LOGS_EXPORTER=none \
  nohup "${BIN}/registry" serve "$CONFIG" >>"${STATE}/registry.log" 2>&1 </dev/null 3>&- 9>&- &
started=$!
echo "$started" >"$PIDFILE"
disown || true
for _ in $(seq 1 100); do
  [[ "$(v2_status)" == 401 ]] && break
  # kill -0, not our_pid: until the child has exec'd, its command line is still this script's,
  # which does not name the config (a CI run on a busy machine failed on that window).
  if ! kill -0 "$started" 2>/dev/null; then
    tail -n 20 "${STATE}/registry.log" >&2 || true
    die "the registry exited at start; its log's last lines are above (${STATE}/registry.log)"
  fi
  sleep 0.1
done
[[ "$(v2_status)" == 401 ]] || die "the registry did not answer 401 on http://${ADDR}/v2/ within 10 s; see ${STATE}/registry.log"
log "registry up on ${ADDR} with htpasswd auth (user ${USERNAME})"
echo "$ADDR" >&3
