#!/usr/bin/env bash
# Smoke-test the running control plane (start.sh must have been run):
#   /readyz, namespaces, ownerReference garbage collection by kube-controller-manager,
#   and that none of etcd / kube-apiserver / kube-controller-manager listens on a
#   wildcard address (loopback only; in node mode the apiserver is on the node IP).
#   Uses a throwaway namespace; exits non-zero on failure.
set -euo pipefail
# shellcheck source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

GC_TIMEOUT="${PLAYPEN_GC_TIMEOUT:-30}"
k() { "${K8S_BIN}/kubectl" --kubeconfig "$ADMIN_KUBECONFIG" --request-timeout=10s "$@"; }

[[ "$(k get --raw /readyz)" == ok ]] || die "/readyz is not ok"
log "/readyz ok; server $(k version -o json | sed -n 's/.*"gitVersion": "\(v[^"]*\)".*/\1/p' | tail -1)"
k get namespace default kube-system >/dev/null

ns="playpen-smoke-$$-${RANDOM}"
trap 'k delete namespace "$ns" --wait=false >/dev/null 2>&1 || true' EXIT
k create namespace "$ns" >/dev/null
k -n "$ns" create configmap owner --from-literal=role=owner >/dev/null
uid="$(k -n "$ns" get configmap owner -o jsonpath='{.metadata.uid}')"
k -n "$ns" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: ConfigMap
metadata:
  name: dependant
  ownerReferences:
  - apiVersion: v1
    kind: ConfigMap
    name: owner
    uid: "${uid}"
data:
  role: "dependant"
EOF
k -n "$ns" delete configmap owner >/dev/null
t0=$SECONDS
while k -n "$ns" get configmap dependant >/dev/null 2>&1; do
  ((SECONDS - t0 < GC_TIMEOUT)) || die "dependant ConfigMap not garbage-collected within ${GC_TIMEOUT} s"
  sleep 0.5
done
log "ownerReference GC ok: dependant deleted $((SECONDS - t0)) s after its owner"

# In node mode (start-node.sh) the apiserver listens on the node IP, which lives on a
# local-only interface; anything else must be loopback.
wild="$(ss -Hltnp | grep -E '"(etcd|kube-apiserver|kube-controller)"' |
  awk -v ip="$NODE_IP" '$4 !~ /^(127\.[0-9.]+|\[::1\]):[0-9]+$/ && index($4, ip ":") != 1' || true)"
[[ -z "$wild" ]] || die "non-loopback listeners: ${wild}"
log "listeners: all on loopback$(ss -Hltn | grep -qF " ${NODE_IP}:${APISERVER_PORT} " && echo " (apiserver on the node IP ${NODE_IP})")"
log "smoke test passed"
