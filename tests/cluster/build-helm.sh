#!/usr/bin/env bash
# Build the pinned helm from the Go module proxy, once per version, into
# ${PLAYPEN_CACHE:-$HOME/.cache/playpen}/helm/<version>/bin/helm; prints its path.
set -euo pipefail
# shellcheck source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

HELM_DIR="${PLAYPEN_CACHE}/helm/${HELM_VERSION}"
HELM_BIN="${HELM_DIR}/bin/helm"
# Bump when the build flags change.
STAMP="${HELM_DIR}/.built-r2"
if [[ -x "$HELM_BIN" && -f "$STAMP" ]]; then
  echo "$HELM_BIN"
  exit 0
fi
command -v go >/dev/null 2>&1 || PATH="${PATH}:/usr/local/go/bin"
command -v go >/dev/null 2>&1 || die "go is not installed"
mkdir -p "${HELM_DIR}/bin"
exec 9>"${HELM_DIR}.lock"
flock 9
if [[ ! -f "$STAMP" ]]; then
  log "building helm ${HELM_VERSION} from the Go module proxy"
  t0=$SECONDS
  # helm's offline default cluster version (helm template, lint): the one we test against.
  k8s_minor="$(cut -d. -f2 <<<"$KUBERNETES_VERSION")"
  GOBIN="${HELM_DIR}/bin" CGO_ENABLED=0 GOFLAGS=-buildvcs=false go install -trimpath \
    -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=${HELM_VERSION} \
      -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=${k8s_minor}" \
    "helm.sh/helm/v3/cmd/helm@${HELM_VERSION}"
  touch "$STAMP"
  log "helm built in $((SECONDS - t0)) s"
fi
echo "$HELM_BIN"
