#!/usr/bin/env bash
# Build the pinned gVisor runtime from the Go module proxy, once per version, into
# ${PLAYPEN_CACHE:-$HOME/.cache/playpen}/gvisor/<version>/bin/: `runsc` and the containerd
# shim `containerd-shim-runsc-v1` (runtime_type "io.containerd.runsc.v1"). Prints the runsc
# path. Nothing here touches containerd: wiring it in as a runtime handler is a separate step
# (docs/security.md, "gVisor on the test node"). About 3 minutes on 2 cores the first time.
set -euo pipefail
# shellcheck source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

GVISOR_DIR="${PLAYPEN_CACHE}/gvisor/${GVISOR_VERSION}"
# gVisor's master branch builds with Bazel; its `go` branch (what the proxy serves as a
# pseudo-version) carries the generated files and builds with the plain Go toolchain.
# Recipe 1; bump it when the build flags change.
go_install_cached "$GVISOR_DIR" 1 "gvisor.dev/gvisor/runsc@${GVISOR_VERSION}" \
  "-X gvisor.dev/gvisor/runsc/version.version=${GVISOR_VERSION}" \
  "gvisor.dev/gvisor/shim@${GVISOR_VERSION}"
# `go install` names the shim after its package directory.
if [[ -x "${GVISOR_DIR}/bin/shim" ]]; then
  mv -f "${GVISOR_DIR}/bin/shim" "${GVISOR_DIR}/bin/containerd-shim-runsc-v1"
fi
for b in runsc containerd-shim-runsc-v1; do
  [[ -x "${GVISOR_DIR}/bin/${b}" ]] || die "${b} missing at ${GVISOR_DIR}/bin/${b} after its build"
done
echo "${GVISOR_DIR}/bin/runsc"
