#!/usr/bin/env bash
# Build the pinned NetworkPolicy enforcer (sigs.k8s.io/kube-network-policies) from the Go
# module proxy, once per version, into
# ${PLAYPEN_CACHE:-$HOME/.cache/playpen}/kube-network-policies/<version>/bin/kube-network-policies;
# prints its path. start-node.sh runs it on the node (see README.md, "NetworkPolicy").
set -euo pipefail
# shellcheck source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

dir="$(dirname "$(dirname "$NETPOL_BIN")")"
# Recipe 1; bump it when the build flags change.
go_install_cached "$dir" 1 "sigs.k8s.io/kube-network-policies/cmd@${NETPOL_VERSION}"
# The main package is the module's cmd/, so `go install` names the binary "cmd".
if [[ -x "${dir}/bin/cmd" ]]; then mv -f "${dir}/bin/cmd" "$NETPOL_BIN"; fi
[[ -x "$NETPOL_BIN" ]] || die "kube-network-policies missing at ${NETPOL_BIN} after its build"
echo "$NETPOL_BIN"
