#!/usr/bin/env bash
# Build the pinned helm from the Go module proxy, once per version, into
# ${PLAYPEN_CACHE:-$HOME/.cache/playpen}/helm/<version>/bin/helm; prints its path.
set -euo pipefail
# shellcheck source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

HELM_DIR="${PLAYPEN_CACHE}/helm/${HELM_VERSION}"
# helm's offline default cluster version (helm template, lint): the one we test against.
k8s_minor="$(cut -d. -f2 <<<"$KUBERNETES_VERSION")"
# Recipe 2; bump it when the build flags change.
go_install_cached "$HELM_DIR" 2 "helm.sh/helm/v3/cmd/helm@${HELM_VERSION}" \
  "-X helm.sh/helm/v3/internal/version.version=${HELM_VERSION} \
-X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=${k8s_minor}"
[[ -x "${HELM_DIR}/bin/helm" ]] || die "helm missing at ${HELM_DIR}/bin/helm after its build"
echo "${HELM_DIR}/bin/helm"
