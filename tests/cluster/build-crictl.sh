#!/usr/bin/env bash
# Build the pinned crictl (sigs.k8s.io/cri-tools/cmd/crictl) from the Go module proxy,
# once per version, into ${PLAYPEN_CACHE:-$HOME/.cache/playpen}/cri-tools/<version>/bin/crictl;
# prints its path. The node tier uses it to remove pod sandboxes through CRI (so CNI DEL
# runs) and to look up image IDs.
set -euo pipefail
# shellcheck source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

CRICTL_DIR="$(dirname "$(dirname "$CRICTL_BIN")")"
# Bump when the build flags change.
STAMP="${CRICTL_DIR}/.built-r1"
if [[ -x "$CRICTL_BIN" && -f "$STAMP" ]]; then
  echo "$CRICTL_BIN"
  exit 0
fi
command -v go >/dev/null 2>&1 || PATH="${PATH}:/usr/local/go/bin"
command -v go >/dev/null 2>&1 || die "go is not installed"
mkdir -p "${CRICTL_DIR}/bin"
exec 9>"${CRICTL_DIR}.lock"
flock 9
if [[ ! -f "$STAMP" ]]; then
  log "building crictl ${CRICTL_VERSION} from the Go module proxy (~35 s)"
  t0=$SECONDS
  GOBIN="${CRICTL_DIR}/bin" CGO_ENABLED=0 GOFLAGS=-buildvcs=false go install -trimpath \
    -ldflags "-s -w -X sigs.k8s.io/cri-tools/pkg/version.Version=${CRICTL_VERSION}" \
    "sigs.k8s.io/cri-tools/cmd/crictl@${CRICTL_VERSION}"
  touch "$STAMP"
  log "crictl built in $((SECONDS - t0)) s"
fi
echo "$CRICTL_BIN"
