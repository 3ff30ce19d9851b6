#!/usr/bin/env bash
# Build the pinned kwok controller (sigs.k8s.io/kwok/cmd/kwok) from the Go module proxy,
# once per version, into ${PLAYPEN_CACHE:-$HOME/.cache/playpen}/kwok/<version>/bin/kwok;
# prints its path. The kwok tier (start-kwok.sh) runs it to fake nodes and Pod lifecycles.
#
# The kwok binary has no stages built in (kwokctl assembles them into its config), so the
# Stage yamls kwokctl uses by default are copied from the same module version into
# .../kwok/<version>/stages/ beside the binary: node-initialize (node/fast),
# node-heartbeat-with-lease, and pod-ready, pod-complete, pod-delete (pod/fast).
set -euo pipefail
# shellcheck source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

dir="$(dirname "$(dirname "$KWOK_BIN")")"
# Recipe 1; bump it when the build flags change. kwok's version string is a constant in
# its source (pkg/consts), so no -X flags are needed.
go_install_cached "$dir" 1 "sigs.k8s.io/kwok/cmd/kwok@${KWOK_VERSION}"
[[ -x "$KWOK_BIN" ]] || die "kwok missing at ${KWOK_BIN} after its build"

if [[ ! -f "${KWOK_STAGES}/.done" ]]; then
  command -v go >/dev/null 2>&1 || PATH="${PATH}:/usr/local/go/bin"
  src="$(cd "$dir" && GOFLAGS='' go mod download -json "sigs.k8s.io/kwok@${KWOK_VERSION}" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p' | head -1)"
  [[ -d "${src}/kustomize/stage" ]] || die "no kustomize/stage in sigs.k8s.io/kwok@${KWOK_VERSION} (${src:-not downloaded})"
  rm -rf "${KWOK_STAGES}.tmp"
  mkdir -p "${KWOK_STAGES}.tmp"
  for f in node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
    pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
    [[ -f "${src}/kustomize/stage/${f}" ]] || die "stage ${f} missing in sigs.k8s.io/kwok@${KWOK_VERSION}"
    install -m 0644 "${src}/kustomize/stage/${f}" "${KWOK_STAGES}.tmp/"
  done
  touch "${KWOK_STAGES}.tmp/.done"
  rm -rf "$KWOK_STAGES"
  mv "${KWOK_STAGES}.tmp" "$KWOK_STAGES"
  log "copied kwok's default stages into ${KWOK_STAGES}"
fi
echo "$KWOK_BIN"
