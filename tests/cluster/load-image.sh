#!/usr/bin/env bash
# Import images into the node's containerd (namespace k8s.io), so Pods can use them
# without a registry (use imagePullPolicy: Never or IfNotPresent).
#
#   tests/cluster/load-image.sh IMAGE...               # from Docker Engine, e.g. playpen/base:bookworm
#   tests/cluster/load-image.sh --oci-layout DIR       # an OCI image layout (playpen-imagebuild
#                                                      # build --oci-layout DIR), named by its
#                                                      # org.opencontainers.image.ref.name
#
# Idempotent: an image whose ID (config digest) containerd already has under that name is
# skipped without `docker save`. Needs root, the node tier (start-node.sh) and Docker Engine
# (tests/imagebuild/setup.sh starts it). Images land in containerd's cached root, so they
# survive stop.sh --purge.
set -euo pipefail
# shellcheck source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

(($#)) || { sed -n '2,13s/^# \{0,1\}//p' "$0"; exit 2; }
case "$1" in -h | --help) sed -n '2,13s/^# \{0,1\}//p' "$0"; exit 0 ;; esac
[[ $(id -u) -eq 0 ]] || die "load-image.sh needs root (containerd socket ${CONTAINERD_SOCK})"
CTR=(ctr --address "$CONTAINERD_SOCK" --namespace k8s.io)
"${CTR[@]}" version >/dev/null 2>&1 ||
  die "the node's containerd is not running (${CONTAINERD_SOCK}); run tests/cluster/start-node.sh"
[[ -x "$CRICTL_BIN" ]] || "${CLUSTER_SCRIPT_DIR}/build-crictl.sh" >/dev/null

# normalized NAME — the name the CRI looks an image up by (docker.io/library/... rules).
normalized() {
  local name="$1" first="${1%%/*}"
  if [[ "$name" != */* ]]; then
    echo "docker.io/library/${name}"
  elif [[ "$first" == *.* || "$first" == *:* || "$first" == localhost ]]; then
    echo "$name"
  else
    echo "docker.io/${name}"
  fi
}

if [[ "$1" == "--oci-layout" ]]; then
  dir="${2:?--oci-layout needs the layout directory}"
  [[ -f "${dir}/oci-layout" && -f "${dir}/index.json" ]] || die "${dir} is not an OCI image layout (no oci-layout/index.json)"
  name="$(sed -n 's/.*"org.opencontainers.image.ref.name": *"\([^"]*\)".*/\1/p' "${dir}/index.json" | head -n 1)"
  [[ -n "$name" ]] || die "${dir}/index.json names no image (org.opencontainers.image.ref.name)"
  manifest="$(sed -n 's/.*"digest": *"sha256:\([0-9a-f]\{64\}\)".*/\1/p' "${dir}/index.json" | head -n 1)"
  config="$(tr -d ' \n' <"${dir}/blobs/sha256/${manifest}" |
    sed -n 's/.*"config":{[^}]*"digest":"\(sha256:[0-9a-f]\{64\}\)".*/\1/p')"
  [[ -n "$config" ]] || die "cannot read the config digest of manifest ${manifest} in ${dir}"
  full="$(normalized "$name")"
  have="$(crictl inspecti -o go-template --template '{{.status.id}}' "$full" 2>/dev/null || true)"
  if [[ "$have" == "$config" ]]; then
    log "${name}: already in containerd (${config:7:12}, from ${dir})"
    exit 0
  fi
  t0=$SECONDS
  log "${name}: importing the OCI layout ${dir} as ${full}"
  tar -C "$dir" -cf - . | "${CTR[@]}" images import - >/dev/null
  # containerd keeps ref.name as given; the CRI resolves the normalized name.
  if [[ "$full" != "$name" ]]; then
    "${CTR[@]}" images tag --force "$name" "$full" >/dev/null
    "${CTR[@]}" images rm "$name" >/dev/null
  fi
  have="$(crictl inspecti -o go-template --template '{{.status.id}}' "$full" 2>/dev/null || true)"
  [[ "$have" == "$config" ]] || die "${name}: after import containerd reports image id '${have}', expected ${config}"
  log "${name}: imported in $((SECONDS - t0)) s"
  exit 0
fi
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
