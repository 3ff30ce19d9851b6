#!/usr/bin/env bash
# Builds the images the node runs and imports them into its containerd:
#   playpen/operator:dev  operator/controller/Dockerfile around the workspace's playpen-operator
#   playpen/node-agent:dev  operator/node-agent/Dockerfile around playpen-node-agent (live suspend)
#   playpen/browser:dev   playpen-imagebuild lock + build of tests/e2e/browser-image.yaml,
#                         carrying the workspace's playpen-session, imported from the
#                         OCI image layout the builder writes (--oci-layout)
# plus playpen/base:bookworm (the seccomp-profile installer runs on it) and
# playpen/objectstore:dev (SeaweedFS from tests/objectstore/build.sh: the
# recordings export's store in the end-to-end tests).
#
#   tests/e2e/images.sh [--release]
#
# Needs Docker Engine and the base image (tests/imagebuild/setup.sh) and the
# node (tests/cluster/start-node.sh). Idempotent: Docker's build cache and
# load-image.sh's image-ID check make a second run fast.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

log() { printf '[%s e2e/images.sh] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

profile=debug
cargo_flags=()
if [[ "${1:-}" == "--release" ]]; then
  profile=release
  cargo_flags=(--release)
fi
target="${CARGO_TARGET_DIR:-$PWD/target}"
out="${target}/e2e"
mkdir -p "$out"

log "building playpen-operator, playpen-node-agent, playpen-session and playpen-imagebuild (${profile})"
cargo build --locked "${cargo_flags[@]}" -p playpen-operator -p playpen-node-agent -p playpen-session -p playpen-imagebuild >&2

log "operator image playpen/operator:dev"
rm -rf "${out}/operator-context" && mkdir -p "${out}/operator-context"
cp "${target}/${profile}/playpen-operator" "${out}/operator-context/"
docker build -q --build-arg BASE=playpen/base:bookworm -f operator/controller/Dockerfile \
  -t playpen/operator:dev "${out}/operator-context" >&2

log "node agent image playpen/node-agent:dev"
rm -rf "${out}/node-agent-context" && mkdir -p "${out}/node-agent-context"
cp "${target}/${profile}/playpen-node-agent" "${out}/node-agent-context/"
docker build -q --build-arg BASE=playpen/base:bookworm -f operator/node-agent/Dockerfile \
  -t playpen/node-agent:dev "${out}/node-agent-context" >&2

log "browser image playpen/browser:dev (playpen-imagebuild)"
sed "s#@SESSION_RUNTIME@#${target}/${profile}/playpen-session#" tests/e2e/browser-image.yaml >"${out}/browser-image.yaml"
imagebuild="${target}/${profile}/playpen-imagebuild"
"$imagebuild" lock --spec "${out}/browser-image.yaml" --lock "${out}/browser-image.lock.json" >&2
rm -rf "${out}/browser-oci"
"$imagebuild" build --lock "${out}/browser-image.lock.json" --tag playpen/browser:dev --out-dir "${out}/browser-image" \
  --oci-layout "${out}/browser-oci" >&2

# The browser image reaches the node through the OCI layout the builder wrote
# (so containerd proves that layout runnable); the others through docker save.
tests/cluster/load-image.sh --oci-layout "${out}/browser-oci" >&2
rm -rf "${out}/browser-oci" # 1.2 GB; the next run writes it again
log "object store image playpen/objectstore:dev (SeaweedFS, the recordings export's test store)"
weed="$(bash tests/objectstore/build.sh | tail -n 1)"
rm -rf "${out}/objectstore-context" && mkdir -p "${out}/objectstore-context"
cp "$weed" "${out}/objectstore-context/weed"
printf 'FROM playpen/base:bookworm\nCOPY weed /usr/local/bin/weed\nUSER 1000\n' >"${out}/objectstore-context/Dockerfile"
docker build -q -t playpen/objectstore:dev "${out}/objectstore-context" >&2
tests/cluster/load-image.sh playpen/operator:dev playpen/node-agent:dev playpen/base:bookworm playpen/objectstore:dev >&2
log "images ready"
