#!/usr/bin/env bash
# A current Docker Engine daemon for the image builder's OCI layout test, idempotently:
# dockerd from github.com/moby/moby/v2/cmd/dockerd@${PLAYPEN_DOCKERD_VERSION:-v2.0.0-beta.24}
# (REST API 1.56; its `docker save` writes the OCI layout engines write from 25 on), built from
# the Go module proxy once and cached in ${PLAYPEN_CACHE:-$HOME/.cache/playpen}/dockerd/<version>/bin.
# Only built here, never started: the test starts its own daemons from it (in their own network
# and mount namespaces, on a throwaway containerd) and stops them; the system's Docker Engine is
# not touched.
#
#   tests/imagebuild/engine-current.sh    # last stdout line: the dockerd binary's path
#
# Logs go to stderr.
set -euo pipefail
exec 3>&1 1>&2
log() { printf '[%s imagebuild/engine-current.sh] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

VERSION="${PLAYPEN_DOCKERD_VERSION:-v2.0.0-beta.24}"
PLAYPEN_CACHE="${PLAYPEN_CACHE:-${HOME}/.cache/playpen}"
CACHE="${PLAYPEN_CACHE}/dockerd/${VERSION}"
BIN="${CACHE}/bin"
# Bump when the way the binary is built changes: forces a rebuild of the cached version.
BUILD_RECIPE=1
STAMP="${CACHE}/.built-r${BUILD_RECIPE}"

case "${1:-}" in
  "") ;;
  -h | --help) sed -n '2,12s/^# \{0,1\}//p' "$0"; exit 0 ;;
  *) die "unknown argument '$1'" ;;
esac

built() { [[ -f "$STAMP" && -x "${BIN}/dockerd" ]]; }

if built; then
  log "cached: ${BIN}/dockerd (${VERSION})"
else
  mkdir -p "$CACHE"
  exec 9>"${CACHE}/.build.lock"
  if ! flock -n 9; then
    log "another engine-current.sh holds ${CACHE}/.build.lock; waiting"
    flock 9
  fi
  if ! built; then
    command -v go >/dev/null 2>&1 || PATH="${PATH}:/usr/local/go/bin"
    command -v go >/dev/null 2>&1 || die "go not found (expected on PATH or at /usr/local/go/bin/go)"
    log "building dockerd ${VERSION} from the Go module proxy with $(go version | cut -d' ' -f3) (about 6 min on 2 cores the first time)"
    t0=$SECONDS
    mkdir -p "$BIN"
    # The version shows in `docker version` and the daemon's log instead of "library-import".
    GOBIN="$BIN" GOFLAGS=-buildvcs=false nice -n 19 \
      go install -ldflags "-X github.com/moby/moby/v2/dockerversion.Version=moby-${VERSION}" \
      "github.com/moby/moby/v2/cmd/dockerd@${VERSION}" >"${CACHE}/build.log" 2>&1 ||
      die "go install of dockerd failed; see ${CACHE}/build.log"
    touch "$STAMP"
    log "built ${BIN}/dockerd in $((SECONDS - t0)) s"
  fi
fi
"${BIN}/dockerd" --version >&2 || die "${BIN}/dockerd does not run; remove ${CACHE} and run this again"
echo "${BIN}/dockerd" >&3
