#!/usr/bin/env bash
# Build the pinned crictl (sigs.k8s.io/cri-tools/cmd/crictl) from the Go module proxy,
# once per version, into ${PLAYPEN_CACHE:-$HOME/.cache/playpen}/cri-tools/<version>/bin/crictl;
# prints its path. The node tier uses it to remove pod sandboxes through CRI (so CNI DEL
# runs) and to look up image IDs.
set -euo pipefail
# shellcheck source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

# Recipe 1; bump it when the build flags change.
go_install_cached "$(dirname "$(dirname "$CRICTL_BIN")")" 1 "sigs.k8s.io/cri-tools/cmd/crictl@${CRICTL_VERSION}" \
  "-X sigs.k8s.io/cri-tools/pkg/version.Version=${CRICTL_VERSION}"
[[ -x "$CRICTL_BIN" ]] || die "crictl missing at ${CRICTL_BIN} after its build"
echo "$CRICTL_BIN"
