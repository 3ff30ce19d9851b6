#!/usr/bin/env bash
# Import images from the local Docker Engine into the node's containerd (namespace k8s.io),
# so Pods can use them without a registry (use imagePullPolicy: Never or IfNotPresent).
#
#   tests/cluster/load-image.sh IMAGE...     # e.g. playpen/base:bookworm
#
# Idempotent: an image whose ID (config digest) containerd already has under that name is
# skipped without `docker save`. Needs root, the node tier (start-node.sh) and Docker Engine
# (tests/imagebuild/setup.sh starts it). Images land in containerd's cached root, so they
# survive stop.sh --purge.
set -euo pipefail
# shellcheck source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

(($#)) || { sed -n '2,10s/^# \{0,1\}//p' "$0"; exit 2; }
case "$1" in -h | --help) sed -n '2,10s/^# \{0,1\}//p' "$0"; exit 0 ;; esac
[[ $(id -u) -eq 0 ]] || die "load-image.sh needs root (containerd socket ${CONTAINERD_SOCK})"
CTR=(ctr --address "$CONTAINERD_SOCK" --namespace k8s.io)
"${CTR[@]}" version >/dev/null 2>&1 ||
  die "the node's containerd is not running (${CONTAINERD_SOCK}); run tests/cluster/start-node.sh"
[[ -x "$CRICTL_BIN" ]] || "${CLUSTER_SCRIPT_DIR}/build-crictl.sh" >/dev/null
docker version --format '{{.Server.Version}}' >/dev/null 2>&1 ||
  die "Docker Engine is not answering; run tests/imagebuild/setup.sh (it starts dockerd)"

for img in "$@"; do
  id="$(docker image inspect --format '{{.Id}}' "$img" 2>/dev/null)" ||
    die "image ${img} is not in the local Docker Engine (build it, or run tests/imagebuild/setup.sh for playpen/base:bookworm)"
  have="$(crictl inspecti -o go-template --template '{{.status.id}}' "$img" 2>/dev/null || true)"
  if [[ "$have" == "$id" ]]; then
    log "${img}: already in containerd (${id:7:12})"
    continue
  fi
  t0=$SECONDS
  log "${img}: importing ${id:7:12} (docker save | ctr images import)"
  docker save "$img" | "${CTR[@]}" images import - >/dev/null
  have="$(crictl inspecti -o go-template --template '{{.status.id}}' "$img" 2>/dev/null || true)"
  [[ "$have" == "$id" ]] || die "${img}: after import containerd reports image id '${have}', expected ${id}"
  log "${img}: imported in $((SECONDS - t0)) s"
done
