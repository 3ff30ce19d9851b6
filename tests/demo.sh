#!/usr/bin/env bash
# The local demo: start the control plane, helm-install the chart, run the
# operator with exactly the chart's ServiceAccount rights, apply a
# BrowserSession and print how to drive and view it.
#
#   bash tests/demo.sh          # start (idempotent); leaves everything running
#   bash tests/demo.sh --stop   # stop the operator and the control plane
#
# This tier has no kubelet yet (the single-node tier with containerd comes
# with the end-to-end issue), so the session stays Pending with every child
# created and its status showing the exact commands a viewer and an agent run.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
STATE="${PLAYPEN_CLUSTER_DIR:-/tmp/playpen-cluster}"
PIDFILE="${STATE}/run/playpen-operator.pid"
NS=playpen-demo

log() { printf '[%s demo] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

stop_operator() {
  if [[ -f "$PIDFILE" ]] && kill -0 "$(<"$PIDFILE")" 2>/dev/null; then
    kill "$(<"$PIDFILE")" && log "operator stopped"
  fi
  rm -f "$PIDFILE"
}

if [[ "${1:-}" == "--stop" ]]; then
  stop_operator
  tests/cluster/stop.sh
  exit 0
fi

log "starting the control plane (first run builds it from the Go module proxy)"
KUBECONFIG="$(tests/cluster/start.sh | tail -n 1)"
export KUBECONFIG
. tests/cluster/lib.sh
KUBECTL="${K8S_BIN}/kubectl"

log "building playpen-operator"
cargo build --release --locked -p playpen-operator
OPERATOR=target/release/playpen-operator

log "helm install playpen charts/playpen (CRD, RBAC, roles; the Deployment waits for a node)"
HELM="$(tests/cluster/build-helm.sh | tail -n 1)"
"$HELM" --kubeconfig "$KUBECONFIG" upgrade --install playpen charts/playpen -n playpen-system \
  --create-namespace --take-ownership >/dev/null
"$KUBECTL" wait --for=condition=Established crd/browsersessions.playpen.dev --timeout=30s >/dev/null

# This tier has no kubelet to run the chart's Deployment, so the operator
# runs here, impersonating the chart's ServiceAccount: exactly its rights.
OPERATOR_KUBECONFIG="${STATE}/operator.kubeconfig"
sed 's/^    client-key-data: \(.*\)$/    client-key-data: \1\n    as: system:serviceaccount:playpen-system:playpen\n    as-groups: [system:serviceaccounts, "system:serviceaccounts:playpen-system", system:authenticated]/' \
  "$KUBECONFIG" >"$OPERATOR_KUBECONFIG"

stop_operator
mkdir -p "$(dirname "$PIDFILE")"
KUBECONFIG="$OPERATOR_KUBECONFIG" PLAYPEN_HTTP_ADDR=127.0.0.1:18080 POD_NAMESPACE=playpen-system \
  PLAYPEN_LEASE_NAME=playpen POD_NAME=demo-operator nohup "$OPERATOR" run --leader-election --log-text >"${STATE}/logs/playpen-operator.log" 2>&1 &
echo $! >"$PIDFILE"
log "operator running (pid $(<"$PIDFILE"), log ${STATE}/logs/playpen-operator.log, metrics http://127.0.0.1:18080/metrics)"

"$KUBECTL" create namespace "$NS" --dry-run=client -o yaml | "$KUBECTL" apply -f - >/dev/null
for _ in $(seq 1 60); do "$KUBECTL" -n "$NS" get serviceaccount default >/dev/null 2>&1 && break; sleep 0.5; done
"$KUBECTL" -n "$NS" apply -f examples/minimal.yaml >/dev/null
for _ in $(seq 1 60); do
  [[ -n "$("$KUBECTL" -n "$NS" get bs demo -o jsonpath='{.status.podName}' 2>/dev/null)" ]] && break
  sleep 0.5
done

echo
"$KUBECTL" -n "$NS" get browsersessions -o wide
echo
"$KUBECTL" -n "$NS" get pods,secrets,configmaps,services,networkpolicies -l playpen.dev/session=demo
echo
echo "Session name:    $("$KUBECTL" -n "$NS" get bs demo -o jsonpath='{.status.sessionName}')"
echo "Socket dir:      /var/lib/playpen/pw/$("$KUBECTL" -n "$NS" get bs demo -o jsonpath='{.status.socketNamespace}')/s"
echo "View it:         $("$KUBECTL" -n "$NS" get bs demo -o jsonpath='{.status.viewer.command}')   then open http://127.0.0.1:9323/"
echo "Drive it:        $("$KUBECTL" -n "$NS" get bs demo -o jsonpath='{.status.execHint}')"
echo
echo "kubectl:         export KUBECONFIG=${KUBECONFIG}; ${KUBECTL} -n ${NS} describe bs demo"
echo "Stop everything: bash tests/demo.sh --stop"
