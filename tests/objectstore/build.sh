#!/usr/bin/env bash
# Build the pinned SeaweedFS server (`weed`) from the Go module proxy, once per version,
# into ${PLAYPEN_CACHE:-$HOME/.cache/playpen}/seaweedfs/<version>/bin/weed; prints its path.
# Static (CGO off), so the same binary can later run in a fixture Pod on playpen/base.
# About 6.5 minutes on 2 busy cores the first time (module downloads included), then cached.
set -euo pipefail
# shellcheck source=../cluster/lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/../cluster" && pwd)/lib.sh"

WEED_DIR="${PLAYPEN_CACHE}/seaweedfs/${SEAWEEDFS_VERSION}"
WEED="${WEED_DIR}/bin/weed"
MODULE="github.com/seaweedfs/seaweedfs@${SEAWEEDFS_VERSION}"
command -v go >/dev/null 2>&1 || PATH="${PATH}:/usr/local/go/bin"
command -v go >/dev/null 2>&1 || die "go is not installed"

# Not go_install_cached: SeaweedFS's go.mod has a replace directive (go-bip39), which
# `go install pkg@version` refuses, so the module is downloaded from the proxy and built
# as the main module, where the replace applies. Recipe 1; bump it when the flags change.
if [[ ! -f "${WEED_DIR}/.built-r1" ]]; then
  mkdir -p "${WEED_DIR}/bin"
  (
    flock 9
    [[ -f "${WEED_DIR}/.built-r1" ]] && exit 0
    t0=$SECONDS
    src="$(GOFLAGS='' go mod download -json "$MODULE" |
      sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p' | head -1)"
    [[ -f "${src}/weed/weed.go" ]] || die "weed's source not found under ${src:-an empty path} (${MODULE})"
    log "building ${MODULE}/weed from the Go module proxy (several minutes the first time)"
    (cd "$src" && CGO_ENABLED=0 GOFLAGS=-buildvcs=false go build -trimpath \
      -ldflags "-s -w -X github.com/seaweedfs/seaweedfs/weed/util/version.COMMIT=${SEAWEEDFS_VERSION##*-}" \
      -o "${WEED}.tmp" ./weed)
    mv -f "${WEED}.tmp" "$WEED"
    touch "${WEED_DIR}/.built-r1"
    log "built weed in $((SECONDS - t0)) s"
  ) 9>"${WEED_DIR}.lock"
fi
[[ -x "$WEED" ]] || die "weed missing at ${WEED} after its build"
echo "$WEED"
